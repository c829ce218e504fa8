#pragma once
// The daemon's Prometheus metrics (docs/daemon.md lists them): every family
// registered once, and the bookkeeping that turns the snapshots of the
// source, the publisher and the pipeline (each of which restarts from zero
// with a new pipeline or publisher) into monotonic counters.
//
// Thread-safety: on_batch() is called from the pipeline's sink stage,
// collect() from the HTTP thread (through the registry's collector) and the
// main thread; one mutex of its own serialises them. It never calls back
// into the daemon.
#include <array>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

#include "acquisition/source.h"
#include "daemon/http_server.h"
#include "daemon/metrics.h"
#include "pipeline/pipeline.h"
#include "streaming/publisher.h"

namespace stripeline::daemon {

// What the daemon hands collect(): the live source's and publisher's state.
struct DaemonSnapshot {
  bool has_source = false;
  std::uint64_t frames = 0, missing = 0;
  std::size_t in_flight = 0;
  std::optional<AcquisitionCounters> acquisition;
  std::optional<PublisherCounters> publisher;
  int subscribers = 0;
  bool healthy = true;
  bool camera_connected = false;
  std::optional<HttpServer::Stats> http;
};

class DaemonMetrics {
 public:
  // `head`: a head's name in a daemon of several heads; its families get the
  // label head="<name>" (docs/daemon.md). "" = the single head, unlabelled.
  explicit DaemonMetrics(Registry& registry, const std::string& head = "");

  // A new pipeline (its stats and source counters start again from zero).
  void new_pipeline();
  // The publisher was replaced (after a last collect()): the next one's counters start from zero.
  void publisher_replaced();
  // A batch went through every sink: the pipeline's running totals.
  void on_batch(const PipelineStats& stats, std::optional<double> latency_seconds);
  void collect(const DaemonSnapshot& now);

  void scan_completed() { scans_done_->add(1); }
  void reload(bool applied) { (applied ? reload_ok_ : reload_bad_)->add(1); }
  void reload_rolled_back() { reload_rolled_back_->add(1); }
  void camera_lost(double detection_seconds);
  void camera_reconnected() { camera_reconnects_->add(1); }
  void set_up(bool up) { up_->set(up ? 1 : 0); }

  // For the line the daemon logs when it stops.
  struct Totals {
    double frames, profiles, published, scans;
    std::array<double, kDropReasons> dropped;
  };
  Totals totals() const;

 private:
  std::mutex mu_;
  // Baselines: the last snapshot of each source of counters.
  PublisherCounters last_pub_{};
  std::uint64_t last_frames_ = 0, last_missing_ = 0;
  AcquisitionCounters last_acq_{};
  PipelineStats last_stats_{};

  Counter *frames_, *missing_, *profiles_, *points_, *overflow_, *batches_, *compute_, *bytes_, *published_, *hm_rows_, *msgs_,
      *pub_bytes_, *scans_done_, *series_, *reload_ok_, *reload_bad_, *reload_rolled_back_;
  std::array<Counter*, 2> control_dropped_{};  // series-start, series-end
  std::array<Counter*, kDropReasons> dropped_{}, msg_dropped_{};
  // stripeline_frames_lost_total by cause: gap, incomplete, timeout, failed.
  std::array<Counter*, 4> lost_{};
  Counter *underruns_, *late_, *flushed_, *camera_losses_, *camera_reconnects_;
  // How the frames got from the grabber's buffer into the batch: bytes copied,
  // and stripeline_acquisition_path{path="direct"|"copy"} (1 for the current one).
  Counter* bytes_copied_;
  // The batch geometry the memory budget gave (pipeline/memory_budget.h): frames, buffers,
  // slots, and stripeline_memory_{budget,planned}_bytes{memory="host"|"device"}.
  Gauge *batch_frames_, *pool_buffers_, *profile_slots_;
  std::array<Gauge*, 2> budget_bytes_{}, planned_bytes_{};
  std::array<Gauge*, 2> path_{};  // indexed by AcquisitionPath
  Gauge *camera_connected_, *camera_detect_, *queue_, *subscribers_, *up_, *start_time_, *healthy_;
  Summary *latency_, *compute_per_batch_;
  // The live path (pipeline/live_batching.h): frames waiting at the source,
  // the batch the last acquisition took, switches, drops, per-frame latency.
  Gauge *live_waiting_, *live_batch_;
  Counter *live_to_batching_, *live_caught_up_, *live_dropped_;
  Histogram* live_latency_;
  Counter *http_requests_, *http_evicted_, *http_timed_out_, *http_bad_;
  Gauge* http_open_;
  HttpServer::Stats last_http_{};
};

}  // namespace stripeline::daemon
