#pragma once
// A simulated sheet-of-light sensor with a real geometry: a pinhole camera
// with Brown-Conrady lens distortion looks at a laser plane at a
// triangulation angle; a scene (a calibration target, or parts on a conveyor)
// cuts the plane; the stripe is rendered where the camera sees the lit
// cross-section. Truth is in millimetres (laser plane) and in pixels (the
// stripe's (u, v) per column), so a calibration and the parts it measures can
// both be checked against it (docs/calibration.md).
//
// World frame (mm, right-handed): the laser plane is Y = 0 at every frame
// (the scene moves along +Y, one frame per motion step); X across the plane,
// Z up. The camera sits at Y < 0, above, its optical axis at
// `triangulation_deg` from the laser's -Z direction, and images X along its
// columns. Image points are full-sensor pixels, centres at integers.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "acquisition/source.h"
#include "core/sheet_of_light.h"

namespace stripeline {

struct TriangulationGeometry {
  int sensor_width = 2048, sensor_height = 1088;
  double focal_px = 5120.0;                   // fx = fy: a 28 mm lens on 5.5 um pixels
  double cx = 1027.3, cy = 546.8;             // principal point, px
  // Lens distortion in the PROJECTION direction (ideal -> distorted, in
  // focal-normalised coordinates, OpenCV's convention): truth, not the model.
  double k1 = -0.12, k2 = 0.25, k3 = 0.0, p1 = 2.0e-4, p2 = -1.5e-4;
  double triangulation_deg = 30.0;            // optical axis vs the laser direction (-Z)
  double working_distance_mm = 250.0;         // camera centre to the reference point, along the axis
  double reference_x_mm = 0.0, reference_z_mm = 12.5;  // where the axis meets the laser plane
  double roll_deg = 0.4;                      // camera turned about its axis (mounting error)
  double yaw_deg = 0.6;                       // optical axis turned about Z (mounting error)
  double laser_x_mm = 0.0, laser_z_mm = 300.0;  // the laser fan's origin, in the laser plane

  // Throws ConfigError naming the key.
  void validate() const;
};

// The camera of a geometry: projection and exact back-projection.
class TriangulationCamera {
 public:
  explicit TriangulationCamera(const TriangulationGeometry& g);
  const TriangulationGeometry& geometry() const { return g_; }
  // World point -> image point (full-sensor px). False when behind the camera.
  bool project(double x, double y, double z, double& u, double& v) const;
  // Image point -> laser-plane point (Y = 0), inverting the distortion to
  // 1e-12 (Newton). False when the ray misses the plane.
  bool back_project(double u, double v, double& X, double& Z) const;
  void centre(double c[3]) const;

 private:
  TriangulationGeometry g_;
  double r_[9];   // world -> camera rotation, row-major
  double c_[3];   // camera centre, world mm
};

// What the laser plane cuts at a frame: a height field near the plane.
class TriangulationScene {
 public:
  virtual ~TriangulationScene() = default;
  // Height Z (mm) of the surface at X, dy mm from the laser plane along the
  // motion (dy != 0 only for the camera's occlusion test). NaN = no surface.
  virtual double height(std::uint64_t frame, double x, double dy) const = 0;
  // X positions (sorted) where the cross-section (dy = 0) jumps or ends, so
  // the renderer never interpolates across them.
  virtual void breaks(std::uint64_t frame, std::vector<double>& xs) const = 0;
  // Highest surface point near the plane: bounds the occlusion tests.
  virtual double top(std::uint64_t frame) const = 0;
  virtual std::string describe() const = 0;
};

struct TriangulationScannerConfig {
  TriangulationGeometry geometry;
  SensorRoi roi{0, 428, 2048, 256};       // the frames are this window of the sensor: Z about -1..24 mm
  std::uint64_t frames = 60;              // 0 = endless
  PixelFormat format = PixelFormat::Mono8;
  std::uint64_t seed = 1;
  double beam_sigma = 1.4;                // stripe half-width across the line, px
  double peak = 180.0, peak_variation = 0.35, background = 20.0, noise = 3.0, speckle = 0.15;
  double frame_rate = 10000.0;
  std::int64_t encoder_step = 4;
  double x_min_mm = -80.0, x_max_mm = 80.0;  // part of the laser plane searched for the stripe

  void validate() const;
};

// Where the stripe truly is in each column of a frame's ROI.
struct StripeTruth {
  std::vector<double> u, v;     // full-sensor px; NaN where no single visible stripe
  std::vector<double> x, z;     // the lit surface point, laser-plane mm
  int hidden = 0;               // columns whose only stripe points are hidden or unlit
  int multiple = 0;             // columns with two or more visible stripe points (all rendered; no truth)
  double row(int column, int roi_y) const { return v[static_cast<std::size_t>(column)] - roi_y; }
};

class TriangulationScanner final : public FrameSource {
 public:
  TriangulationScanner(TriangulationScannerConfig config, std::shared_ptr<const TriangulationScene> scene);
  BatchLayout frame_layout() const override;
  bool fill(Batch& batch) override;
  std::optional<std::uint64_t> total_frames() const override;
  std::string describe() const override;

  // Pure functions of (config, scene, frame).
  StripeTruth truth(std::uint64_t frame) const;
  void render(std::uint64_t frame, std::byte* dst) const;

  const TriangulationScannerConfig& config() const { return config_; }
  const TriangulationCamera& camera() const { return camera_; }
  const TriangulationScene& scene() const { return *scene_; }
  void rewind() { next_ = 0; }

 private:
  struct StripePoint {
    int column;
    double u, v, x, z, slope;  // slope: dv/du of the stripe in the image
  };
  // Every visible, lit stripe point of a frame, by column.
  void stripe_points(std::uint64_t frame, std::vector<StripePoint>& visible, int& hidden) const;

  TriangulationScannerConfig config_;
  std::shared_ptr<const TriangulationScene> scene_;
  TriangulationCamera camera_;
  std::uint64_t next_ = 0;
};

}  // namespace stripeline
