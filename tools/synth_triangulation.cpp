#include "tools/synth_triangulation.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <memory>
#include <vector>

#include "acquisition/triangulation_scanner.h"
#include "acquisition/triangulation_scenes.h"
#include "calibration/target.h"
#include "core/errors.h"
#include "io/atomic_file.h"
#include "io/recording.h"

namespace stripeline::tools {

namespace {

nlohmann::json parts_json(const PartsSceneConfig& c) {
  nlohmann::json j = {{"y_start_mm", c.y_start_mm}, {"y_step_mm", c.y_step_mm}};
  j["gauge_blocks"] = nlohmann::json::array();
  for (const auto& b : c.blocks) j["gauge_blocks"].push_back({{"x0", b.x0}, {"x1", b.x1}, {"y0", b.y0}, {"y1", b.y1}, {"height", b.height}, {"skew", b.skew}});
  j["spheres"] = nlohmann::json::array();
  for (const auto& s : c.spheres) j["spheres"].push_back({{"centre", {s.x, s.y, s.z}}, {"radius", s.radius}});
  j["planes"] = nlohmann::json::array();
  for (const auto& p : c.planes)
    j["planes"].push_back({{"x0", p.x0}, {"x1", p.x1}, {"y0", p.y0}, {"y1", p.y1}, {"foot", {p.foot_x, p.foot_y}},
                           {"slope", {p.slope_x, p.slope_y}}, {"top", p.top}});
  return j;
}

}  // namespace

int synth_triangulation(const TriangulationSynthOptions& given) {
  TriangulationSynthOptions o = given;
  if (o.scene != "target" && !is_parts_preset(o.scene))
    throw InputError("--scene '" + o.scene + "' is not known (expected target, " + parts_preset_names() + ")");
  if (o.frames == 0) o.frames = o.scene == "target" ? 40 : parts_preset(o.scene, o.seed).frames;  // the scene's own
  TriangulationScannerConfig sc;
  sc.frames = o.frames;
  sc.seed = o.seed;
  char extra = 0;
  if (std::sscanf(o.roi.c_str(), "%d,%d,%d,%d%c", &sc.roi.x, &sc.roi.y, &sc.roi.width, &sc.roi.height, &extra) != 4)
    throw InputError("--roi '" + o.roi + "' is not understood (expected X,Y,W,H in sensor pixels)");
  sc.validate();
  TriangulationCamera camera(sc.geometry);
  nlohmann::json truth = {{"scene", o.scene},
                          {"sensor", {sc.geometry.sensor_width, sc.geometry.sensor_height}},
                          {"roi", {sc.roi.x, sc.roi.y, sc.roi.width, sc.roi.height}},
                          {"frames", o.frames},
                          {"unit", "mm"}};
  // Where the sensor's centre column meets Z = 0: the calibration's X origin
  // (docs/calibration.md), so truth X - x_origin is the calibrated X.
  {
    const double uc = 0.5 * (sc.geometry.sensor_width - 1);
    double v = sc.geometry.cy, X = 0, Z = 0;
    for (int i = 0; i < 60; ++i) {  // Newton along the centre column for Z = 0
      double Xa, Za, Xb, Zb;
      camera.back_project(uc, v, X, Z);
      camera.back_project(uc, v - 0.5, Xa, Za);
      camera.back_project(uc, v + 0.5, Xb, Zb);
      v -= Z / (Zb - Za);
    }
    camera.back_project(uc, v, X, Z);
    truth["x_origin_mm"] = X;
  }
  std::shared_ptr<const TriangulationScene> scene;
  if (o.scene == "target") {
    if (o.target.empty()) throw InputError("--scene target needs --target FILE (configs/targets/)");
    const CalibrationTarget t = load_target(o.target);
    TargetSceneConfig tc;
    tc.profile = t.profile;
    tc.frames = o.frames;
    tc.seed = o.seed;
    tc.out_of_view_fraction = o.out_of_view;
    tc.corrupted_fraction = o.corrupted;
    auto ts = std::make_shared<TargetScene>(tc, camera, sc.roi);
    truth["target"] = t.name;
    truth["poses"] = nlohmann::json::array();
    for (std::uint64_t f = 0; f < o.frames; ++f) {
      const TargetPose p = ts->pose(f);
      truth["poses"].push_back({{"frame", f}, {"kind", to_string(ts->kind(f))}, {"x", p.x}, {"z", p.z}, {"angle_deg", p.angle_deg}});
    }
    scene = ts;
  } else {
    const PartsSceneConfig pc = parts_preset(o.scene, o.seed).config;
    truth["parts"] = parts_json(pc);
    scene = std::make_shared<PartsScene>(pc);
  }
  TriangulationScanner scanner(sc, scene);
  const BatchLayout layout = scanner.frame_layout();
  std::vector<std::byte> image(layout.frame_pixels() * bytes_per_pixel(layout.format) * o.frames);
  for (std::uint64_t f = 0; f < o.frames; ++f) scanner.render(f, image.data() + f * layout.frame_pixels() * bytes_per_pixel(layout.format));
  io::write_recording(o.out, image.data(), layout.width, layout.frame_height, o.frames, layout.format, io::RecordingWriteOptions{});
  std::printf("wrote %s: %llu frames of %dx%d (%s, sensor ROI %d,%d)\n", o.out.c_str(), static_cast<unsigned long long>(o.frames), layout.width,
              layout.frame_height, scene->describe().c_str(), sc.roi.x, sc.roi.y);
  if (!o.truth.empty()) {
    io::write_file_atomically(o.truth, truth.dump(2) + "\n");
    std::printf("wrote %s\n", o.truth.c_str());
  }
  return 0;
}

}  // namespace stripeline::tools
