// The daemon's scan loop and lifecycle. Its parts: the per-scan sink
// (scan_writer.cpp), the metrics (daemon_metrics.cpp), what is known of the
// camera and the closing of lost ones (camera_supervisor.cpp), HTTP, signals
// and systemd (http_server.cpp, signals.cpp, systemd_notify.cpp).
//
// Threads and locks:
//   main thread      run(): generation after generation (one pipeline each);
//                    replaces cfg_ and the publisher between generations.
//   pipeline threads the pipeline's filters; the sink stage calls ScanWriter
//                    and the progress callback (metrics, watchdog).
//   signal thread    on_signal(): SIGHUP loads and checks the new file outside
//                    any lock, then posts it; SIGTERM/SIGINT post a stop.
//   housekeeping     housekeeping(): idle scan ends, stats ticks, watchdog,
//                    the stop deadline.
//   HTTP thread      /healthz (health_text) and /metrics (collect).
//   camera reaper    CameraSupervisor's: closes a lost camera.
// mu_ guards every member below it in the class (the flags, the pending
// config, the pointers to the running pipeline/source/scans, cfg_, the
// publisher pointer) and is never held while calling sd_notify, while a
// pipeline runs, or while waiting for the reaper. DaemonMetrics,
// CameraSupervisor, the Publisher and the ScanWriter each guard their own
// state and never call back into the daemon, so taking mu_ then one of
// theirs is the only lock order.
#include "daemon/daemon.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <malloc.h>

#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <ctime>
#include <mutex>
#include <optional>
#include <thread>

#include "app/config.h"
#include "app/sources.h"
#include "core/errors.h"
#include "daemon/camera_supervisor.h"
#include "daemon/daemon_metrics.h"
#include "daemon/http_server.h"
#include "daemon/instrumented_source.h"
#include "daemon/scan_writer.h"
#include "daemon/signals.h"
#include "daemon/systemd_notify.h"
#include "io/atomic_file.h"
#include "pipeline/pipeline.h"
#include "streaming/publisher.h"

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

// The publisher a configuration streams with: its section, with the
// output's height code and filters, the filters on the processing backend.
std::optional<PublisherConfig> stream_of(const Config& c) {
  if (!c.publish) return std::nullopt;
  return publisher_for_outputs(c.publisher, c.output, c.pipeline.backend);
}

class Daemon {
 public:
  Daemon(std::filesystem::path path, std::function<void(Config&)> overrides)
      : path_(std::move(path)), overrides_(std::move(overrides)), metrics_(registry_) {}
  int run();

 private:
  enum class End { Stopped, Reload, SourceEnd, Failed, CameraLost, CameraUnavailable };
  End generation(const Config& cfg);
  void use_publisher(const Config& cfg);
  void on_signal(int sig);
  void housekeeping();
  void collect();
  // (healthy, text) for /healthz. Requires mu_.
  std::pair<bool, std::string> health_locked();
  void apply_log_level(const Config& c);
  bool wait_before_reconnect();  // false when stopping

  const std::filesystem::path path_;
  const std::function<void(Config&)> overrides_;
  Config load() const {
    Config c = load_config(path_);
    if (overrides_) overrides_(c);
    return c;
  }
  const bool verbose_ = spdlog::get_level() <= spdlog::level::debug;
  const std::string run_stamp_ = utc_stamp();
  Registry registry_;
  DaemonMetrics metrics_;
  SystemdNotifier notifier_;
  CameraSupervisor camera_;
  std::uint64_t next_scan_ = 1;  // main thread only

  // Guarded by mu_ (see the top of the file).
  std::mutex mu_;
  std::condition_variable cv_;
  Config cfg_;
  std::unique_ptr<Publisher> publisher_;
  bool stop_ = false, reload_ = false, running_ = false, housekeeping_stop_ = false;
  std::optional<clock::time_point> stop_at_;
  std::optional<Config> pending_;
  Pipeline* pipeline_ = nullptr;
  InstrumentedSource* source_ = nullptr;
  ScanWriter* scans_ = nullptr;
};

void Daemon::apply_log_level(const Config& c) {
  // `stripeline -v daemon` keeps debug whatever the config says.
  if (!verbose_) spdlog::set_level(spdlog::level::from_str(c.daemon.log_level));
}

void Daemon::collect() {
  std::lock_guard lock(mu_);
  DaemonSnapshot s;
  if (source_) {
    s.has_source = true;
    s.frames = source_->frames();
    s.missing = source_->missing();
    s.in_flight = source_->in_flight();
    s.acquisition = source_->acquisition_counters();
  }
  if (publisher_) {
    s.publisher = publisher_->counters();
    s.subscribers = publisher_->subscribers();
  }
  s.healthy = health_locked().first;
  s.camera_connected = camera_.connected();
  metrics_.collect(s);
}

std::pair<bool, std::string> Daemon::health_locked() {
  if (stop_) return {false, "stopping\n"};
  if (auto degraded = camera_.degraded(cfg_.camera.reconnect_interval)) return {false, *degraded};
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
      Config c = load();
      c.publisher.curve.check_key_files();  // a reload must not fail later on a key file
      std::lock_guard lock(mu_);
      if (!(c.http == cfg_.http)) spdlog::warn("daemon: [http] changes take effect at the next start");
      pending_ = std::move(c);
      reload_ = true;
      if (scans_) scans_->set_end_reason("reload");
      if (pipeline_) pipeline_->stop();
      if (source_) source_->stop();
      cv_.notify_all();
    } catch (const std::exception& e) {
      metrics_.reload(false);
      spdlog::error("daemon: SIGHUP: configuration rejected, keeping the running one: {}", e.what());
      return;
    }
    metrics_.reload(true);
    notifier_.reloading("reloading configuration");
    return;
  }
  // SIGTERM, SIGINT
  {
    std::lock_guard lock(mu_);
    if (stop_) {
      // A second stop signal: abort at once. The open scan's temporaries are
      // removed (io/atomic_file.h); its files and series-end are not written.
      const int removed = io::remove_live_temporaries();
      spdlog::warn("daemon: {} again: aborting without finishing the open scan ({} temporar{} removed); exit {}",
                   sig == SIGINT ? "SIGINT" : "SIGTERM", removed, removed == 1 ? "y" : "ies", 128 + sig);
      spdlog::default_logger()->flush();
      std::_Exit(128 + sig);
    }
    spdlog::info("daemon: {}: stopping (draining the batches in flight)", sig == SIGINT ? "SIGINT" : "SIGTERM");
    stop_ = true;
    stop_at_ = clock::now();
    if (scans_) scans_->set_end_reason("stopped");
    if (pipeline_) pipeline_->stop();
    if (source_) source_->stop();
    cv_.notify_all();
  }
  notifier_.stopping("stopping: draining");
}

void Daemon::housekeeping() {
  std::unique_lock lock(mu_);
  while (!housekeeping_stop_) {
    cv_.wait_for(lock, std::chrono::milliseconds(100));
    if (housekeeping_stop_) break;
    const auto now = clock::now();
    if (stop_at_ && now - *stop_at_ > std::chrono::duration<double>(cfg_.daemon.stop_timeout)) {
      io::remove_live_temporaries();  // std::_Exit does not unwind: the open scan's temporaries go now
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
    if (!stop_ && notifier_.is_ready() && (!running_ || health_locked().first)) {
      lock.unlock();  // sd_notify may block (a full notify queue): never with mu_ held, or /healthz waits too
      notifier_.watchdog();
      lock.lock();
    }
  }
}

// Keeps the running publisher when the configuration did not change it (its
// subscribers stay connected across scans and reloads), else replaces it.
void Daemon::use_publisher(const Config& cfg) {
  const std::optional<PublisherConfig> wanted = stream_of(cfg);
  {
    std::lock_guard lock(mu_);
    if (publisher_ && wanted && publisher_->config() == *wanted) return;
    if (!publisher_ && !wanted) return;
  }
  collect();  // count what the old publisher did before it goes
  std::unique_ptr<Publisher> old;
  {
    std::lock_guard lock(mu_);
    old = std::move(publisher_);
  }
  old.reset();  // closing lingers (linger_ms): never with mu_ held
  metrics_.publisher_replaced();
  if (!wanted) return;
  // A reload may rebind the same endpoint: the old socket closes asynchronously.
  const auto deadline = clock::now() + std::chrono::seconds(3);
  while (true) {
    try {
      auto p = std::make_unique<Publisher>(*wanted);
      std::lock_guard lock(mu_);
      publisher_ = std::move(p);
      return;
    } catch (const ConfigError&) {
      throw;
    } catch (const InputError&) {
      if (clock::now() > deadline) throw;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
}

Daemon::End Daemon::generation(const Config& cfg) {
  {  // a lost camera still closing: wait for it, unless told to stop
    std::unique_lock lock(mu_);
    if (camera_.reaping()) spdlog::info("daemon: waiting for the lost camera's connection to close before reopening it");
    while (camera_.reaping() && !stop_ && !reload_) cv_.wait_for(lock, std::chrono::milliseconds(50));
    if (stop_) return End::Stopped;
    if (reload_) return End::Reload;  // reopen with the new configuration
  }
  camera_.join();
  auto inner = make_source(cfg);  // a camera: DeviceUnavailable / ConfigError, handled by run()
  if (cfg.source != SourceKind::Camera) {
    camera_.no_camera();
  } else if (const auto away = camera_.opened()) {
    metrics_.camera_reconnected();
    spdlog::info("daemon: camera back after {:.1f} s; a new series starts", *away);
  }
  InstrumentedSource source(*inner, cfg.daemon.rate, [this](SourceEnd why) {
    if (why != SourceEnd::DeviceLost) return;
    std::lock_guard lock(mu_);
    if (scans_) scans_->set_end_reason("camera-lost");  // before the pipeline finishes the scan
  });
  use_publisher(cfg);
  if (cfg.output.any_file()) {
    check_output_files(cfg.output);
    create_output_dir(cfg.output.dir);
    // Leftovers of a killed daemon (<start>-<NNNNNN>-<name> temporaries whose process is gone).
    for (const auto& p : sweep_stale_outputs(cfg.output)) spdlog::warn("daemon: removed {}, left by an interrupted run (its process is gone)", p.string());
  }
  Publisher* publisher = nullptr;
  {
    std::lock_guard lock(mu_);
    publisher = publisher_.get();
  }
  const std::string endpoint = publisher ? publisher->endpoint() : "off";
  ScanWriter scans(
      cfg.daemon, cfg.output, cfg.pipeline.backend, publisher, run_stamp_, next_scan_,
      [&] {
        spdlog::info("daemon: ready: {} -> {} backend -> scans in {} (every {} rows), publisher {}", source.describe(),
                     to_string(resolve_backend(cfg.pipeline.backend)), cfg.output.dir.string(), cfg.daemon.scan_rows, endpoint);
        notifier_.ready(fmt::format("running: publisher {}", endpoint));
      },
      [&](const ScanResult&) { metrics_.scan_completed(); });
  PipelineOptions options = cfg.pipeline;
  {  // the calibration file (InputError at the first start: exit 2), the ROI offsets from the camera's read-back
    const BatchLayout layout = inner->frame_layout();
    auto* cam = dynamic_cast<CameraSource*>(inner.get());
    options.sheet = load_applied_calibration(cfg.calibration, layout.width, layout.frame_height, cam ? &cam->settings() : nullptr);
    if (options.sheet) spdlog::info("daemon: calibration {} (id {}) applied: points in mm", options.sheet->file, options.sheet->id);
  }
  Pipeline pipeline(options);
  metrics_.new_pipeline();
  {
    std::lock_guard lock(mu_);
    pipeline_ = &pipeline;
    source_ = &source;
    scans_ = &scans;
    running_ = true;
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
      metrics_.on_batch(s, source.batch_done());
      notifier_.watchdog();
    });
  } catch (const std::exception& e) {
    spdlog::error("daemon: the pipeline failed: {}", e.what());
    end = End::Failed;
  }
  collect();
  next_scan_ = scans.next_scan_number();
  const bool lost = source.end_reason() == SourceEnd::DeviceLost;
  if (lost) {  // counted even if a signal ended the run at the same time
    auto* cam = dynamic_cast<CameraSource*>(inner.get());
    camera_.lost(cam ? cam->loss_reason() : "no answer");
    metrics_.camera_lost(cam ? cam->loss_detection_seconds() : 0.0);
    notifier_.status("degraded: camera lost; reconnecting");
  }
  {
    std::lock_guard lock(mu_);
    pipeline_ = nullptr;
    source_ = nullptr;
    scans_ = nullptr;
    running_ = false;
  }
  // A camera is closed off this thread: closing one that is gone (lost, or
  // not yet noticed when a signal came) takes Aravis seconds of retries.
  if (cfg.source == SourceKind::Camera) camera_.reap(std::move(inner));  // `source` refers to it but is not used again
  std::lock_guard lock(mu_);
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
  // Per-scan buffers (height-map codes, a scan's rows: megabytes each) are
  // allocated and freed once per scan, for weeks. glibc raises its mmap
  // threshold after the first such free, and from then on they come from the
  // heap, whose free space fragments and grows slowly over the scans. A fixed
  // threshold keeps every buffer of 1 MiB or more in its own mapping,
  // returned to the system when freed (bench/soak.sh measures the RSS slope).
  ::mallopt(M_MMAP_THRESHOLD, 1 << 20);
  cfg_ = load();
  apply_log_level(cfg_);
  registry_.set_collector([this] { collect(); });
  SignalThread signals([this](int sig) { on_signal(sig); });
  std::unique_ptr<HttpServer> http;
  if (cfg_.http.enabled)
    http = std::make_unique<HttpServer>(cfg_.http.address, cfg_.http.port, [this] { return registry_.render(); },
                                        [this] {
                                          std::lock_guard lock(mu_);
                                          return health_locked();
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
    const Config cfg = [this] {
      std::lock_guard lock(mu_);
      return cfg_;
    }();
    End end = End::Failed;
    try {
      end = generation(cfg);
    } catch (const DeviceUnavailable& e) {
      // No camera (yet, or again): a daemon waits for it, degraded, rather than exit.
      if (camera_.unavailable(e.what()))
        spdlog::warn("daemon: camera: {}; retrying every {} s", e.what(), cfg.camera.reconnect_interval);
      if (camera_.attempts() == 1) notifier_.ready(fmt::format("waiting for the camera: {}", e.what()));
      end = End::CameraUnavailable;
    } catch (const InputError& e) {
      if (first) throw;  // a bad key file, endpoint or camera setting at start: exit 2 with its one line
      spdlog::error("daemon: cannot start the pipeline: {}", e.what());
      if (cfg.source == SourceKind::Camera) {  // a replaced camera that refuses a setting: keep trying, loudly
        camera_.unavailable(e.what());
        end = End::CameraUnavailable;
      }
    } catch (const std::exception& e) {
      spdlog::error("daemon: cannot start the pipeline: {}", e.what());
      end = End::Failed;
    }
    // A camera setting refused at start is a configuration error (exit 2)
    // until the pipeline has run once, even if the camera came late.
    if (end != End::CameraUnavailable || camera_.connected_before()) first = false;
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
  const bool stopped_by_signal = [this] {
    std::lock_guard lock(mu_);
    return stop_;
  }();
  if (!stopped_by_signal) notifier_.stopping(rc ? "failed" : "stopping");
  collect();
  const auto t = metrics_.totals();
  spdlog::info(
      "daemon: stopped: frames acquired {}, profiles emitted {}, published {}, dropped {} (hwm {}, no_subscriber {}, error {}); scans {}",
      t.frames, t.profiles, t.published, t.dropped[0] + t.dropped[1] + t.dropped[2], t.dropped[0], t.dropped[1], t.dropped[2], t.scans);
  std::unique_ptr<Publisher> last;
  {
    std::lock_guard lock(mu_);
    last = std::move(publisher_);
  }
  last.reset();  // lingers so that series-end reaches connected subscribers
  metrics_.set_up(false);
  // A healthy camera closes in milliseconds: give the reaper a moment.
  for (int i = 0; i < 40 && camera_.reaping(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  if (camera_.reaping()) {
    // Everything is written and sent; only Aravis' retries to a gone camera remain.
    spdlog::info("daemon: exiting without waiting for the lost camera's connection to close");
    spdlog::default_logger()->flush();
    std::_Exit(rc);
  }
  camera_.join();
  spdlog::default_logger()->flush();
  return rc;
}

}  // namespace

int run_daemon(const std::filesystem::path& config_path, std::function<void(Config&)> overrides) {
  Daemon d(config_path, std::move(overrides));
  return d.run();
}

}  // namespace stripeline::daemon
