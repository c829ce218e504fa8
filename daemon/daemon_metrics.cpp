#include "daemon/daemon_metrics.h"

#include <fmt/format.h>

#include <ctime>
#include <string>

namespace stripeline::daemon {

namespace {
// The increase since the last snapshot (counters never go backwards).
double delta(std::uint64_t now, std::uint64_t before) { return static_cast<double>(now - before); }
}  // namespace

DaemonMetrics::DaemonMetrics(Registry& m, const std::string& head) {
  // A head's families carry its label (several heads in one daemon); the
  // process's own (up, start time, reloads, HTTP) are shared, unlabelled.
  const std::string head_label = head.empty() ? "" : fmt::format("head=\"{}\"", head);
  auto with = [&](const std::string& l) { return head_label.empty() ? l : l.empty() ? head_label : head_label + "," + l; };
  auto counter = [&](const std::string& n, const std::string& h, const std::string& l = "") -> Counter& { return m.counter(n, h, with(l)); };
  auto gauge = [&](const std::string& n, const std::string& h, const std::string& l = "") -> Gauge& { return m.gauge(n, h, with(l)); };
  auto summary = [&](const std::string& n, const std::string& h) -> Summary& { return m.summary(n, h, 1024, head_label); };
  auto histogram = [&](const std::string& n, const std::string& h, std::vector<double> b) -> Histogram& {
    return m.histogram(n, h, std::move(b), head_label);
  };
  frames_ = &counter("stripeline_frames_acquired_total", "Frames delivered by the source.");
  missing_ = &counter("stripeline_frames_missing_total", "Frames the source reported as never arrived (their profiles are empty).");
  profiles_ = &counter("stripeline_profiles_emitted_total", "Profiles (height rows) produced by the pipeline, one per frame.");
  points_ = &counter("stripeline_points_total", "Detected points in the profiles.");
  overflow_ = &counter("stripeline_points_overflow_total", "Points found beyond the output slots (counted, not written).");
  batches_ = &counter("stripeline_batches_total", "Batches processed.");
  bytes_ = &counter("stripeline_pixel_bytes_total", "Pixel bytes processed.");
  compute_ = &counter("stripeline_compute_seconds_total", "Processor (CPU or GPU) time summed over batches.");
  published_ = &counter("stripeline_profiles_published_total", "Profile rows sent to subscribers.");
  hm_rows_ = &counter("stripeline_heightmap_rows_published_total", "Rows sent in heightmap messages.");
  msgs_ = &counter("stripeline_messages_published_total", "Messages sent (all topics).");
  for (int r = 0; r < kDropReasons; ++r) {
    const std::string label = fmt::format("reason=\"{}\"", to_string(static_cast<DropReason>(r)));
    dropped_[r] = &counter("stripeline_profiles_dropped_total", "Profile rows not sent, by reason (hwm, no_subscriber, error).", label);
    msg_dropped_[r] = &counter("stripeline_messages_dropped_total", "Messages not sent, by reason.", label);
  }
  pub_bytes_ = &counter("stripeline_published_bytes_total", "Bytes sent (all parts of all messages).");
  series_ = &counter("stripeline_series_total", "Wire series started (one per scan).");
  scans_done_ = &counter("stripeline_scans_completed_total", "Scans whose files were completed.");
  reload_ok_ = &m.counter("stripeline_config_reloads_total", "SIGHUP reloads, by result.", "result=\"applied\"");
  reload_bad_ = &m.counter("stripeline_config_reloads_total", "SIGHUP reloads, by result.", "result=\"rejected\"");
  reload_rolled_back_ = &m.counter("stripeline_config_reloads_total", "SIGHUP reloads, by result.", "result=\"rolled_back\"");
  control_dropped_[0] = &counter("stripeline_control_messages_dropped_total",
                                   "series-start/series-end not sent: a subscriber stayed at the high-water mark for publisher.control_timeout_ms, "
                                   "or a send error.",
                                   "topic=\"series-start\"");
  control_dropped_[1] = &counter("stripeline_control_messages_dropped_total",
                                   "series-start/series-end not sent: a subscriber stayed at the high-water mark for publisher.control_timeout_ms, "
                                   "or a send error.",
                                   "topic=\"series-end\"");
  queue_ = &gauge("stripeline_queue_depth_batches", "Batches acquired but not yet through every sink.");
  subscribers_ = &gauge("stripeline_subscribers", "Subscriptions matching the profile topic.");
  healthy_ = &gauge("stripeline_healthy", "1 when no batch is stalled in flight.");
  up_ = &m.gauge("stripeline_up", "1 while the daemon runs.");
  start_time_ = &m.gauge("stripeline_start_time_seconds", "Daemon start, seconds since the Unix epoch.");
  latency_ = &summary("stripeline_batch_latency_seconds", "Time from a batch leaving the source to its last sink (recent 1024 batches).");
  compute_per_batch_ = &summary("stripeline_batch_compute_seconds", "Processor (CPU or GPU) time per batch (recent 1024 batches).");
  live_waiting_ = &gauge("stripeline_live_frames_waiting", "Frames waiting at the source at the last acquisition (sources that report it; else 0).");
  live_batch_ = &gauge("stripeline_live_batch_frames", "Frames the last acquisition took (the live path grows it while frames wait).");
  live_to_batching_ = &counter("stripeline_live_batching_switches_total", "Live path: switches between the configured batch and batching.",
                                 "to=\"batching\"");
  live_caught_up_ = &counter("stripeline_live_batching_switches_total", "Live path: switches between the configured batch and batching.",
                               "to=\"configured\"");
  live_dropped_ = &counter("stripeline_live_frames_dropped_total", "Live path: oldest waiting frames discarded beyond processing.live_max_waiting.");
  {
    const auto& b = LatencyHistogram::kBoundsUs;
    live_latency_ = &histogram("stripeline_frame_latency_microseconds", "Frame arrival (or its fill) -> every sink done, per frame, microseconds.",
                                 std::vector<double>(b.begin(), b.end()));
  }
  const char* causes[] = {"gap", "incomplete", "timeout", "failed"};
  for (std::size_t i = 0; i < lost_.size(); ++i)
    lost_[i] = &counter("stripeline_frames_lost_total",
                          "Camera frames lost, counted by size, by cause (every one in the stream is a missing row).",
                          fmt::format("cause=\"{}\"", causes[i]));
  underruns_ = &counter("stripeline_camera_underruns_total",
                          "The camera driver's underrun count: data that found no free buffer (Aravis 0.8 counts packets, not frames; the "
                          "frames are in the gap count).");
  late_ = &counter("stripeline_camera_frames_late_total", "Frames completed after a newer one (already counted as gap): dropped.");
  flushed_ = &counter("stripeline_batches_flushed_total", "Partial batches handed on by camera.flush_timeout.");
  camera_losses_ = &counter("stripeline_camera_losses_total", "Times the camera stopped answering.");
  camera_reconnects_ = &counter("stripeline_camera_reconnects_total", "Times a lost camera was opened again (each starts a new series).");
  bytes_copied_ = &counter("stripeline_acquisition_bytes_copied_total",
                             "Pixel bytes copied from the grabber's buffers into batches (0 on the direct, zero-copy path).");
  for (const AcquisitionPath p : {AcquisitionPath::Copy, AcquisitionPath::Direct})
    path_[static_cast<std::size_t>(p)] = &gauge("stripeline_acquisition_path",
                                                  "1 for the path the live source's frames take into batches: direct (the grabber writes "
                                                  "into the pipeline's buffers) or copy.",
                                                  std::string("path=\"") + to_string(p) + "\"");
  batch_frames_ = &gauge("stripeline_batch_frames", "Frames per batch (from processing.batch_frames or the memory budget, docs/memory.md).");
  pool_buffers_ = &gauge("stripeline_pool_buffers", "Batch buffers in the pool (batches in flight).");
  profile_slots_ = &gauge("stripeline_profile_slots", "Output slots per column (multi-peak methods: at most what the memory budget holds).");
  for (int i = 0; i < 2; ++i) {
    const std::string label = i == 0 ? "memory=\"host\"" : "memory=\"device\"";
    budget_bytes_[i] = &gauge("stripeline_memory_budget_bytes", "The memory budget of the batches (device: CUDA backend only, else 0).", label);
    planned_bytes_[i] = &gauge("stripeline_memory_planned_bytes", "Memory the batch geometry takes within the budget.", label);
  }
  camera_connected_ = &gauge("stripeline_camera_connected", "1 while the camera streams, 0 while lost or not found (no camera source: 0).");
  camera_detect_ = &gauge("stripeline_camera_loss_detection_seconds",
                            "Last loss: seconds from the camera's last sign of life to the loss being declared.");
  http_requests_ = &m.counter("stripeline_http_requests_total", "HTTP requests answered (all endpoints).");
  http_evicted_ = &m.counter("stripeline_http_connections_evicted_total",
                             "HTTP connections closed because http.max_connections were open (the longest-idle one goes).");
  http_timed_out_ = &m.counter("stripeline_http_connections_timed_out_total",
                               "HTTP connections closed by http.idle_timeout, http.request_timeout or the write timeout.");
  http_bad_ = &m.counter("stripeline_http_bad_requests_total", "HTTP requests refused as malformed (400, 431, 505).");
  http_open_ = &m.gauge("stripeline_http_connections_open", "HTTP connections open.");
  up_->set(1);
  start_time_->set(static_cast<double>(std::time(nullptr)));
}

void DaemonMetrics::new_pipeline() {
  std::lock_guard lock(mu_);
  last_frames_ = 0;
  last_missing_ = 0;
  last_acq_ = AcquisitionCounters{};
  last_stats_ = PipelineStats{};
}

void DaemonMetrics::publisher_replaced() {
  std::lock_guard lock(mu_);
  last_pub_ = PublisherCounters{};
}

void DaemonMetrics::on_batch(const PipelineStats& s, std::optional<double> latency_seconds) {
  std::lock_guard lock(mu_);
  if (latency_seconds) latency_->observe(*latency_seconds);
  const double compute_ms = s.compute_ms - last_stats_.compute_ms;
  compute_per_batch_->observe(compute_ms / 1000.0);
  compute_->add(compute_ms / 1000.0);
  profiles_->add(delta(s.profiles, last_stats_.profiles));
  points_->add(delta(s.points, last_stats_.points));
  overflow_->add(delta(s.overflow, last_stats_.overflow));
  bytes_->add(delta(s.bytes, last_stats_.bytes));
  batches_->add(delta(s.batches, last_stats_.batches));
  const LiveStats& live = s.live;
  const LiveStats& was = last_stats_.live;
  std::vector<std::uint64_t> buckets(live.latency.counts.size());
  for (std::size_t i = 0; i < buckets.size(); ++i) buckets[i] = live.latency.counts[i] - was.latency.counts[i];
  live_latency_->add(buckets, live.latency.sum_us - was.latency.sum_us);
  live_waiting_->set(static_cast<double>(live.queue_depth));
  live_batch_->set(live.active ? live.current_batch : s.geometry.frames);
  live_to_batching_->add(delta(live.to_batching, was.to_batching));
  live_caught_up_->add(delta(live.caught_up, was.caught_up));
  live_dropped_->add(delta(live.dropped, was.dropped));
  const BatchGeometry& g = s.geometry;
  batch_frames_->set(live.active ? live.configured_batch : g.frames);  // the live path's slots hold more: stripeline_live_batch_frames
  pool_buffers_->set(g.buffers);
  profile_slots_->set(g.slots);
  budget_bytes_[0]->set(static_cast<double>(g.host_budget));
  budget_bytes_[1]->set(static_cast<double>(g.device_budget));
  planned_bytes_[0]->set(static_cast<double>(g.host_bytes));
  planned_bytes_[1]->set(static_cast<double>(g.device_bytes));
  last_stats_ = s;
}

void DaemonMetrics::collect(const DaemonSnapshot& now) {
  std::lock_guard lock(mu_);
  if (now.has_source) {
    frames_->add(delta(now.frames, last_frames_));
    missing_->add(delta(now.missing, last_missing_));
    last_frames_ = now.frames;
    last_missing_ = now.missing;
    queue_->set(static_cast<double>(now.in_flight));
    if (const auto& a = now.acquisition) {
      const std::array<std::uint64_t, 4> lost = {a->lost_gap, a->lost_incomplete, a->lost_timeout, a->lost_failed},
                                         before = {last_acq_.lost_gap, last_acq_.lost_incomplete, last_acq_.lost_timeout, last_acq_.lost_failed};
      for (std::size_t i = 0; i < lost_.size(); ++i) lost_[i]->add(delta(lost[i], before[i]));
      underruns_->add(delta(a->underruns, last_acq_.underruns));
      late_->add(delta(a->arrived_late, last_acq_.arrived_late));
      flushed_->add(delta(a->batches_flushed, last_acq_.batches_flushed));
      bytes_copied_->add(delta(a->bytes_copied, last_acq_.bytes_copied));
      for (std::size_t i = 0; i < path_.size(); ++i) path_[i]->set(static_cast<std::size_t>(a->path) == i ? 1 : 0);
      last_acq_ = *a;
    }
  } else {
    queue_->set(0);
  }
  if (const auto& c = now.publisher) {
    published_->add(delta(c->rows_published, last_pub_.rows_published));
    hm_rows_->add(delta(c->heightmap_rows_published, last_pub_.heightmap_rows_published));
    msgs_->add(delta(c->messages_sent, last_pub_.messages_sent));
    pub_bytes_->add(delta(c->bytes_sent, last_pub_.bytes_sent));
    series_->add(delta(c->series, last_pub_.series));
    for (std::size_t i = 0; i < control_dropped_.size(); ++i) control_dropped_[i]->add(delta(c->control_dropped[i], last_pub_.control_dropped[i]));
    for (int r = 0; r < kDropReasons; ++r) {
      dropped_[r]->add(delta(c->rows_dropped[r], last_pub_.rows_dropped[r]));
      msg_dropped_[r]->add(delta(c->messages_dropped[r], last_pub_.messages_dropped[r]));
    }
    last_pub_ = *c;
  }
  if (const auto& h = now.http) {
    http_requests_->add(delta(h->requests, last_http_.requests));
    http_evicted_->add(delta(h->evicted, last_http_.evicted));
    http_timed_out_->add(delta(h->timed_out, last_http_.timed_out));
    http_bad_->add(delta(h->bad_requests, last_http_.bad_requests));
    http_open_->set(h->open);
    last_http_ = *h;
  }
  subscribers_->set(now.subscribers);
  healthy_->set(now.healthy ? 1 : 0);
  camera_connected_->set(now.camera_connected ? 1 : 0);
}

void DaemonMetrics::camera_lost(double detection_seconds) {
  camera_losses_->add(1);
  if (detection_seconds > 0) camera_detect_->set(detection_seconds);
}

DaemonMetrics::Totals DaemonMetrics::totals() const {
  Totals t{frames_->value(), profiles_->value(), published_->value(), scans_done_->value(), {}};
  for (int r = 0; r < kDropReasons; ++r) t.dropped[r] = dropped_[r]->value();
  return t;
}

}  // namespace stripeline::daemon
