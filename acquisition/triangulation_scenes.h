#pragma once
// Scenes for the simulated sheet-of-light sensor (triangulation_scanner.h):
//  - TargetScene: a calibration target (a polyline cross-section, extruded
//    along the motion) held in the laser plane at one random in-plane pose per
//    frame, moved through the measuring range and slightly tilted; some frames
//    partly out of view, some corrupted (not the target alone).
//  - PartsScene: parts on a flat conveyor (Z = 0) moving along +Y: gauge
//    blocks, spheres, tilted planes, with their truth in millimetres.
//  - ReversedScene: any scene as a head mounted the other way sees it.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "acquisition/triangulation_scanner.h"

namespace stripeline {

// The target's origin at (x, z) in the laser plane, its x axis turned by
// angle_deg (counter-clockwise, toward +Z).
struct TargetPose {
  double x = 0.0, z = 0.0, angle_deg = 0.0;
};

enum class TargetFrameKind : std::uint8_t {
  InView,            // the whole target inside the ROI
  PartlyOutOfView,   // the target runs off the ROI's left or right side
  DoubleExposure,    // corrupted: the target at two poses in one frame
  Foreign,           // corrupted: a smooth curve that is not the target
};
const char* to_string(TargetFrameKind k);
inline bool is_corrupted(TargetFrameKind k) { return k == TargetFrameKind::DoubleExposure || k == TargetFrameKind::Foreign; }

struct TargetSceneConfig {
  std::vector<PlanePoint> profile;   // (x, z) mm, x increasing (a CalibrationTarget's profile)
  std::uint64_t frames = 60;             // poses to draw (frames beyond repeat them)
  std::uint64_t seed = 1;
  double z_min_mm = 0.0, z_max_mm = 22.0;  // every vertex of an in-view pose within these heights
  double max_tilt_deg = 5.0;
  double margin_px = 12.0;                 // in-view poses keep this far inside the ROI
  double out_of_view_fraction = 0.0;       // of the frames (exact count, rounded)
  double corrupted_fraction = 0.0;         // of the frames (exact count, rounded; half double exposures, half foreign)
  bool first_flat = true;                  // frame 0 lies flat at z_min (the lowest pose: see docs/calibration.md)
};

class TargetScene final : public TriangulationScene {
 public:
  // camera and roi: to keep poses inside (or partly outside) the view.
  TargetScene(TargetSceneConfig config, const TriangulationCamera& camera, SensorRoi roi);
  double height(std::uint64_t frame, double x, double dy) const override;
  void breaks(std::uint64_t frame, std::vector<double>& xs) const override;
  double top(std::uint64_t frame) const override;
  std::string describe() const override;

  TargetFrameKind kind(std::uint64_t frame) const;
  TargetPose pose(std::uint64_t frame) const;          // the target's pose (the first one of a double exposure)
  // The target's vertices at a pose, laser-plane mm.
  std::vector<PlanePoint> placed(const TargetPose& pose) const;
  const TargetSceneConfig& config() const { return config_; }

 private:
  struct Frame {
    TargetFrameKind kind = TargetFrameKind::InView;
    TargetPose pose, second;                 // second: double exposure
    double foreign_z = 0, foreign_amp = 0, foreign_period = 1, foreign_phase = 0, foreign_x0 = 0, foreign_x1 = 0;
    std::vector<PlanePoint> a, b;        // placed vertices
  };
  const Frame& frame_of(std::uint64_t frame) const;
  static double polyline_height(const std::vector<PlanePoint>& v, double x);

  TargetSceneConfig config_;
  std::vector<Frame> frames_;                // one per pose, drawn at construction
};

struct GaugeBlock {
  double x0, x1, y0, y1;   // footprint, mm
  double height;           // top face above the conveyor, mm
  // Its X sides lean along Y: at Y, the block spans [x0, x1] + skew (Y - y0)
  // (a parallelogram; 0 = a rectangle). A small skew lets the sides cross
  // the sensor's columns at every phase.
  double skew = 0.0;
};
struct SpherePart {
  double x, y, z;          // centre, mm (z < radius: a ball sitting in the conveyor's plate)
  double radius;
};
// A tilted plane z = slope_x (x - foot_x) + slope_y (y - foot_y) where it is
// above the conveyor, inside its footprint, capped at `top`. Its foot line
// (where it meets the conveyor) passes through (foot_x, foot_y).
struct TiltedPlane {
  double x0, x1, y0, y1;
  double foot_x, foot_y;
  double slope_x, slope_y;
  double top;
};

struct PartsSceneConfig {
  double y_start_mm = 0.0;  // Y of the laser plane at frame 0, in the parts' frame
  double y_step_mm = 0.1;   // motion per frame
  std::vector<GaugeBlock> blocks;
  std::vector<SpherePart> spheres;
  std::vector<TiltedPlane> planes;
};

class PartsScene final : public TriangulationScene {
 public:
  explicit PartsScene(PartsSceneConfig config);
  double height(std::uint64_t frame, double x, double dy) const override;
  void breaks(std::uint64_t frame, std::vector<double>& xs) const override;
  double top(std::uint64_t frame) const override;
  std::string describe() const override;
  // Y of the laser plane at a frame, in the parts' frame.
  double y_of(std::uint64_t frame) const { return config_.y_start_mm + static_cast<double>(frame) * config_.y_step_mm; }
  // Height of the scene at a point of the parts' frame.
  double height_at(double x, double y) const;
  const PartsSceneConfig& config() const { return config_; }

 private:
  PartsSceneConfig config_;
};

// A scene as a second head mounted the other way sees it: the head turned
// 180 degrees about Z over the same laser plane (the "reverse" or opposite
// layout of two heads facing each other, docs/measure.md "Two heads facing
// each other"), its X origin at `x_origin_mm` of the inner scene's X. In the
// head's own frame (triangulation_scanner.h: camera at Y < 0, X along its
// columns) the world's X runs the other way and so does the motion:
//   height(frame, x, dy) = inner.height(frame, x_origin_mm - x, -dy),
// breaks mirrored (x_origin_mm - x, sorted). So its camera looks at the lit
// section from the other side of the laser plane: what one head's occlusion
// hides, the other sees. A point the head sees at its own (x, z) is the inner
// scene's (x_origin_mm - x, z); its frames are the inner scene's frames (one
// encoder for both heads).
class ReversedScene final : public TriangulationScene {
 public:
  explicit ReversedScene(std::shared_ptr<const TriangulationScene> inner, double x_origin_mm = 0.0);
  double height(std::uint64_t frame, double x, double dy) const override;
  void breaks(std::uint64_t frame, std::vector<double>& xs) const override;
  double top(std::uint64_t frame) const override { return inner_->top(frame); }
  std::string describe() const override;
  // The inner scene's X of this head's X (its own inverse).
  double inner_x(double x) const { return x_origin_mm_ - x; }
  const TriangulationScene& inner() const { return *inner_; }

 private:
  std::shared_ptr<const TriangulationScene> inner_;
  double x_origin_mm_;
};

// The named parts scenes of `stripeline synth --scene NAME` (docs/measure.md,
// "Synthetic parts"): gauge, sphere-ramp (the calibration's acceptance
// parts, long along Y) and the finite parts that part detection cuts out:
// gauge-blocks, sphere, tilted-plane, groove, panels, conveyor (50 blocks at
// random spacing drawn from `seed`). `frames`: enough to scan the scene.
struct PartsPreset {
  PartsSceneConfig config;
  std::uint64_t frames = 40;
};
bool is_parts_preset(const std::string& name);
const char* parts_preset_names();  // "gauge, sphere-ramp, ..." for messages
// ConfigError for an unknown name.
PartsPreset parts_preset(const std::string& name, std::uint64_t seed = 1);

}  // namespace stripeline
