#include "daemon/daemon.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <ctime>
#include <mutex>
#include <optional>
#include <thread>

#include "acquisition/camera_source.h"
#include "acquisition/file_source.h"
#include "acquisition/synthetic_scanner.h"
#include "core/errors.h"
#include "daemon/http_server.h"
#include "daemon/instrumented_source.h"
#include "daemon/metrics.h"
#include "daemon/scan_writer.h"
#include "daemon/signals.h"
#include "daemon/systemd_notify.h"
#include "pipeline/config.h"
#include "pipeline/pipeline.h"
#include "pipeline/publisher.h"

namespace stripeline::daemon {

namespace {

using clock = std::chrono::steady_clock;

std::string utc_stamp() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}


class Daemon {
 public:
  explicit Daemon(std::filesystem::path path) : path_(std::move(path)) {}
  int run();

 private:
  enum class End { Stopped, Reload, SourceEnd, Failed, CameraLost, CameraUnavailable };
  End generation(const Config& cfg);
  void on_signal(int sig);
  void housekeeping();
  void register_metrics();
  void collect();  // brings metrics up to date
  std::pair<bool, std::string> health();
  void apply_log_level(const Config& c);
  bool wait_before_reconnect();  // false when stopping
  // A lost camera is closed on a thread of its own: Aravis spends seconds
  // retrying a camera that is gone, and the daemon must stay responsive. It
  // must be fully closed before the camera is opened again (closing sends
  // "leave control", which would otherwise hit the new session).
  void reap_camera(std::unique_ptr<FrameSource> lost);
  void join_reaper();
  std::thread reaper_;
  std::atomic<bool> reaping_{false};

  // The camera, when the source is one (what /healthz and /metrics say of it).
  enum class CameraState { None, Connected, Lost, Unavailable };
  CameraState camera_state_ = CameraState::None;
  std::string camera_message_;
  clock::time_point camera_since_ = clock::now();
  std::uint64_t camera_attempts_ = 0;
  bool camera_connected_before_ = false;

  std::filesystem::path path_;
  bool verbose_ = spdlog::get_level() <= spdlog::level::debug;
  Config cfg_;
  std::string run_stamp_ = utc_stamp();
  std::uint64_t next_scan_ = 1;
  Registry metrics_;
  SystemdNotifier notifier_;
  std::unique_ptr<Publisher> publisher_;

  // What the signal and housekeeping threads may touch, under mu_.
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false, reload_ = false, running_ = false;
  std::optional<clock::time_point> stop_at_;
  std::optional<Config> pending_;
  Pipeline* pipeline_ = nullptr;
  InstrumentedSource* source_ = nullptr;
  ScanWriter* scans_ = nullptr;
  clock::time_point last_progress_ = clock::now();
  bool housekeeping_stop_ = false;

  // Metrics bookkeeping (collect() turns snapshots into monotonic counters).
  std::mutex collect_mu_;
  PublisherCounters last_pub_{};
  std::uint64_t last_frames_ = 0, last_missing_ = 0;
  AcquisitionCounters last_acq_{};
  PipelineStats last_stats_{};

  Counter *frames_ = nullptr, *missing_ = nullptr, *profiles_ = nullptr, *points_ = nullptr, *overflow_ = nullptr, *batches_ = nullptr,
          *compute_ = nullptr, *bytes_ = nullptr, *published_ = nullptr, *hm_rows_ = nullptr, *msgs_ = nullptr, *pub_bytes_ = nullptr,
          *scans_done_ = nullptr, *series_ = nullptr, *reload_ok_ = nullptr, *reload_bad_ = nullptr;
  std::array<Counter*, kDropReasons> dropped_{}, msg_dropped_{};
  Counter *lost_gap_ = nullptr, *lost_incomplete_ = nullptr, *lost_timeout_ = nullptr, *lost_failed_ = nullptr, *underruns_ = nullptr, *late_ = nullptr,
          *flushed_ = nullptr, *camera_losses_ = nullptr, *camera_reconnects_ = nullptr;
  Gauge *camera_connected_ = nullptr, *camera_detect_ = nullptr;
  Gauge *queue_ = nullptr, *subscribers_ = nullptr, *up_ = nullptr, *start_time_ = nullptr, *healthy_ = nullptr;
  Summary *latency_ = nullptr, *compute_per_batch_ = nullptr;
};

void Daemon::apply_log_level(const Config& c) {
  // `stripeline -v daemon` keeps debug whatever the config says.
  if (!verbose_) spdlog::set_level(spdlog::level::from_str(c.daemon.log_level));
}

// A reload must not fail later on a key file: check them now.
void check_key_files(const Config& c) {
  if (!c.publish || !c.publisher.curve.enabled) return;
  read_curve_key(c.publisher.curve.server_secret_key, true);
  for (const auto& k : c.publisher.curve.client_keys) read_curve_key(k, false);
}

void Daemon::register_metrics() {
  auto& m = metrics_;
  frames_ = &m.counter("stripeline_frames_acquired_total", "Frames delivered by the source.");
  missing_ = &m.counter("stripeline_frames_missing_total", "Frames the source reported as never arrived (their profiles are empty).");
  profiles_ = &m.counter("stripeline_profiles_emitted_total", "Profiles (height rows) produced by the pipeline, one per frame.");
  points_ = &m.counter("stripeline_points_total", "Detected points in the profiles.");
  overflow_ = &m.counter("stripeline_points_overflow_total", "Points found beyond the output slots (counted, not written).");
  batches_ = &m.counter("stripeline_batches_total", "Batches processed.");
  bytes_ = &m.counter("stripeline_pixel_bytes_total", "Pixel bytes processed.");
  compute_ = &m.counter("stripeline_compute_seconds_total", "Processor (CPU or GPU) time summed over batches.");
  published_ = &m.counter("stripeline_profiles_published_total", "Profile rows sent to subscribers.");
  for (int r = 0; r < kDropReasons; ++r) {
    const std::string label = fmt::format("reason=\"{}\"", to_string(static_cast<DropReason>(r)));
    dropped_[r] = &m.counter("stripeline_profiles_dropped_total", "Profile rows not sent, by reason (hwm, no_subscriber, error).", label);
  }
  hm_rows_ = &m.counter("stripeline_heightmap_rows_published_total", "Rows sent in heightmap messages.");
  msgs_ = &m.counter("stripeline_messages_published_total", "Messages sent (all topics).");
  for (int r = 0; r < kDropReasons; ++r) {
    const std::string label = fmt::format("reason=\"{}\"", to_string(static_cast<DropReason>(r)));
    msg_dropped_[r] = &m.counter("stripeline_messages_dropped_total", "Messages not sent, by reason.", label);
  }
  pub_bytes_ = &m.counter("stripeline_published_bytes_total", "Bytes sent (all parts of all messages).");
  series_ = &m.counter("stripeline_series_total", "Wire series started (one per scan).");
  scans_done_ = &m.counter("stripeline_scans_completed_total", "Scans whose files were completed.");
  reload_ok_ = &m.counter("stripeline_config_reloads_total", "SIGHUP reloads, by result.", "result=\"applied\"");
  reload_bad_ = &m.counter("stripeline_config_reloads_total", "SIGHUP reloads, by result.", "result=\"rejected\"");
  queue_ = &m.gauge("stripeline_queue_depth_batches", "Batches acquired but not yet through every sink.");
  subscribers_ = &m.gauge("stripeline_subscribers", "Subscriptions matching the profile topic.");
  healthy_ = &m.gauge("stripeline_healthy", "1 when no batch is stalled in flight.");
  up_ = &m.gauge("stripeline_up", "1 while the daemon runs.");
  start_time_ = &m.gauge("stripeline_start_time_seconds", "Daemon start, seconds since the Unix epoch.");
  latency_ = &m.summary("stripeline_batch_latency_seconds", "Time from a batch leaving the source to its last sink (recent 1024 batches).");
  compute_per_batch_ = &m.summary("stripeline_batch_compute_seconds", "Processor (CPU or GPU) time per batch (recent 1024 batches).");
  const char* lost_help = "Camera frames lost, counted by size, by cause (every one in the stream is a missing row).";
  lost_gap_ = &m.counter("stripeline_frames_lost_total", lost_help, "cause=\"gap\"");
  lost_incomplete_ = &m.counter("stripeline_frames_lost_total", lost_help, "cause=\"incomplete\"");
  lost_timeout_ = &m.counter("stripeline_frames_lost_total", lost_help, "cause=\"timeout\"");
  lost_failed_ = &m.counter("stripeline_frames_lost_total", lost_help, "cause=\"failed\"");
  underruns_ = &m.counter("stripeline_camera_underruns_total", "The camera driver's underrun count: data that found no free buffer (Aravis 0.8 counts packets, not frames; the frames are in the gap count).");
  late_ = &m.counter("stripeline_camera_frames_late_total", "Frames completed after a newer one (already counted as gap): dropped.");
  flushed_ = &m.counter("stripeline_batches_flushed_total", "Partial batches handed on by camera.flush_timeout.");
  camera_losses_ = &m.counter("stripeline_camera_losses_total", "Times the camera stopped answering.");
  camera_reconnects_ = &m.counter("stripeline_camera_reconnects_total", "Times a lost camera was opened again (each starts a new series).");
  camera_connected_ = &m.gauge("stripeline_camera_connected", "1 while the camera streams, 0 while lost or not found (no camera source: 0).");
  camera_detect_ = &m.gauge("stripeline_camera_loss_detection_seconds", "Last loss: seconds from the camera's last sign of life to the loss being declared.");
  up_->set(1);
  start_time_->set(static_cast<double>(std::time(nullptr)));
  metrics_.set_collector([this] { collect(); });
}

void Daemon::collect() {
  std::scoped_lock lock(mu_, collect_mu_);
  if (source_) {
    const auto f = source_->frames(), miss = source_->missing();
    frames_->add(static_cast<double>(f - last_frames_));
    missing_->add(static_cast<double>(miss - last_missing_));
    last_frames_ = f;
    last_missing_ = miss;
    queue_->set(static_cast<double>(source_->in_flight()));
    if (const auto a = source_->acquisition_counters()) {
      lost_gap_->add(static_cast<double>(a->lost_gap - last_acq_.lost_gap));
      lost_incomplete_->add(static_cast<double>(a->lost_incomplete - last_acq_.lost_incomplete));
      lost_timeout_->add(static_cast<double>(a->lost_timeout - last_acq_.lost_timeout));
      lost_failed_->add(static_cast<double>(a->lost_failed - last_acq_.lost_failed));
      underruns_->add(static_cast<double>(a->underruns - last_acq_.underruns));
      late_->add(static_cast<double>(a->arrived_late - last_acq_.arrived_late));
      flushed_->add(static_cast<double>(a->batches_flushed - last_acq_.batches_flushed));
      last_acq_ = *a;
    }
  } else {
    queue_->set(0);
  }
  if (publisher_) {
    const PublisherCounters c = publisher_->counters();
    published_->add(static_cast<double>(c.rows_published - last_pub_.rows_published));
    hm_rows_->add(static_cast<double>(c.heightmap_rows_published - last_pub_.heightmap_rows_published));
    msgs_->add(static_cast<double>(c.messages_sent - last_pub_.messages_sent));
    pub_bytes_->add(static_cast<double>(c.bytes_sent - last_pub_.bytes_sent));
    series_->add(static_cast<double>(c.series - last_pub_.series));
    for (int r = 0; r < kDropReasons; ++r) {
      dropped_[r]->add(static_cast<double>(c.rows_dropped[r] - last_pub_.rows_dropped[r]));
      msg_dropped_[r]->add(static_cast<double>(c.messages_dropped[r] - last_pub_.messages_dropped[r]));
    }
    last_pub_ = c;
    subscribers_->set(publisher_->subscribers());
  } else {
    subscribers_->set(0);
  }
  healthy_->set(health().first ? 1 : 0);
  camera_connected_->set(camera_state_ == CameraState::Connected ? 1 : 0);
}

std::pair<bool, std::string> Daemon::health() {
  // Called with or without mu_ held by the caller? Only with it held (collect) or via health_locked.
  if (stop_) return {false, "stopping\n"};
  if (camera_state_ == CameraState::Lost || camera_state_ == CameraState::Unavailable) {
    const double since = std::chrono::duration<double>(clock::now() - camera_since_).count();
    return {false, fmt::format("degraded: camera {} for {:.1f} s ({}); reconnecting every {} s, {} attempts\n",
                               camera_state_ == CameraState::Lost ? "lost" : "not available", since, camera_message_,
                               cfg_.camera.reconnect_interval, camera_attempts_)};
  }
  if (!running_) return {true, "ok: idle (source ended; SIGHUP restarts it)\n"};
  if (source_) {
    const double oldest = source_->oldest_in_flight_seconds();
    if (oldest > cfg_.daemon.stall_timeout)
      return {false, fmt::format("stalled: a batch has been in flight for {:.1f} s (daemon.stall_timeout {} s)\n", oldest,
                                 cfg_.daemon.stall_timeout)};
  }
  return {true, "ok\n"};
}

void Daemon::on_signal(int sig) {
  if (sig == SIGHUP) {
    spdlog::info("daemon: SIGHUP: reloading {}", path_.string());
    try {
      Config c = load_config(path_);
      check_key_files(c);
      if (!(c.http.enabled == cfg_.http.enabled && c.http.address == cfg_.http.address && c.http.port == cfg_.http.port))
        spdlog::warn("daemon: [http] changes take effect at the next start");
      std::lock_guard lock(mu_);
      pending_ = std::move(c);
      reload_ = true;
      if (scans_) scans_->set_end_reason("reload");
      if (pipeline_) pipeline_->stop();
      if (source_) source_->stop();
      cv_.notify_all();
      reload_ok_->add(1);
      notifier_.reloading("reloading configuration");
    } catch (const std::exception& e) {
      reload_bad_->add(1);
      spdlog::error("daemon: SIGHUP: configuration rejected, keeping the running one: {}", e.what());
    }
    return;
  }
  // SIGTERM, SIGINT
  std::lock_guard lock(mu_);
  if (stop_) {
    spdlog::warn("daemon: {} again: still draining (exit within daemon.stop_timeout = {} s)", sig == SIGINT ? "SIGINT" : "SIGTERM",
                 cfg_.daemon.stop_timeout);
    return;
  }
  spdlog::info("daemon: {}: stopping (draining the batches in flight)", sig == SIGINT ? "SIGINT" : "SIGTERM");
  stop_ = true;
  stop_at_ = clock::now();
  if (scans_) scans_->set_end_reason("stopped");
  if (pipeline_) pipeline_->stop();
  if (source_) source_->stop();
  cv_.notify_all();
  notifier_.stopping("stopping: draining");
}

void Daemon::housekeeping() {
  std::unique_lock lock(mu_);
  while (!housekeeping_stop_) {
    cv_.wait_for(lock, std::chrono::milliseconds(100));
    if (housekeeping_stop_) break;
    const auto now = clock::now();
    if (stop_at_ && now - *stop_at_ > std::chrono::duration<double>(cfg_.daemon.stop_timeout)) {
      spdlog::critical("daemon: did not stop within daemon.stop_timeout = {} s; exiting 1 (files of the open scan are not kept)",
                       cfg_.daemon.stop_timeout);
      spdlog::default_logger()->flush();
      std::_Exit(1);
    }
    if (scans_) scans_->tick(now);
    if (publisher_) publisher_->tick();
    // The processing loop pings the watchdog after each batch; while the
    // source waits for frames with nothing stuck in flight, so do we.
    // Between pipelines (waiting for a camera, for its old connection to
    // close, or idle after the source ended) the main loop only waits, on
    // deadlines: it is alive, degraded or not, and a watchdog restart would
    // not bring the camera back.
    if (!stop_ && notifier_.is_ready() && (!running_ || health().first)) {
      lock.unlock();  // sd_notify may block (a full notify queue): never with mu_ held, or /healthz waits too
      notifier_.watchdog();
      lock.lock();
    }
  }
}

void Daemon::reap_camera(std::unique_ptr<FrameSource> lost) {
  join_reaper();
  reaping_ = true;
  reaper_ = std::thread([this, s = std::move(lost)]() mutable {
    s.reset();
    reaping_ = false;
  });
}

void Daemon::join_reaper() {
  if (reaper_.joinable()) reaper_.join();
}

Daemon::End Daemon::generation(const Config& cfg) {
  {  // a lost camera still closing: wait for it, unless told to stop
    std::unique_lock lock(mu_);
    if (reaping_.load()) spdlog::info("daemon: waiting for the lost camera's connection to close before reopening it");
    while (reaping_.load() && !stop_ && !reload_) cv_.wait_for(lock, std::chrono::milliseconds(50));
    if (stop_) return End::Stopped;
    if (reload_) return End::Reload;  // reopen with the new configuration
  }
  join_reaper();
  auto inner = make_source(cfg);  // a camera: DeviceUnavailable / ConfigError, handled by run()
  if (cfg.source != SourceKind::Camera) {
    std::lock_guard lock(mu_);
    camera_state_ = CameraState::None;  // a reload moved off the camera
    camera_connected_before_ = false;
  } else {
    std::lock_guard lock(mu_);
    if (camera_connected_before_) {
      camera_reconnects_->add(1);
      spdlog::info("daemon: camera back after {:.1f} s; a new series starts",
                   std::chrono::duration<double>(clock::now() - camera_since_).count());
    }
    camera_state_ = CameraState::Connected;
    camera_connected_before_ = true;
    camera_attempts_ = 0;
    camera_since_ = clock::now();
  }
  InstrumentedSource source(*inner, cfg.daemon.rate, [this](SourceEnd why) {
    if (why != SourceEnd::DeviceLost) return;
    std::lock_guard lock(mu_);
    if (scans_) scans_->set_end_reason("camera-lost");  // before the pipeline finishes the scan
  });
  if (cfg.publish) {
    if (!publisher_ || !(publisher_->config() == cfg.publisher)) {
      collect();  // count what the old publisher did before it goes
      {
        std::lock_guard lock(mu_);
        std::lock_guard clock_(collect_mu_);
        publisher_.reset();
        last_pub_ = {};
      }
      // A reload may rebind the same endpoint: the old socket closes asynchronously.
      const auto deadline = clock::now() + std::chrono::seconds(3);
      while (true) {
        try {
          auto p = std::make_unique<Publisher>(cfg.publisher);
          std::lock_guard lock(mu_);
          publisher_ = std::move(p);
          break;
        } catch (const ConfigError&) {
          throw;
        } catch (const InputError&) {
          if (clock::now() > deadline) throw;
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
      }
    }
  } else if (publisher_) {
    collect();
    std::lock_guard lock(mu_);
    std::lock_guard clock_(collect_mu_);
    publisher_.reset();
    last_pub_ = {};
  }
  const auto& out = cfg.output;
  if (!out.ply.empty() || !out.heightmap.empty() || !out.preview.empty() || !out.summary.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(out.dir, ec);
    if (ec || !std::filesystem::is_directory(out.dir))
      throw InputError(out.dir.string() + ": cannot create the output directory (" + (ec ? ec.message() : "not a directory") + ")");
  }
  const std::string endpoint = publisher_ ? publisher_->endpoint() : "off";
  ScanWriter scans(
      cfg.daemon, cfg.output, publisher_.get(), run_stamp_, next_scan_,
      [&] {
        spdlog::info("daemon: ready: {} -> {} backend -> scans in {} (every {} rows), publisher {}", source.describe(),
                     to_string(resolve_backend(cfg.pipeline.backend)), cfg.output.dir.string(), cfg.daemon.scan_rows, endpoint);
        notifier_.ready(fmt::format("running: publisher {}", endpoint));
      },
      [&](const ScanResult&) { scans_done_->add(1); });
  Pipeline pipeline(cfg.pipeline);
  {
    std::lock_guard lock(mu_);
    pipeline_ = &pipeline;
    source_ = &source;
    scans_ = &scans;
    running_ = true;
    last_frames_ = 0;
    last_missing_ = 0;
    last_acq_ = AcquisitionCounters{};
    last_stats_ = PipelineStats{};
    if (stop_ || reload_) {  // a signal arrived while we were setting up
      scans.set_end_reason(stop_ ? "stopped" : "reload");
      pipeline.stop();
      source.stop();
    }
  }
  End end = End::SourceEnd;
  try {
    pipeline.run(source, {&scans}, [&](const PipelineStats& s) {
      // Sink stage, once per batch, in order: the processing loop.
      const auto latency = source.batch_done();
      if (latency) latency_->observe(*latency);
      const double compute_ms = s.compute_ms - last_stats_.compute_ms;
      compute_per_batch_->observe(compute_ms / 1000.0);
      compute_->add(compute_ms / 1000.0);
      profiles_->add(static_cast<double>(s.profiles - last_stats_.profiles));
      points_->add(static_cast<double>(s.points - last_stats_.points));
      overflow_->add(static_cast<double>(s.overflow - last_stats_.overflow));
      bytes_->add(static_cast<double>(s.bytes - last_stats_.bytes));
      batches_->add(static_cast<double>(s.batches - last_stats_.batches));
      last_stats_ = s;
      notifier_.watchdog();
    });
  } catch (const std::exception& e) {
    spdlog::error("daemon: the pipeline failed: {}", e.what());
    end = End::Failed;
  }
  collect();
  std::lock_guard lock(mu_);
  next_scan_ = scans.next_scan_number();
  pipeline_ = nullptr;
  source_ = nullptr;
  scans_ = nullptr;
  running_ = false;
  const bool lost = source.end_reason() == SourceEnd::DeviceLost;
  if (lost) {  // counted even if a signal ended the run at the same time
    auto* cam = dynamic_cast<CameraSource*>(inner.get());
    camera_state_ = CameraState::Lost;
    camera_since_ = clock::now();
    camera_message_ = cam ? cam->loss_reason() : "no answer";
    camera_losses_->add(1);
    if (cam) camera_detect_->set(cam->loss_detection_seconds());
    notifier_.status("degraded: camera lost; reconnecting");
  }
  // A camera is closed off this thread: closing one that is gone (lost, or
  // not yet noticed when a signal came) takes Aravis seconds of retries.
  if (cfg.source == SourceKind::Camera) reap_camera(std::move(inner));  // `source` refers to it but is not used again
  if (end == End::Failed) return end;
  if (stop_) return End::Stopped;
  if (reload_) return End::Reload;
  return lost ? End::CameraLost : End::SourceEnd;
}

// Between attempts to open the camera: returns early on SIGTERM (false) or
// SIGHUP (true: the reload is applied before the next attempt).
bool Daemon::wait_before_reconnect() {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, std::chrono::duration<double>(cfg_.camera.reconnect_interval), [this] { return stop_ || reload_; });
  return !stop_;
}

int Daemon::run() {
  block_daemon_signals();  // before any thread exists
  cfg_ = load_config(path_);
  apply_log_level(cfg_);
  register_metrics();
  SignalThread signals([this](int sig) { on_signal(sig); });
  std::unique_ptr<HttpServer> http;
  if (cfg_.http.enabled)
    http = std::make_unique<HttpServer>(cfg_.http.address, cfg_.http.port, [this] { return metrics_.render(); },
                                        [this] {
                                          std::lock_guard lock(mu_);
                                          return health();
                                        });
  std::thread keeper([this] { housekeeping(); });
  struct Join {
    Daemon* d;
    std::thread& t;
    ~Join() {
      {
        std::lock_guard lock(d->mu_);
        d->housekeeping_stop_ = true;
        d->cv_.notify_all();
      }
      t.join();
    }
  } join{this, keeper};

  int rc = 0;
  bool first = true;
  while (true) {
    End end = End::Failed;
    try {
      end = generation(cfg_);
    } catch (const DeviceUnavailable& e) {
      // No camera (yet, or again): a daemon waits for it, degraded, rather than exit.
      std::lock_guard lock(mu_);
      if (camera_state_ != CameraState::Lost && camera_state_ != CameraState::Unavailable) camera_since_ = clock::now();
      if (camera_state_ != CameraState::Lost) camera_state_ = CameraState::Unavailable;
      if (camera_attempts_ == 0 || camera_message_ != e.what()) spdlog::warn("daemon: camera: {}; retrying every {} s", e.what(), cfg_.camera.reconnect_interval);
      camera_message_ = e.what();
      ++camera_attempts_;
      if (camera_attempts_ == 1) notifier_.ready(fmt::format("waiting for the camera: {}", e.what()));
      end = End::CameraUnavailable;
    } catch (const InputError& e) {
      if (first) throw;  // a bad key file, endpoint or camera setting at start: exit 2 with its one line
      spdlog::error("daemon: cannot start the pipeline: {}", e.what());
      if (cfg_.source == SourceKind::Camera) {  // a replaced camera that refuses a setting: keep trying, loudly
        std::lock_guard lock(mu_);
        camera_state_ = CameraState::Unavailable;
        camera_message_ = e.what();
        ++camera_attempts_;
        end = End::CameraUnavailable;
      }
    } catch (const std::exception& e) {
      spdlog::error("daemon: cannot start the pipeline: {}", e.what());
      end = End::Failed;
    }
    // A camera setting refused at start is a configuration error (exit 2)
    // until the pipeline has run once, even if the camera came late.
    if (end != End::CameraUnavailable || camera_connected_before_) first = false;
    if (end == End::CameraLost || end == End::CameraUnavailable) {
      if (!wait_before_reconnect()) break;
    }
    if (end == End::Failed) {
      rc = 1;
      break;
    }
    if (end == End::Stopped) break;
    if (end == End::SourceEnd) {
      spdlog::warn("daemon: the source ended; waiting for SIGHUP (restart it) or SIGTERM");
      notifier_.status("idle: the source ended");
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return stop_ || reload_; });
      if (stop_) break;
    }
    std::lock_guard lock(mu_);
    if (reload_ && pending_) {
      cfg_ = std::move(*pending_);
      pending_.reset();
      reload_ = false;
      apply_log_level(cfg_);
      spdlog::info("daemon: configuration {} applied", path_.string());
    }
    if (stop_) break;
  }
  if (!stop_) notifier_.stopping(rc ? "failed" : "stopping");
  collect();
  const auto pub = publisher_ ? publisher_->counters() : PublisherCounters{};
  spdlog::info(
      "daemon: stopped: frames acquired {}, profiles emitted {}, published {}, dropped {} (hwm {}, no_subscriber {}, error {}); scans {}",
      frames_->value(), profiles_->value(), published_->value(), dropped_[0]->value() + dropped_[1]->value() + dropped_[2]->value(),
      dropped_[0]->value(), dropped_[1]->value(), dropped_[2]->value(), scans_done_->value());
  (void)pub;
  {
    std::lock_guard lock(mu_);
    std::lock_guard clock_(collect_mu_);
    publisher_.reset();  // lingers so that series-end reaches connected subscribers
  }
  up_->set(0);
  // A healthy camera closes in milliseconds: give the reaper a moment.
  for (int i = 0; i < 40 && reaping_.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  if (reaping_.load()) {
    // Everything is written and sent; only Aravis' retries to a gone camera remain.
    spdlog::info("daemon: exiting without waiting for the lost camera's connection to close");
    spdlog::default_logger()->flush();
    std::_Exit(rc);
  }
  join_reaper();
  spdlog::default_logger()->flush();
  return rc;
}

}  // namespace

int run_daemon(const std::filesystem::path& config_path) {
  Daemon d(config_path);
  return d.run();
}

}  // namespace stripeline::daemon
