#include "tools/report.h"

#include <cmath>

#include <unistd.h>

#include <cstdio>

#include "core/metadata.h"
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

namespace {
std::string bound_text(double us) { return std::isinf(us) ? std::string("inf") : std::to_string(static_cast<long long>(us)); }
}  // namespace

std::string summary_line(const RunReport& r) {
  const auto& s = r.stats;
  char buf[512];
  std::snprintf(buf, sizeof buf, "frames %llu, profiles %llu, points %llu, %.1f MB/s, %.0f profiles/s (%s backend, %.3f s)",
                static_cast<unsigned long long>(s.frames), static_cast<unsigned long long>(s.profiles),
                static_cast<unsigned long long>(s.points), s.mb_per_s(), s.profiles_per_s(), to_string(s.backend), s.seconds);
  std::string line = buf;
  if (s.ambient_frames > 0) line += ", " + std::to_string(s.ambient_frames) + " laser-off frames consumed";
  if (s.live.active) line += "; " + live_line(s.live);
  return line;
}

std::string live_line(const LiveStats& l) {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "live path: batches of %d, up to %d reached (bound %d); %llu switches to batching, %llu back; %llu frames dropped; "
                "at most %llu frames waiting; frame latency p50 <= %s us, p99 <= %s us",
                l.configured_batch, l.largest_batch, l.max_batch, static_cast<unsigned long long>(l.to_batching),
                static_cast<unsigned long long>(l.caught_up), static_cast<unsigned long long>(l.dropped),
                static_cast<unsigned long long>(l.largest_queue_depth), bound_text(l.latency.quantile_bound_us(0.5)).c_str(),
                bound_text(l.latency.quantile_bound_us(0.99)).c_str());
  return buf;
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


metadata::Scan scan_metadata(const RunReport& r) {
  metadata::Scan m;
  m.source = r.source;
  m.method = r.method;
  m.width = r.width;
  m.frame_height = r.frame_height;
  m.neighbour_columns = r.neighbour_columns;
  m.neighbour_step = r.neighbour_step;
  m.line_model = r.line_model;
  if (r.stats.pixel_bits.known()) {
    m.pixel_bits = r.stats.pixel_bits.bits;
    m.pixel_bits_origin = to_string(r.stats.pixel_bits.origin);
  }
  m.linear = r.linear;
  m.sheet = r.calibration;
  return m;
}

void write_summary_json(const std::filesystem::path& path, const RunReport& r) {
  const auto& s = r.stats;
  const double columns = static_cast<double>(s.profiles) * r.width;
  metadata::Json j = metadata::scan_document("summary", scan_metadata(r));
  j["command"] = r.command;
  j["height_bits"] = r.height_bits;
  j["rounding"] = "half up";
  j["backend"] = to_string(s.backend);
  j["frames"] = s.frames;
  j["profiles"] = s.profiles;
  j["points"] = s.points;
  j["points_per_column"] = columns > 0 ? s.points / columns : 0.0;
  j["overflow_points"] = s.overflow;
  j["batches"] = s.batches;
  j["seconds"] = s.seconds;
  j["mb_per_s"] = s.mb_per_s();
  j["profiles_per_s"] = s.profiles_per_s();
  j["compute_ms"] = s.compute_ms;
  j["cuda_startup_ms"] = s.cuda_startup_ms;
  j["pinned_buffers"] = s.pinned;
  {  // the batch geometry the memory budget gave (docs/memory.md)
    const BatchGeometry& g = s.geometry;
    j["memory"] = {{"batch_frames", g.frames},          {"buffers", g.buffers},
                   {"lanes", g.lanes},                  {"profile_slots", g.slots},
                   {"requested_slots", g.requested_slots}, {"frames_from_budget", g.frames_from_budget},
                   {"host_budget_bytes", g.host_budget}, {"host_bytes", g.host_bytes},
                   {"device_budget_bytes", g.device_budget}, {"device_bytes", g.device_bytes}};
  }
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
  j["outputs"] = metadata::Json::array();
  for (const auto& o : r.outputs) j["outputs"].push_back(o.string());
  if (!r.interrupted.empty()) j["stopped_by"] = r.interrupted;  // the files hold what was acquired before it
  io::write_file_atomically(path, metadata::pretty(j));
}

}  // namespace stripeline::tools
