#include "tools/report.h"

#include <unistd.h>

#include <cstdio>

#include <nlohmann/json.hpp>

#include "io/atomic_file.h"

namespace stripeline::tools {

ProgressBar::ProgressBar(std::optional<std::uint64_t> total, bool enabled)
    : total_(total), active_(enabled && ::isatty(STDERR_FILENO) == 1) {}

void ProgressBar::update(const PipelineStats& s) {
  if (!active_ || s.seconds - last_draw_ < 0.1) return;
  last_draw_ = s.seconds;
  if (total_ && *total_ > 0) {
    const double frac = static_cast<double>(s.frames) / static_cast<double>(*total_);
    const int filled = static_cast<int>(frac * 30.0);
    std::fprintf(stderr, "\r[%.*s%*s] %5.1f%%  %llu/%llu frames  %.0f profiles/s ", filled, "##############################",
                 30 - filled, "", frac * 100.0, static_cast<unsigned long long>(s.frames), static_cast<unsigned long long>(*total_),
                 s.profiles_per_s());
  } else {
    std::fprintf(stderr, "\r%llu frames  %.0f profiles/s ", static_cast<unsigned long long>(s.frames), s.profiles_per_s());
  }
  std::fflush(stderr);
}

void ProgressBar::done() {
  if (active_ && last_draw_ >= 0) std::fprintf(stderr, "\r%*s\r", 78, "");
}

std::string summary_line(const RunReport& r) {
  const auto& s = r.stats;
  char buf[512];
  std::snprintf(buf, sizeof buf, "frames %llu, profiles %llu, points %llu, %.1f MB/s, %.0f profiles/s (%s backend, %.3f s)",
                static_cast<unsigned long long>(s.frames), static_cast<unsigned long long>(s.profiles),
                static_cast<unsigned long long>(s.points), s.mb_per_s(), s.profiles_per_s(), to_string(s.backend), s.seconds);
  std::string line = buf;
  if (s.ambient_frames > 0) line += ", " + std::to_string(s.ambient_frames) + " laser-off frames consumed";
  return line;
}

std::string acquisition_line(const AcquisitionCounters& a) {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "camera: %llu frames received whole, %llu lost (gap %llu, incomplete %llu, timeout %llu, failed %llu; %llu beyond "
                "gap_fill_limit, not inserted); %llu arrived late; %llu driver underruns; batches %llu full, %llu flushed by timeout; "
                "%s path, %llu bytes copied",
                static_cast<unsigned long long>(a.frames_complete), static_cast<unsigned long long>(a.lost_total()),
                static_cast<unsigned long long>(a.lost_gap), static_cast<unsigned long long>(a.lost_incomplete),
                static_cast<unsigned long long>(a.lost_timeout), static_cast<unsigned long long>(a.lost_failed),
                static_cast<unsigned long long>(a.gap_not_inserted), static_cast<unsigned long long>(a.arrived_late),
                static_cast<unsigned long long>(a.underruns),
                static_cast<unsigned long long>(a.batches_full), static_cast<unsigned long long>(a.batches_flushed), to_string(a.path),
                static_cast<unsigned long long>(a.bytes_copied));
  return buf;
}


void write_summary_json(const std::filesystem::path& path, const RunReport& r) {
  const auto& s = r.stats;
  const double columns = static_cast<double>(s.profiles) * r.width;
  nlohmann::ordered_json j = {{"command", r.command},
                              {"source", r.source},
                              {"backend", to_string(s.backend)},
                              {"width", r.width},
                              {"frames", s.frames},
                              {"profiles", s.profiles},
                              {"points", s.points},
                              {"points_per_column", columns > 0 ? s.points / columns : 0.0},
                              {"overflow_points", s.overflow},
                              {"batches", s.batches},
                              {"seconds", s.seconds},
                              {"mb_per_s", s.mb_per_s()},
                              {"profiles_per_s", s.profiles_per_s()},
                              {"compute_ms", s.compute_ms},
                              {"cuda_startup_ms", s.cuda_startup_ms},
                              {"pinned_buffers", s.pinned}};
  if (r.acquisition) {
    const auto& a = *r.acquisition;
    j["acquisition"] = {{"frames_complete", a.frames_complete}, {"lost_total", a.lost_total()},
                        {"lost_gap", a.lost_gap},                {"lost_incomplete", a.lost_incomplete},
                        {"lost_timeout", a.lost_timeout},        {"lost_failed", a.lost_failed},
                        {"gap_not_inserted", a.gap_not_inserted}, {"arrived_late", a.arrived_late},
                        {"underruns", a.underruns},              {"batches_full", a.batches_full},
                        {"batches_flushed", a.batches_flushed},
                        {"path", to_string(a.path)},             {"bytes_copied", a.bytes_copied}};
  }
  // Units and the calibration's identity (docs/calibration.md, report keys).
  if (const AppliedCalibration* c = r.calibration.get()) {
    j["unit"] = "mm";
    j["calibration"] = {{"model", c->model.kind == SheetOfLightModel::Kind::Linear ? "linear" : "sheet-of-light"},
                        {"id", c->id},
                        {"file", c->file},
                        {"file_fnv1a", c->file_sha},
                        {"y_step_mm", c->model.y_step},
                        {"y_source", c->model.y_from_encoder ? "encoder" : "frame"},
                        {"roi_offset", {c->roi_x, c->roi_y}}};
  } else {
    j["unit"] = r.linear.unit();
    const LinearCalibration& l = r.linear;
    if (l.enabled)
      j["calibration"] = {{"model", "linear-keys"}, {"x_scale", l.x_scale}, {"x_offset", l.x_offset}, {"y_scale", l.y_scale},
                          {"y_offset", l.y_offset},     {"z_scale", l.z_scale},   {"z_offset", l.z_offset},
                          {"y_from_encoder", l.y_from_encoder}};
    else
      j["calibration"] = {{"model", "none"}};
  }
  j["outputs"] = nlohmann::ordered_json::array();
  for (const auto& o : r.outputs) j["outputs"].push_back(o.string());
  j["height_bits"] = r.height_bits;
  j["rounding"] = "half up";
  j["frame_height"] = r.frame_height;
  j["method"] = r.method;
  if (!r.interrupted.empty()) j["stopped_by"] = r.interrupted;  // the files hold what was acquired before it
  j["software"] = "stripeline " STRIPELINE_VERSION;
  io::write_file_atomically(path, j.dump(2) + "\n");
}

}  // namespace stripeline::tools
