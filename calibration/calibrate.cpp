#include "calibration/calibrate.h"

#include <cmath>

#include "acquisition/source.h"

namespace stripeline {

namespace {

// NaN (no standard deviation) as JSON null.
nlohmann::json number_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

}  // namespace

CalibrationFile calibration_file_from_fit(const CalibrationFit& fit, const CalibrationTarget& target, const CalibrateOptions& o) {
  CalibrationFile f;
  f.model = fit.model;
  f.model.y_offset = o.y_offset_mm;
  f.model.y_from_encoder = o.y_from_encoder;
  f.model.skew_about_x_deg = o.skew_about_x_deg;
  f.model.skew_about_z_deg = o.skew_about_z_deg;
  f.y_step_mm = o.y_step_mm;
  f.y_per_tick_mm = o.y_per_tick_mm;
  f.sync_motion();
  f.sensor_width = fit.sensor_width;
  f.sensor_height = fit.sensor_height;
  f.roi = fit.roi;
  f.fit.present = true;
  f.fit.target = target.name;
  f.fit.residual_rms_px = fit.residual_rms_px;
  f.fit.residual_max_px = fit.residual_max_px;
  f.fit.residual_rms_mm = fit.residual_rms_mm;
  f.fit.residual_max_mm = fit.residual_max_mm;
  f.fit.frames_used = fit.poses.size();
  f.fit.frames_rejected = fit.rejected.size();
  f.fit.points_used = fit.points_used;
  f.fit.coverage = fit.coverage.covered_fraction;
  f.id = model_id(f.model);
  return f;
}

nlohmann::json calibration_report(const CalibrationFit& fit, const CalibrationTarget& target, const CalibrationFile& file,
                                  const std::string& recording) {
  using nlohmann::json;
  json r;
  r["format"] = "stripeline-calibration-report-1";
  r["recording"] = recording;
  r["target"] = {{"name", target.name},
                 {"file", target.origin},
                 {"vertices", target.profile.size()},
                 {"length_mm", target.length()},
                 {"height_mm", target.height()}};
  r["calibration"] = {{"id", file.id}, {"model", "sheet-of-light"}, {"unit", "mm"}};
  r["sensor"] = {{"width", fit.sensor_width},
                 {"height", fit.sensor_height},
                 {"roi", {fit.roi.x, fit.roi.y, fit.roi.width, fit.roi.height}}};
  r["residual_rms_px"] = fit.residual_rms_px;
  r["residual_max_px"] = fit.residual_max_px;
  r["residual_rms_mm"] = fit.residual_rms_mm;
  r["residual_max_mm"] = fit.residual_max_mm;
  r["frames"] = {{"total", fit.frames_total}, {"used", fit.poses.size()}, {"rejected", fit.rejected.size()}};
  json rejected = json::array();
  for (const auto& f : fit.rejected) rejected.push_back({{"frame", f.frame}, {"reason", f.reason}, {"detail", f.detail}});
  r["frames_rejected"] = rejected;
  json excluded = json::object();
  for (const auto& [k, v] : fit.points_excluded) excluded[k] = v;
  r["points"] = {{"used", fit.points_used}, {"excluded", excluded}};
  json poses = json::array();
  for (const auto& p : fit.poses)
    poses.push_back({{"frame", p.frame},
                     {"x_mm", p.x_mm},
                     {"z_mm", p.z_mm},
                     {"angle_deg", p.angle_deg},
                     {"whole", p.whole},
                     {"points", p.points},
                     {"rms_px", p.rms_px},
                     {"max_px", p.max_px},
                     {"rms_mm", p.rms_mm}});
  r["per_pose"] = poses;
  const Coverage& c = fit.coverage;
  json counts = json::array();
  for (int v = 0; v < c.cells_v; ++v) {
    json row = json::array();
    for (int u = 0; u < c.cells_u; ++u) row.push_back(c.counts[static_cast<std::size_t>(v * c.cells_u + u)]);
    counts.push_back(row);
  }
  r["coverage"] = {{"cells", {c.cells_u, c.cells_v}},
                   {"counts", counts},
                   {"covered_fraction", c.covered_fraction},
                   {"u_range", {c.u_min, c.u_max}},
                   {"v_range", {c.v_min, c.v_max}},
                   {"z_range_mm", {c.z_min_mm, c.z_max_mm}}};
  json params = json::object();
  for (const auto& p : fit.parameters) params[p.name] = {{"value", p.value}, {"std", number_or_null(p.std)}};
  r["parameters"] = params;
  r["distortion"] = {{"direction", "correction"}, {"centre", {fit.model.cu, fit.model.cv}}, {"scale", fit.model.scale}};
  r["gauge"] = {{"reference_frame", fit.reference_frame},
                {"rule", "the lowest pose's base line is Z = 0 and horizontal; X = 0 where the sensor's centre column meets Z = 0"}};
  r["orientation"] = fit.orientation > 0 ? "v grows with Z" : "v shrinks as Z grows";
  r["warnings"] = fit.warnings;
  r["rounds"] = fit.rounds;
  r["fit_seconds"] = fit.seconds;
  return r;
}

CalibrationRun calibrate(FrameSource& source, const CalibrationTarget& target, const CalibrateOptions& options) {
  CalibrationRun run;
  const ObservationSet obs = extract_observations(source, options.chain, options.roi_x, options.roi_y);
  run.fit = fit_sheet_of_light(obs, target, options.fit);
  run.file = calibration_file_from_fit(run.fit, target, options);
  run.report = calibration_report(run.fit, target, run.file, options.fit.origin);
  run.report["pixel_bits"] = obs.pixel_bits.bits;  // the stripe's extraction (docs/data-model.md, "Significant bits")
  run.report["pixel_bits_origin"] = to_string(obs.pixel_bits.origin);
  return run;
}

}  // namespace stripeline
