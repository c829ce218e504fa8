#pragma once
// Several heads in one frame (docs/scale-out.md, "Merging heads"): each
// head's head-to-world rigid transform, the file that keeps them, and the fit
// (`stripeline align`) that finds them from each head's scan of one common
// target whose cross-section is known in the world frame.
//
// The transforms file (TOML, versioned):
//
//   [alignment]
//   format = "stripeline-head-transforms"
//   version = 1
//   target = "align-ridge"        # optional: the target the fit used
//   [[head]]
//   name = "left"
//   rotation = [1.0, 0.0, 0.0,  0.0, 1.0, 0.0,  0.0, 0.0, 1.0]   # row-major 3x3
//   translation = [0.0, 0.0, 0.0]                                # mm
//   residual_rms_mm = 0.004       # optional: what the fit left
//   points = 1890                 # optional: points it used
//
// A head's calibrated point p (X, Y, Z in mm, the PLY's and the stream's,
// docs/wire-format.md) is p_world = R p + t. R must be a rotation
// (orthonormal to 1e-6, determinant +1).
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "calibration/calibration_file.h"
#include "calibration/target.h"
#include "stages/chain.h"

namespace stripeline {

class FrameSource;

inline constexpr int kHeadTransformsVersion = 1;

struct HeadTransform {
  std::string name;
  double r[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};  // row-major
  double t[3] = {0, 0, 0};                    // mm
  double residual_rms_mm = 0.0;               // the fit's (0 and points 0 when written by hand)
  std::uint64_t points = 0;

  // A turn by angle_deg in the laser plane (about Y; +X toward +Z) and a
  // shift (tx, 0, tz): what two coplanar heads differ by.
  static HeadTransform in_plane(std::string name, double angle_deg, double tx, double tz);
  // A head turned 180 degrees about Z, R = diag(-1, -1, 1), no shift: a
  // head facing the other way over the same laser plane (docs/measure.md
  // "Two heads facing each other"): its X and its motion run against the
  // world's.
  static HeadTransform facing_back(std::string name);
  // The in-plane angle of R (about Y, +X toward +Z), degrees.
  double angle_deg() const { return std::atan2(r[6], r[0]) * 57.295779513082320876798; }
  void apply(double x, double y, double z, double& wx, double& wy, double& wz) const {
    wx = r[0] * x + r[1] * y + r[2] * z + t[0];
    wy = r[3] * x + r[4] * y + r[5] * z + t[1];
    wz = r[6] * x + r[7] * y + r[8] * z + t[2];
  }
  // this o other (other first).
  HeadTransform after(const HeadTransform& other) const;
  HeadTransform inverse() const;
};

struct HeadTransforms {
  std::vector<HeadTransform> heads;
  std::string target;  // the fit's target name ("" = none recorded)
  std::string origin;  // file name, for messages
  // nullptr when no head has that name.
  const HeadTransform* find(const std::string& name) const;
};

// Parse and validate. InputError, one line "<origin>: <key>: <problem> (expected ...)".
HeadTransforms parse_head_transforms(const std::string& text, const std::string& origin);
HeadTransforms load_head_transforms(const std::filesystem::path& path);
// Every number at full precision (reads back bit-identical).
std::string format_head_transforms(const HeadTransforms& t);
// Written under a temporary name and renamed when complete.
void save_head_transforms(const std::filesystem::path& path, const HeadTransforms& t);

// --- The fit ----------------------------------------------------------------

struct AlignOptions {
  double search_step_mm = 0.25;     // coarse search of the shift along X
  double search_angle_deg = 6.0;    // coarse search of the turn: +-this, 0.5 degree steps
  int iterations = 30;              // Gauss-Newton refinements (point to polyline)
  double outlier_floor_mm = 0.1;    // points further than max(this, 4 robust sigmas) from the target are not used
  std::size_t min_points = 50;
  // The head faces the other way (turned 180 degrees about Z): its points
  // are fitted mirrored (X -> -X) and the transform is the fit after
  // HeadTransform::facing_back.
  bool reversed = false;
};

struct AlignResult {
  HeadTransform transform;
  double rms_mm = 0, max_mm = 0;  // over the points used
  std::size_t points_used = 0, points_total = 0;
};

// The head's scan of the target: laser-plane points (X, Z) in the head's
// calibrated frame, the target's profile known in the world frame (x
// increasing; beyond its ends the base continues flat at the end vertices'
// heights). Coarse search (turn, shift) on vertical distances, then
// Gauss-Newton on the distance to the polyline with robust trimming. The
// target must show the head a feature that fixes X (a corner in view): a
// head that sees only a flat base is an InputError, as is one whose fit
// leaves more than 0.5 mm RMS. A reversed head (AlignOptions::reversed) is
// fitted on its points mirrored, its transform turned 180 degrees about Z.
AlignResult align_to_target(const std::vector<PlanePoint>& head_points, const CalibrationTarget& target, const std::string& name,
                            const AlignOptions& options = {});

// A recording of the target (extruded along the motion: every frame sees the
// same cross-section) mapped through the head's calibration: per column, the
// median over frames of the calibrated (X, Z) of the primary peak. roi_x,
// roi_y: the recording's ROI offsets on the sensor.
std::vector<PlanePoint> target_scan_points(FrameSource& source, const CalibrationFile& calibration, int roi_x, int roi_y,
                                           const ChainConfig& chain = {});

}  // namespace stripeline
