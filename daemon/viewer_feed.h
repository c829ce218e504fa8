#pragma once
// ViewerFeed: the live viewer's tap on the daemon's rows (docs/daemon.md,
// "Live viewer"). It is one more sink beside the scan writer, so it sees the
// same rows the stream carries, in order, on the pipeline's sink stage.
//
// It never blocks the pipeline and allocates nothing per batch: it takes
// about `rate` profiles per second of wall-clock time, spread evenly over
// the spans (a span of a batch that took 0.5 s to come gives rate/2 of its
// profiles, the last one always; at most kRing), decimates each to at most
// `max_columns` bins (the mean of the points found in each bin; the mean
// intensity; the lowest quality) into scratch rows sized at begin(), and
// swaps them into a ring of kRing rows under a try_lock. When the viewer's
// thread holds the ring the rows are skipped and counted (skipped()). The
// viewer's thread (ViewerHub) takes them in order with take(), one per tick,
// so that the page scrolls evenly however the rows come in batches.
//
// The merged series of several heads (daemon/viewer_merge.h) comes as rows
// already on a world X grid: begin_grid() and consume_grid() take them the
// same way (about `rate` a second, decimated to `max_columns` bins).
//
// Thread-safety: begin/consume/finish/on_batch (or begin_grid/consume_grid)
// from one thread, the producer's; take(), info(), rows_seen(), skipped(),
// latency_ms() from any thread.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "pipeline/pipeline.h"
#include "pipeline/sink.h"

namespace stripeline::daemon {

// One decimated profile. heights: the unit of ViewerInfo (px rows, or mm);
// NaN where no point was found. x: with a sheet-of-light calibration, each
// bin's mean X in mm (NaN: none), else empty (x of bin b = x0 + dx * b).
struct ViewerRow {
  std::uint64_t index = 0;     // global frame index
  std::uint64_t frame_id = 0;
  std::vector<float> heights, intensity, quality, x;
};

// What a page needs to draw the rows of a run (one per pipeline).
struct ViewerInfo {
  std::uint64_t generation = 0;  // changes when a new pipeline begins
  int width = 0;                 // source columns
  int bins = 0;                  // columns of a ViewerRow
  int frame_height = 0;
  std::string unit = "px";       // of heights (and x)
  double x0 = 0, dx = 1;         // x of bin b, centre (without a sheet calibration)
  std::string calibration;       // "none", "linear" or the sheet calibration's id
};

class ViewerFeed final : public ProfileSink {
 public:
  ViewerFeed(int max_columns, double rate);
  void begin(const ScanInfo& info) override;
  void consume(const ProfileSpan& profiles) override;
  void finish() override {}
  // Once per batch from the pipeline's progress callback: the frame arrival
  // -> profile latency the page shows (the live path's per-frame mean over
  // this batch, else the batch's `latency_seconds`).
  void on_batch(const PipelineStats& s, std::optional<double> latency_seconds);
  // Rows of `cells` values on a uniform grid (cell i at x0 + dx * i, in
  // `unit`); NaN = no data. begin_grid() starts a run as begin() does;
  // consume_grid() takes a block of `rows` rows (z: rows x cells; row r is
  // frame frame_ids[r], global index first_index + r; missing: nullptr or a
  // flag per row, 1 = no data at all), as consume() a span.
  void begin_grid(int cells, double x0, double dx, const std::string& unit, const std::string& calibration);
  void consume_grid(std::uint64_t first_index, const std::uint64_t* frame_ids, const float* z, int rows, int cells, const std::uint8_t* missing);

  static constexpr int kRing = 32;
  // The oldest row still held after `seen` (a sequence number, 0 at first):
  // copies it into `out` and returns its sequence number; 0 when there is
  // none newer.
  std::uint64_t take(std::uint64_t seen, ViewerRow& out);
  ViewerInfo info() const;
  std::uint64_t rows_seen() const { return rows_.load(std::memory_order_relaxed); }
  std::uint64_t skipped() const { return skipped_.load(std::memory_order_relaxed); }
  double latency_ms() const { return latency_ms_.load(std::memory_order_relaxed); }  // < 0: none yet

 private:
  void decimate(const ProfileSpan& p, int frame, ViewerRow& out) const;
  void start_run(ViewerInfo v, bool with_x);
  // How many rows the time since the last take holds (0: none yet); at most `available`.
  int due(int available);
  void hand_over(int n);

  const int max_columns_;
  const std::chrono::nanoseconds period_;
  // Sink stage only.
  ScanInfo scan_;
  int bins_ = 0;
  double z_scale_ = 1.0 / 256.0, z_offset_ = 0;
  std::vector<ViewerRow> scratch_;  // kRing
  std::chrono::steady_clock::time_point last_take_{};
  LiveStats live_before_{};
  // Hand-off (mu_).
  mutable std::mutex mu_;
  std::vector<ViewerRow> ring_;  // kRing; row n (1-based) at (n - 1) % kRing
  std::uint64_t newest_ = 0;     // rows handed over so far
  std::uint64_t run_first_ = 1;  // the first row of this run (begin())
  ViewerInfo info_;
  std::atomic<std::uint64_t> rows_{0}, skipped_{0};
  std::atomic<double> latency_ms_{-1.0};
};

}  // namespace stripeline::daemon
