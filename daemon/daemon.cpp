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
//   HTTP thread      /healthz, /livez, /readyz (health_locked, live_locked,
//                    ready_locked) and /metrics (collect); it answers every
//                    connection, so nothing it calls may wait long.
//   viewer thread    ViewerHub's: the live viewer's /events connections,
//                    fed by ViewerFeed (a sink beside the scans, never
//                    waited for) and viewer_health() once a second.
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
#include <nlohmann/json.hpp>
#include <mutex>
#include <optional>
#include <thread>

#include "app/config.h"
#include "app/outputs.h"
#include "app/service_config.h"
#include "calibration/calibration_file.h"
#include "app/run_session.h"
#include "core/errors.h"
#include "daemon/camera_supervisor.h"
#include "daemon/daemon_metrics.h"
#include "daemon/http_server.h"
#include "daemon/instrumented_source.h"
#include "daemon/live_measure.h"
#include "daemon/modbus_server.h"
#include "daemon/process_metrics.h"
#include "daemon/scan_writer.h"
#include "daemon/service_parts.h"
#include "daemon/heads.h"
#include "daemon/signals.h"
#include "daemon/systemd_notify.h"
#include "daemon/viewer_assets.h"
#include "daemon/viewer_feed.h"
#include "daemon/viewer_hub.h"
#include "daemon/viewer_status.h"
#include "io/atomic_file.h"
#include "streaming/publisher.h"

namespace stripeline::daemon {

namespace {

using clock = std::chrono::steady_clock;

class Daemon {
 public:
  Daemon(std::filesystem::path path, std::function<void(Config&)> overrides)
      : path_(std::move(path)), overrides_(std::move(overrides)), metrics_(registry_), process_(registry_) {}
  int run();
  std::unique_ptr<HttpServer> start_http();  // /metrics and the probes, when [http] is on
  int shut_down(int rc);                      // after the last generation: counters, series end, the camera's reaper

 private:
  enum class End { Stopped, Reload, SourceEnd, Failed, CameraLost, CameraUnavailable };
  struct Probe {
    bool ok = true;
    std::string text = "starting\n";
  };

  End generation(const Config& cfg);
  void use_publisher(const Config& cfg);
  void on_signal(int sig);
  void housekeeping();
  // Brings the metrics up to date; from the HTTP thread with a bound on the
  // wait for mu_ (skipped when busy: the last values are served).
  void collect(std::optional<std::chrono::milliseconds> wait = std::nullopt);
  // An answer of /healthz, /livez or /readyz: computed under mu_ when it can
  // be taken within 20 ms, else the last one computed.
  HttpResponse probe(std::pair<bool, std::string> (Daemon::*what)(), Probe Daemon::*last);
  // (healthy, text) for /healthz. Requires mu_.
  std::pair<bool, std::string> health_locked();
  // /livez: the process and its loops turn (what the watchdog pings say). Requires mu_.
  std::pair<bool, std::string> live_locked();
  // /readyz: running and able to deliver. Requires mu_.
  std::pair<bool, std::string> ready_locked();
  std::optional<std::string> stalled_locked();
  // The checks a reloaded configuration passes before it replaces the running one (throws).
  void check_reload(const Config& c) const;
  void apply_log_level(const Config& c);
  // The live viewer's "health" event (a JSON object); from the viewer's
  // thread, waiting at most 20 ms for mu_ (else the last one).
  std::string viewer_health();
  bool wait_before_reconnect();  // false when stopping
  void start_measure();                                      // [measure], [modbus] at start
  void use_job(std::shared_ptr<const measure::Job> job);      // a restarting reload's job (nullptr: no measuring). Requires mu_.

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
  ProcessMetrics process_;
  SystemdNotifier notifier_;
  CameraSupervisor camera_;
  std::uint64_t next_scan_ = 1;  // main thread only

  // Guarded by mu_ (see the top of the file).
  std::timed_mutex mu_;  // timed: the HTTP thread never waits on it for long (see probe())
  std::condition_variable_any cv_;
  Probe last_health_, last_live_, last_ready_;  // the last answers, for when mu_ is busy
  Config cfg_;
  std::unique_ptr<Publisher> publisher_;
  bool stop_ = false, reload_ = false, running_ = false, housekeeping_stop_ = false, idle_ = false;
  clock::time_point housekeeping_beat_ = clock::now();
  std::optional<Config> rollback_;  // the configuration before a reload, until the reloaded one has started
  std::optional<clock::time_point> stop_at_;
  std::optional<Config> pending_;
  Pipeline* pipeline_ = nullptr;
  InstrumentedSource* source_ = nullptr;
  ScanWriter* scans_ = nullptr;
  HttpServer* http_ = nullptr;
  // [measure] and [modbus] (daemon/live_measure.h): made at start, kept across generations.
  std::unique_ptr<ModbusServer> modbus_;
  std::unique_ptr<LiveMeasure> measure_;
  std::shared_ptr<const measure::Job> pending_job_;  // a reload's job, for the next generation

  // The live viewer (http.viewer): its tap on the rows and its thread. Last
  // members: the hub's thread stops before anything it reads goes.
  ViewerFeed viewer_feed_{1024, 25.0};
  std::string viewer_last_health_ = "{}";  // the viewer thread only
  std::unique_ptr<ViewerHub> viewer_;
};

void Daemon::apply_log_level(const Config& c) {
  // `stripeline -v daemon` keeps debug whatever the config says.
  if (!verbose_) spdlog::set_level(spdlog::level::from_str(c.daemon.log_level));
}

void Daemon::collect(std::optional<std::chrono::milliseconds> wait) {
  std::unique_lock lock(mu_, std::defer_lock);
  if (wait) {
    if (!lock.try_lock_for(*wait)) return;
  } else {
    lock.lock();
  }
  metrics_.collect(snapshot_of(source_, publisher_.get(), health_locked().first, camera_.connected(),
                               http_ ? std::optional<HttpServer::Stats>(http_->stats()) : std::nullopt));
  process_.update();
  if (measure_) measure_->collect();
}

HttpResponse Daemon::probe(std::pair<bool, std::string> (Daemon::*what)(), Probe Daemon::*last) {
  std::unique_lock lock(mu_, std::defer_lock);
  if (lock.try_lock_for(std::chrono::milliseconds(20))) {
    const auto [ok, text] = (this->*what)();
    this->*last = Probe{ok, text};
  }
  const Probe& p = this->*last;
  return HttpResponse{p.ok ? 200 : 503, p.text};
}

std::optional<std::string> Daemon::stalled_locked() {
  if (!source_) return std::nullopt;
  const double oldest = source_->oldest_in_flight_seconds();
  if (oldest > cfg_.daemon.stall_timeout)
    return fmt::format("stalled: a batch has been in flight for {:.1f} s (daemon.stall_timeout {} s)\n", oldest, cfg_.daemon.stall_timeout);
  return std::nullopt;
}

// /healthz, the combined view (unchanged since before /livez and /readyz).
std::pair<bool, std::string> Daemon::health_locked() {
  if (stop_) return {false, "stopping\n"};
  if (auto degraded = camera_.degraded(cfg_.camera.reconnect_interval)) return {false, *degraded};
  if (!running_) return {true, "ok: idle (source ended; SIGHUP restarts it)\n"};
  if (auto stalled = stalled_locked()) return {false, *stalled};
  return {true, "ok\n"};
}

// Alive: no batch stuck in flight and the housekeeping loop turning. A lost
// camera, a reload, idling or stopping are all alive: restarting would not help.
std::pair<bool, std::string> Daemon::live_locked() {
  const double beat = std::chrono::duration<double>(clock::now() - housekeeping_beat_).count();
  if (beat > std::max(2.0, cfg_.daemon.stall_timeout))
    return {false, fmt::format("not alive: the housekeeping loop has not turned for {:.1f} s\n", beat)};
  if (auto stalled = stalled_locked()) return {false, "not alive: " + *stalled};
  if (stop_) return {true, "ok: alive (stopping)\n"};
  if (auto degraded = camera_.degraded(cfg_.camera.reconnect_interval)) return {true, "ok: alive, not ready: " + *degraded};
  return {true, "ok: alive\n"};
}

// Ready: a pipeline runs and delivers.
std::pair<bool, std::string> Daemon::ready_locked() {
  if (stop_) return {false, "not ready: stopping\n"};
  if (auto degraded = camera_.degraded(cfg_.camera.reconnect_interval)) return {false, "not ready: " + *degraded};
  if (!running_)
    return {false, idle_ ? "not ready: idle (the source ended; SIGHUP restarts it)\n" : "not ready: starting (opening the source)\n"};
  if (auto stalled = stalled_locked()) return {false, "not ready: " + *stalled};
  return {true, "ready\n"};
}

void Daemon::check_reload(const Config& c) const {
  // An empty file (0 bytes, whitespace, comments) parses as all defaults:
  // outputs and publisher would silently change to the built-in ones.
  require_settings(path_);
  if (!c.heads.empty()) throw ConfigError(path_.string() + ": [[head]] sections take effect at the next start (this daemon runs one head)");
  c.publisher.curve.check_key_files();  // a reload must not fail later on a key file
  if (!c.calibration.file.empty()) load_calibration(c.calibration.file);
  if (c.output.any_file()) create_output_dir(c.output.dir);
}

void Daemon::on_signal(int sig) {
  if (sig == SIGHUP) {
    spdlog::info("daemon: SIGHUP: reloading {}", path_.string());
    try {
      Config c = load();
      check_reload(c);
      // [measure] job: loaded here (a bad one: one line naming its key, the running job kept).
      std::shared_ptr<const measure::Job> job = c.measure.job.empty() ? nullptr : LiveMeasure::load(c.measure);
      std::lock_guard lock(mu_);
      if (!(c.http == cfg_.http)) spdlog::warn("daemon: [http] changes take effect at the next start");
      if (!(c.modbus == cfg_.modbus)) spdlog::warn("daemon: [modbus] changes take effect at the next start");
      if (job && measure_ && only_the_job_changed(cfg_, c)) {  // the rows go on: the job is swapped in, nothing restarts
        measure_->swap(job);
        cfg_.measure = c.measure;
        spdlog::info("daemon: SIGHUP: job '{}' ({}) swapped in live; the pipeline goes on", job->name, c.measure.job);
        metrics_.reload(true);
        return;
      }
      pending_job_ = std::move(job);
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
    housekeeping_beat_ = now;
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
  // A new endpoint is bound before the old publisher goes: if it cannot be
  // bound (a reload rolls back), the running publisher and its subscribers stay.
  std::unique_ptr<Publisher> fresh;
  const bool same_endpoint = [&] {
    std::lock_guard lock(mu_);
    return wanted && publisher_ && publisher_->config().endpoint == wanted->endpoint && wanted->endpoint.find(":*") == std::string::npos;
  }();
  if (wanted && !same_endpoint) fresh = std::make_unique<Publisher>(*wanted);  // throws: nothing replaced
  collect();  // count what the old publisher did before it goes
  std::unique_ptr<Publisher> old;
  {
    std::lock_guard lock(mu_);
    old = std::move(publisher_);
  }
  old.reset();  // closing lingers (linger_ms): never with mu_ held
  metrics_.publisher_replaced();
  if (!wanted) return;
  if (fresh) {
    std::lock_guard lock(mu_);
    publisher_ = std::move(fresh);
    return;
  }
  auto p = bind_publisher(*wanted);  // the same endpoint rebound
  std::lock_guard lock(mu_);
  publisher_ = std::move(p);
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
  RunSession session(cfg);
  InstrumentedSource* instrumented = nullptr;
  // a camera: DeviceUnavailable / ConfigError, handled by run(); the daemon paces and counts through its wrapper
  session.open_source([&](FrameSource& opened) {
    auto wrapper = std::make_unique<InstrumentedSource>(opened, cfg.daemon.rate, [this](SourceEnd why) {
      if (why != SourceEnd::DeviceLost) return;
      std::lock_guard lock(mu_);
      if (scans_) scans_->set_end_reason("camera-lost");  // before the pipeline finishes the scan
    });
    instrumented = wrapper.get();
    return wrapper;
  });
  InstrumentedSource& source = *instrumented;
  if (cfg.source != SourceKind::Camera) {
    camera_.no_camera();
  } else if (const auto away = camera_.opened()) {
    metrics_.camera_reconnected();
    spdlog::info("daemon: camera back after {:.1f} s; a new series starts", *away);
  }
  use_publisher(cfg);
  if (cfg.output.any_file()) {
    session.check_outputs();
    // Leftovers of a killed daemon (<start>-<NNNNNN>-<name> temporaries whose process is gone).
    for (const auto& p : session.sweep_outputs({}, true)) spdlog::warn("daemon: removed {}, left by an interrupted run (its process is gone)", p.string());
  }
  Publisher* publisher = nullptr;
  {
    std::lock_guard lock(mu_);
    publisher = publisher_.get();
  }
  const std::string endpoint = publisher ? publisher->endpoint() : "off";
  ScanWriter scans(
      cfg.daemon, cfg.output, [&session](const std::string& prefix) { return session.open_scan_outputs(prefix); }, publisher, run_stamp_,
      next_scan_,
      [&] {
        spdlog::info("daemon: ready: {} -> {} backend -> scans in {} (every {} rows), publisher {}", source.describe(),
                     to_string(resolve_backend(cfg.pipeline.backend)), cfg.output.dir.string(), cfg.daemon.scan_rows, endpoint);
        notifier_.ready(fmt::format("running: publisher {}", endpoint));
      },
      [&](const ScanResult&) { metrics_.scan_completed(); });
  // the calibration file (InputError at the first start: exit 2), the ROI offsets from the camera's read-back
  if (const auto sheet = session.apply_calibration())
    spdlog::info("daemon: calibration {} (id {}) applied: points in mm", sheet->file, sheet->id);
  Pipeline& pipeline = session.pipeline();
  metrics_.new_pipeline();
  {
    std::lock_guard lock(mu_);
    pipeline_ = &pipeline;
    source_ = &source;
    scans_ = &scans;
    running_ = true;
    rollback_.reset();  // the configuration started
    if (stop_ || reload_) {  // a signal arrived while we were setting up
      scans.set_end_reason(stop_ ? "stopped" : "reload");
      pipeline.stop();
      source.stop();
    }
  }
  End end = End::SourceEnd;
  std::vector<ProfileSink*> sinks{&scans};
  if (viewer_) sinks.push_back(&viewer_feed_);
  if (measure_) {
    measure_->set_publisher(publisher);
    sinks.push_back(&measure_->sink());
  }
  try {
    session.run(sinks, [&](const PipelineStats& s) {
      // Sink stage, once per batch, in order: the processing loop.
      const std::optional<double> latency = source.batch_done();
      metrics_.on_batch(s, latency);
      if (viewer_) viewer_feed_.on_batch(s, latency);
      notifier_.watchdog();
    });
  } catch (const std::exception& e) {
    spdlog::error("daemon: the pipeline failed: {}", e.what());
    end = End::Failed;
  }
  if (measure_) measure_->set_publisher(nullptr);  // its worker stopped with the pipeline; the publisher may be replaced
  collect();
  next_scan_ = scans.next_scan_number();
  const bool lost = source.end_reason() == SourceEnd::DeviceLost;
  if (lost) {  // counted even if a signal ended the run at the same time
    camera_.lost(session.loss_reason());
    metrics_.camera_lost(session.opened_source().loss_detection_seconds());
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
  if (cfg.source == SourceKind::Camera) camera_.reap(session.release_source());  // `source` (the wrapper) goes with the session's hand-over
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
  registry_.set_collector([this] { collect(std::chrono::milliseconds(50)); });
  SignalThread signals([this](int sig) { on_signal(sig); });
  start_measure();  // InputError (a bad job, a Modbus address in use): exit 2
  std::unique_ptr<HttpServer> http = start_http();
  {
    std::lock_guard lock(mu_);
    http_ = http.get();
  }
  struct ForgetHttp {  // before the server goes (its thread calls collect())
    Daemon* d;
    ~ForgetHttp() {
      std::lock_guard lock(d->mu_);
      d->http_ = nullptr;
    }
  } forget_http{this};
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
    std::optional<std::string> start_failed;  // why the pipeline could not start (not a camera that is away)
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
      if (cfg.source == SourceKind::Camera && !rollback_) {  // a replaced camera that refuses a setting: keep trying, loudly
        camera_.unavailable(e.what());
        end = End::CameraUnavailable;
      } else {
        start_failed = e.what();
      }
    } catch (const std::exception& e) {
      spdlog::error("daemon: cannot start the pipeline: {}", e.what());
      end = End::Failed;
      start_failed = e.what();
    }
    if (start_failed && rollback_) {
      // A reloaded configuration passed its checks but cannot start (an
      // endpoint in use, say): back to the one that ran, rather than exit.
      std::lock_guard lock(mu_);
      spdlog::error("daemon: SIGHUP: the reloaded configuration cannot start ({}); going back to the previous one", *start_failed);
      metrics_.reload_rolled_back();
      cfg_ = std::move(*rollback_);
      rollback_.reset();
      apply_log_level(cfg_);
      if (stop_) break;
      continue;
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
      idle_ = true;
      cv_.wait(lock, [this] { return stop_ || reload_; });
      idle_ = false;
      if (stop_) break;
    }
    std::lock_guard lock(mu_);
    if (reload_ && pending_) {
      rollback_ = cfg_;
      cfg_ = std::move(*pending_);
      pending_.reset();
      reload_ = false;
      apply_log_level(cfg_);
      use_job(std::exchange(pending_job_, nullptr));
      spdlog::info("daemon: configuration {} applied", path_.string());
    }
    if (stop_) break;
  }
  return shut_down(rc);
}

std::string Daemon::viewer_health() {
  std::unique_lock lock(mu_, std::defer_lock);
  if (!lock.try_lock_for(std::chrono::milliseconds(20))) return viewer_last_health_;
  const nlohmann::json head = viewer_head_status("head", cfg_, source_, metrics_, publisher_.get(), camera_);
  std::string state = health_locked().second;
  while (!state.empty() && state.back() == '\n') state.pop_back();
  viewer_last_health_ = nlohmann::json{{"state", state}, {"heads", nlohmann::json::array({head})}}.dump();
  return viewer_last_health_;
}

void Daemon::start_measure() {
  if (cfg_.modbus.enabled) {
    modbus_ = std::make_unique<ModbusServer>(cfg_.modbus.address, cfg_.modbus.port);
    spdlog::info("modbus: listening on {}:{}", cfg_.modbus.address, modbus_->port());
  }
  if (!cfg_.measure.job.empty()) {
    auto job = LiveMeasure::load(cfg_.measure);
    std::lock_guard lock(mu_);
    use_job(std::move(job));
  }
  if (modbus_ && !measure_) spdlog::warn("modbus: no [measure] job: the registers stay empty");
}

void Daemon::use_job(std::shared_ptr<const measure::Job> job) {
  if (!job) {
    measure_.reset();
    return;
  }
  if (!measure_ || measure_->queue_parts() != cfg_.measure.queue_parts) {
    measure_.reset();
    measure_ = std::make_unique<LiveMeasure>(registry_, cfg_.measure, job);
    measure_->set_modbus(modbus_.get());
  } else {
    measure_->swap(job);  // between pipelines: the next one begins with it
  }
  spdlog::info("measure: job '{}' ({}, {} tool{})", job->name, cfg_.measure.job, job->tools.size(), job->tools.size() == 1 ? "" : "s");
}

std::unique_ptr<HttpServer> Daemon::start_http() {
  if (!cfg_.http.enabled) return nullptr;
  std::map<std::string, HttpServer::Handler> routes{
      {"/metrics", [this] { return HttpResponse{200, registry_.render(), "text/plain; version=0.0.4; charset=utf-8"}; }},
      {"/healthz", [this] { return probe(&Daemon::health_locked, &Daemon::last_health_); }},
      {"/livez", [this] { return probe(&Daemon::live_locked, &Daemon::last_live_); }},
      {"/readyz", [this] { return probe(&Daemon::ready_locked, &Daemon::last_ready_); }}};
  std::map<std::string, HttpServer::StreamHandler> streams;
  if (cfg_.http.viewer) {
    ViewerLimits limits;
    limits.max_viewers = cfg_.http.max_viewers;
    viewer_ = std::make_unique<ViewerHub>(std::vector<ViewerChannel>{{"head", &viewer_feed_}}, registry_, limits, [this] { return viewer_health(); });
    routes.merge(viewer_routes());
    streams["/events"] = [this](int fd) { return viewer_->adopt(fd); };
  }
  return std::make_unique<HttpServer>(cfg_.http.address, cfg_.http.port, std::move(routes), http_limits(cfg_.http), std::move(streams));
}

int Daemon::shut_down(int rc) {
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
  Config first = load_config(config_path);  // ConfigError: exit 2 before anything starts
  if (!first.heads.empty()) return run_heads(config_path, std::move(overrides), std::move(first));  // [[head]]s: daemon/heads.cpp
  Daemon d(config_path, std::move(overrides));
  return d.run();
}

}  // namespace stripeline::daemon
