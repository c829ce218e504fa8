#pragma once
// ScanWriter: the daemon's sink. It cuts the endless stream of profiles into
// scans and gives each scan its own files and its own wire series:
//  - a scan ends after daemon.scan_rows rows, at a gap between consecutive
//    frame timestamps longer than daemon.pause, when no frame arrived for
//    daemon.idle_close seconds (tick()), or when the pipeline stops;
//  - per scan, in output.dir: <run>-<NNNNNN>-<output.ply>, -<output.heightmap>,
//    -<output.preview> and -<output.summary> (JSON: series, rows, frames,
//    reason, files), each written under a temporary name and renamed when the
//    scan ends;
//  - per scan, one publisher series (series-start ... series-end, annotated
//    with the scan number and the reason it ended). Files are complete before
//    series-end is sent.
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "app/outputs.h"
#include "app/service_config.h"
#include "pipeline/sink.h"
#include "stages/backend.h"
#include "streaming/publisher.h"

namespace stripeline::daemon {

struct ScanResult {
  std::uint64_t number = 0;
  std::uint64_t rows = 0;
  std::string series;
  std::string reason;
  std::vector<std::filesystem::path> files;
};

class ScanWriter final : public ProfileSink {
 public:
  // publisher may be null (no streaming). run_stamp prefixes every file name
  // (the daemon's start time), so restarts never overwrite earlier scans.
  // `output` names the files; `open_outputs` makes one scan's sinks with
  // every name prefixed (RunSession::open_scan_outputs).
  using OpenScanOutputs = std::function<OutputSinks(const std::string& prefix)>;
  ScanWriter(DaemonConfig daemon, OutputConfig output, OpenScanOutputs open_outputs, Publisher* publisher, std::string run_stamp,
             std::uint64_t first_scan_number, std::function<void()> on_begin = {}, std::function<void(const ScanResult&)> on_scan = {});
  void begin(const ScanInfo& info) override;
  void consume(const ProfileSpan& profiles) override;
  void finish() override;         // ends the open scan with the reason set by set_end_reason ("source-end" by default)
  void abort() noexcept override; // drops the open scan's temporaries; series-end "aborted"

  void set_end_reason(const std::string& reason);
  // Starts its log lines ("head left: "); before begin().
  void set_log_prefix(std::string prefix) { log_prefix_ = std::move(prefix); }
  // Ends the open scan when no frame arrived for daemon.idle_close seconds.
  // Thread-safe; never waits (skipped while the sink holds the writer).
  void tick(std::chrono::steady_clock::time_point now);
  std::uint64_t scans_completed() const;
  std::uint64_t next_scan_number() const;
  // Where the open scan's height-map filters run (tests); nullopt without an open scan or filters.
  std::optional<Backend> filter_backend() const;

 private:
  void open_scan();
  void close_scan(const std::string& reason);
  void forward(const ProfileSpan& p);

  DaemonConfig daemon_;
  OutputConfig output_;
  OpenScanOutputs open_outputs_;
  Publisher* publisher_;
  std::string run_stamp_;
  std::string log_prefix_;
  std::function<void()> on_begin_;
  std::function<void(const ScanResult&)> on_scan_;
  ScanInfo info_;
  mutable std::mutex mu_;
  std::string end_reason_ = "source-end";

  bool open_ = false;
  std::uint64_t next_number_;
  std::uint64_t completed_ = 0;
  ScanResult current_;
  OutputSinks files_;  // the open scan's file sinks (no publisher: it lives across scans)
  std::filesystem::path summary_path_;
  std::uint64_t first_frame_ = 0, last_frame_ = 0, first_index_ = 0;
  std::int64_t first_ts_ = 0, last_ts_ = 0;
  std::chrono::steady_clock::time_point last_frame_wall_;
};

}  // namespace stripeline::daemon
