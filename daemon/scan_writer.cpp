#include "daemon/scan_writer.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "io/atomic_file.h"
#include "streaming/wire_format.h"

namespace stripeline::daemon {

ScanWriter::ScanWriter(DaemonConfig daemon, OutputConfig output, OpenScanOutputs open_outputs, Publisher* publisher, std::string run_stamp,
                       std::uint64_t first_scan_number, std::function<void()> on_begin, std::function<void(const ScanResult&)> on_scan)
    : daemon_(std::move(daemon)),
      output_(std::move(output)),
      open_outputs_(std::move(open_outputs)),
      publisher_(publisher),
      run_stamp_(std::move(run_stamp)),
      on_begin_(std::move(on_begin)),
      on_scan_(std::move(on_scan)),
      next_number_(first_scan_number) {}

void ScanWriter::begin(const ScanInfo& info) {
  {
    std::lock_guard lock(mu_);
    info_ = info;
  }
  // The pipeline calls begin() once the source is open and the processors
  // (and their device memory) are set up: the daemon is ready.
  if (on_begin_) on_begin_();
}

void ScanWriter::open_scan() {
  const std::uint64_t n = next_number_++;
  const std::string prefix = fmt::format("{}-{:06}-", run_stamp_, n);
  current_ = ScanResult{};
  current_.number = n;
  files_ = open_outputs_(prefix);
  summary_path_ = output_.summary.empty() ? std::filesystem::path() : output_.resolve(prefix + output_.summary);
  for (ProfileSink* f : files_.all()) f->begin(info_);
  if (publisher_) {
    publisher_->annotate("scan", n);
    publisher_->begin(info_);
    current_.series = publisher_->series();
  } else {
    current_.series = wire::new_uuid();
  }
  open_ = true;
  spdlog::debug("{}scan {}: started (series {})", log_prefix_, n, current_.series);
}

void ScanWriter::close_scan(const std::string& reason) {
  if (!open_) return;
  open_ = false;
  current_.reason = reason;
  for (ProfileSink* f : files_.all()) f->finish();  // files under their final names first...
  std::vector<std::filesystem::path> written;
  for (const auto& p : files_.files)
    if (std::filesystem::exists(p)) written.push_back(p);
  if (!summary_path_.empty()) {
    nlohmann::json j = {{"scan", current_.number},
                        {"series", current_.series},
                        {"reason", reason},
                        {"rows", current_.rows},
                        {"first_index", first_index_},
                        {"first_frame", first_frame_},
                        {"last_frame", last_frame_},
                        {"first_timestamp_ns", first_ts_},
                        {"last_timestamp_ns", last_ts_},
                        {"width", info_.layout.width},
                        {"unit", info_.calibration.unit()},
                        {"calibration", wire::calibration_json(info_.calibration)},
                        {"source", info_.source},
                        {"point_unit", info_.sheet ? "mm" : info_.calibration.unit()},
                        {"sheet_calibration", info_.sheet ? wire::sheet_calibration_json(*info_.sheet) : nlohmann::json()},
                        {"files", nlohmann::json::array()}};
    if (files_.heightmap && !output_.heightmap_filters.empty())
      j["heightmap_filters"] = {{"steps", output_.heightmap_filters}, {"backend", to_string(files_.heightmap->filter_backend())}};
    for (const auto& p : written) j["files"].push_back(p.filename().string());
    io::write_file_atomically(summary_path_, j.dump(2) + "\n");
    written.push_back(summary_path_);
  }
  current_.files = written;
  if (publisher_) {  // ...then series-end
    publisher_->annotate("reason", reason);
    publisher_->finish();
  }
  files_ = OutputSinks{};
  ++completed_;
  spdlog::info("{}scan {}: {} rows, ended ({}), {} files", log_prefix_, current_.number, current_.rows, reason, written.size());
  if (on_scan_) on_scan_(current_);
}

void ScanWriter::forward(const ProfileSpan& p) {
  for (ProfileSink* f : files_.all()) f->consume(p);
  if (publisher_) publisher_->consume(p);
  if (current_.rows == 0) {
    first_frame_ = p.meta[0].frame_id;
    first_ts_ = p.meta[0].timestamp_ns;
    first_index_ = p.first_index;
  }
  last_frame_ = p.meta[p.frames - 1].frame_id;
  current_.rows += static_cast<std::uint64_t>(p.frames);
}

void ScanWriter::consume(const ProfileSpan& p) {
  std::lock_guard lock(mu_);
  const std::int64_t pause_ns = static_cast<std::int64_t>(daemon_.pause * 1e9);
  auto gap = [&](std::int64_t a, std::int64_t b) { return pause_ns > 0 && b - a > pause_ns; };
  int f = 0;
  while (f < p.frames) {
    if (open_ && gap(last_ts_, p.meta[f].timestamp_ns)) close_scan("pause");
    if (!open_) open_scan();
    const std::uint64_t room = daemon_.scan_rows - current_.rows;
    int e = f + 1;
    while (e < p.frames && static_cast<std::uint64_t>(e - f) < room && !gap(p.meta[e - 1].timestamp_ns, p.meta[e].timestamp_ns)) ++e;
    forward(p.subspan(f, e - f));
    last_ts_ = p.meta[e - 1].timestamp_ns;
    if (current_.rows >= daemon_.scan_rows) close_scan("rows");
    f = e;
  }
  last_frame_wall_ = std::chrono::steady_clock::now();
}

void ScanWriter::finish() {
  std::lock_guard lock(mu_);
  close_scan(end_reason_);
}

void ScanWriter::abort() noexcept {
  std::lock_guard lock(mu_);
  if (!open_) return;
  open_ = false;
  for (ProfileSink* f : files_.all()) f->abort();
  files_ = OutputSinks{};
  if (publisher_) publisher_->abort();
  spdlog::error("{}scan {}: aborted after {} rows (its files were not kept)", log_prefix_, current_.number, current_.rows);
}

void ScanWriter::set_end_reason(const std::string& reason) {
  std::lock_guard lock(mu_);
  end_reason_ = reason;
}

void ScanWriter::tick(std::chrono::steady_clock::time_point now) {
  // Never waits: the sink holding the lock is writing rows (not idle) or
  // closing a scan, and the caller (housekeeping) holds the daemon's lock.
  std::unique_lock lock(mu_, std::try_to_lock);
  if (!lock) return;
  if (open_ && daemon_.idle_close > 0 && now - last_frame_wall_ > std::chrono::duration<double>(daemon_.idle_close)) close_scan("idle");
}

std::uint64_t ScanWriter::scans_completed() const {
  std::lock_guard lock(mu_);
  return completed_;
}

std::optional<Backend> ScanWriter::filter_backend() const {
  std::lock_guard lock(mu_);
  if (!open_ || !files_.heightmap || output_.heightmap_filters.empty()) return std::nullopt;
  return files_.heightmap->filter_backend();
}

std::uint64_t ScanWriter::next_scan_number() const {
  std::lock_guard lock(mu_);
  return next_number_;
}

}  // namespace stripeline::daemon
