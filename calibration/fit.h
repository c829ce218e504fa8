#pragma once
// The sheet-of-light fit (docs/calibration.md): from stripe points of a
// known target held at unknown in-plane poses, one pose per frame, find the
// lens distortion and the plane homography of core/sheet_of_light.h.
//
//   1. extract: the default CPU chain finds the stripe; each column's primary
//      peak becomes an image point (u, v) in full-sensor pixels;
//   2. trace: each frame's points are cut into straight pieces whose
//      intersections are the image corners, each with its turn (peak/valley);
//   3. start: frames showing the whole target with all its corners give, from
//      the known distances between corners, an affine start and per-frame
//      poses (closed form), refined to a homography on the corners (Ceres);
//   4. place: every frame, partly out of view or not, is placed on the target
//      by matching its corners (any offset along the target), keeping the
//      placement closest to the target; frames that match nowhere are rejected;
//   5. fit: every point is assigned to its target segment (points near a
//      corner, near the ROI's border or on a face seen edge-on are left out),
//      and Ceres minimises, with a Huber loss, each point's distance to its
//      segment expressed in pixels along the column (px-equivalent) over the
//      poses (x, z, angle), the homography and the distortion; points far off
//      are rejected, frames with too many such points or too large a residual
//      are rejected, and the fit runs again until nothing changes;
//   6. gauge: the in-plane rigid freedom is fixed by the rule "the lowest
//      pose's base line is Z = 0 and horizontal; X = 0 where the sensor's
//      centre column meets Z = 0".
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "calibration/target.h"
#include "core/sheet_of_light.h"
#include "core/significant_bits.h"
#include "stages/chain.h"

namespace stripeline {

class FrameSource;

// One frame's stripe points (primary peak per column), full-sensor pixels.
struct FrameObservation {
  std::uint64_t frame = 0;   // global index in the recording
  bool missing = false;      // the source marked it missing
  std::vector<double> u, v;  // sorted by u
};

struct ObservationSet {
  SensorRoi roi;             // the recording's ROI (x, y from the caller; width, frame height from the source)
  std::vector<FrameObservation> frames;
  SignificantBits pixel_bits{};  // the significant bits the stripe was extracted with (acquisition/pixel_bits.h)
};

// Runs the CPU chain over every frame of the source. roi_x, roi_y: the
// recording's ROI offsets on the sensor.
ObservationSet extract_observations(FrameSource& source, const ChainConfig& chain, int roi_x, int roi_y);

struct FitOptions {
  std::string origin = "recording";  // for messages: the recording's name
  int sensor_width = 0, sensor_height = 0;  // 0: unknown (the ROI's centre becomes the distortion centre)
  double edge_margin_px = 4.0;       // points this close to the ROI's border are not used
  double corner_margin_px = 6.0;     // ... nor this close (in columns) to a target vertex
  double steep_ratio = 0.3;          // ... nor on a segment whose normal is this little along the column
  double huber_px = 0.2;             // Huber loss scale
  double outlier_sigmas = 5.0;       // points beyond this many robust sigmas ...
  double outlier_floor_px = 0.3;     // ... and beyond this many pixels are rejected
  double frame_outlier_fraction = 0.15;  // a frame with more rejected points than this is rejected
  double frame_rms_factor = 4.0;     // a frame whose RMS exceeds this many times the median frame's ...
  double frame_rms_floor_px = 0.2;   // ... and this many pixels is rejected
  double place_tolerance_mm = 0.5;   // a frame whose median distance to the placed target exceeds this is rejected
  int column_step = 1;               // use every n-th column's point in the fit
  int min_frames = 6;                // fewer frames left: the target cannot be fitted
  int min_whole_frames = 3;          // frames showing the whole target needed to start
  bool fit_distortion = true;
  int coverage_cells_u = 16, coverage_cells_v = 8;
  int max_rounds = 8;
};

struct RejectedFrame {
  std::uint64_t frame = 0;
  std::string reason;  // code: missing, too-few-points, no-corners, not-the-target, outliers, residual
  std::string detail;  // one sentence with the figures
};

struct PoseResult {
  std::uint64_t frame = 0;
  double x_mm = 0, z_mm = 0, angle_deg = 0;  // the target's origin and tilt in the final gauge
  bool whole = false;                         // showed the whole target (else partly out of view)
  std::uint64_t points = 0;
  double rms_px = 0, max_px = 0, rms_mm = 0;
};

struct ParameterEstimate {
  std::string name;
  double value = 0, std = 0;  // std: NaN when the covariance could not be computed
};

struct Coverage {
  int cells_u = 0, cells_v = 0;
  std::vector<std::uint64_t> counts;   // [v cell][u cell] points used
  double covered_fraction = 0;         // cells with at least 10 points
  double u_min = 0, u_max = 0, v_min = 0, v_max = 0;  // extent of the points used
  double z_min_mm = 0, z_max_mm = 0;   // heights the poses' points span
};

struct CalibrationFit {
  SheetOfLightModel model;             // unit mm, motion left at its defaults
  SensorRoi roi;                       // the ROI it was made with
  int sensor_width = 0, sensor_height = 0;
  std::uint64_t frames_total = 0;
  std::uint64_t reference_frame = 0;   // the lowest pose: the gauge
  int orientation = 0;                 // +1: v grows with Z, -1: v shrinks as Z grows
  double residual_rms_px = 0, residual_max_px = 0, residual_rms_mm = 0, residual_max_mm = 0;
  std::uint64_t points_used = 0;
  std::map<std::string, std::uint64_t> points_excluded;  // reason -> count
  std::vector<PoseResult> poses;
  std::vector<RejectedFrame> rejected;
  std::vector<ParameterEstimate> parameters;
  Coverage coverage;
  std::vector<std::string> warnings;
  int rounds = 0;
  double seconds = 0;
};

// Throws InputError "<origin>: the target cannot be fitted: ..." when it cannot.
CalibrationFit fit_sheet_of_light(const ObservationSet& observations, const CalibrationTarget& target, const FitOptions& options);

}  // namespace stripeline
