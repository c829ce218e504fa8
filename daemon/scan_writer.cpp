#include "daemon/scan_writer.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "io/atomic_file.h"
#include "pipeline/file_sinks.h"
#include "pipeline/wire_format.h"

namespace stripeline::daemon {

ScanWriter::ScanWriter(DaemonConfig daemon, OutputConfig output, Publisher* publisher, std::string run_stamp,
                       std::uint64_t first_scan_number, std::function<void()> on_begin, std::function<void(const ScanResult&)> on_scan)
    : daemon_(std::move(daemon)),
      output_(std::move(output)),
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
  files_.clear();
  paths_.clear();
  current_ = ScanResult{};
  current_.number = n;
  if (!output_.ply.empty()) {
    paths_.push_back(output_.resolve(prefix + output_.ply));
    files_.push_back(std::make_unique<PlySink>(paths_.back(), output_.ply_encoding));
  }
  if (!output_.heightmap.empty() || !output_.preview.empty()) {
    const auto hm = output_.heightmap.empty() ? std::filesystem::path() : output_.resolve(prefix + output_.heightmap);
    const auto pv = output_.preview.empty() ? std::filesystem::path() : output_.resolve(prefix + output_.preview);
    if (!hm.empty()) paths_.push_back(hm);
    if (!pv.empty()) paths_.push_back(pv);
    auto sink = std::make_unique<HeightMapSink>(hm, pv, output_.height_bits);
    if (!output_.heightmap_filters.empty()) sink->set_filters(output_.heightmap_filters, Backend::Auto);
    files_.push_back(std::move(sink));
  }
  summary_path_ = output_.summary.empty() ? std::filesystem::path() : output_.resolve(prefix + output_.summary);
  for (auto& f : files_) f->begin(info_);
  if (publisher_) {
    publisher_->annotate("scan", n);
    publisher_->begin(info_);
    current_.series = publisher_->series();
  } else {
    current_.series = wire::new_uuid();
  }
  open_ = true;
  spdlog::debug("scan {}: started (series {})", n, current_.series);
}

void ScanWriter::close_scan(const std::string& reason) {
  if (!open_) return;
  open_ = false;
  current_.reason = reason;
  for (auto& f : files_) f->finish();  // files under their final names first...
  std::vector<std::filesystem::path> written;
  for (const auto& p : paths_)
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
                        {"files", nlohmann::json::array()}};
    for (const auto& p : written) j["files"].push_back(p.filename().string());
    io::write_file_atomically(summary_path_, j.dump(2) + "\n");
    written.push_back(summary_path_);
  }
  current_.files = written;
  if (publisher_) {  // ...then series-end
    publisher_->annotate("reason", reason);
    publisher_->finish();
  }
  files_.clear();
  ++completed_;
  spdlog::info("scan {}: {} rows, ended ({}), {} files", current_.number, current_.rows, reason, written.size());
  if (on_scan_) on_scan_(current_);
}

void ScanWriter::forward(const Batch& batch, const ProfileBatch& p, int first, int count) {
  if (first == 0 && count == p.frames) {
    for (auto& f : files_) f->consume(batch, p);
    if (publisher_) publisher_->consume(batch, p);
  } else {  // a view of frames [first, first + count)
    Batch b;
    b.layout = batch.layout;
    b.frames = count;
    b.sequence = batch.sequence;
    b.first_index = batch.first_index + static_cast<std::uint64_t>(first);
    b.meta.assign(batch.meta.begin() + first, batch.meta.begin() + first + count);
    ProfileBatch v;
    v.width = p.width;
    v.capacity = count;
    v.slots = p.slots;
    v.frames = count;
    v.sequence = p.sequence;
    v.first_index = p.first_index + static_cast<std::uint64_t>(first);
    const std::size_t off = p.slot_index(first, 0, 0);
    v.position = p.position + off;
    v.intensity = p.intensity + off;
    v.stripe_width = p.stripe_width + off;
    v.count = p.count + static_cast<std::size_t>(first) * p.width;
    v.meta.assign(p.meta.begin() + first, p.meta.begin() + first + count);
    for (auto& f : files_) f->consume(b, v);
    if (publisher_) publisher_->consume(b, v);
  }
  if (current_.rows == 0) {
    first_frame_ = batch.meta[first].frame_id;
    first_ts_ = batch.meta[first].timestamp_ns;
    first_index_ = p.first_index + static_cast<std::uint64_t>(first);
  }
  last_frame_ = batch.meta[first + count - 1].frame_id;
  current_.rows += static_cast<std::uint64_t>(count);
}

void ScanWriter::consume(const Batch& batch, const ProfileBatch& p) {
  std::lock_guard lock(mu_);
  const std::int64_t pause_ns = static_cast<std::int64_t>(daemon_.pause * 1e9);
  auto gap = [&](std::int64_t a, std::int64_t b) { return pause_ns > 0 && b - a > pause_ns; };
  int f = 0;
  while (f < p.frames) {
    if (open_ && gap(last_ts_, batch.meta[f].timestamp_ns)) close_scan("pause");
    if (!open_) open_scan();
    const std::uint64_t room = daemon_.scan_rows - current_.rows;
    int e = f + 1;
    while (e < p.frames && static_cast<std::uint64_t>(e - f) < room && !gap(batch.meta[e - 1].timestamp_ns, batch.meta[e].timestamp_ns)) ++e;
    forward(batch, p, f, e - f);
    last_ts_ = batch.meta[e - 1].timestamp_ns;
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
  for (auto& f : files_) f->abort();
  files_.clear();
  if (publisher_) publisher_->abort();
  spdlog::error("scan {}: aborted after {} rows (its files were not kept)", current_.number, current_.rows);
}

void ScanWriter::set_end_reason(const std::string& reason) {
  std::lock_guard lock(mu_);
  end_reason_ = reason;
}

void ScanWriter::tick(std::chrono::steady_clock::time_point now) {
  std::lock_guard lock(mu_);
  if (open_ && daemon_.idle_close > 0 && now - last_frame_wall_ > std::chrono::duration<double>(daemon_.idle_close)) close_scan("idle");
}

std::uint64_t ScanWriter::scans_completed() const {
  std::lock_guard lock(mu_);
  return completed_;
}

std::uint64_t ScanWriter::next_scan_number() const {
  std::lock_guard lock(mu_);
  return next_number_;
}

}  // namespace stripeline::daemon
