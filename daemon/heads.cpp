// The daemon of several heads (daemon/heads.h). Its parts: one Head per
// [[head]] (its generations through the run session, its camera supervisor,
// metrics and publisher), the MergeRunner ([merge]), and HeadsDaemon (the
// process: signals, housekeeping, HTTP, systemd).
//
// Locks: each Head's mu_ guards its members below it and is never held while
// a pipeline runs, a publisher is made or closed, or the reaper is waited
// for; the MergeRunner's mu_ likewise. HeadsDaemon's mu_ guards its flags; it
// takes a Head's or the merge's lock only through their member functions
// (never the other way round).
#include "daemon/heads.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <malloc.h>

#include <cmath>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "app/outputs.h"
#include "app/run_session.h"
#include "app/settings.h"
#include "calibration/calibration_file.h"
#include "core/errors.h"
#include "daemon/camera_supervisor.h"
#include "daemon/daemon_metrics.h"
#include "daemon/heads_viewer.h"
#include "daemon/http_server.h"
#include "daemon/instrumented_source.h"
#include "daemon/process_metrics.h"
#include "daemon/scan_writer.h"
#include "daemon/service_parts.h"
#include "daemon/signals.h"
#include "daemon/systemd_notify.h"
#include "daemon/live_measure.h"
#include "daemon/modbus_server.h"
#include "daemon/viewer_status.h"
#include "io/atomic_file.h"
#include "measure/scan_files.h"
#include "streaming/merge.h"
#include "streaming/publisher.h"

namespace stripeline::daemon {

namespace {

using clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// [modbus] in a daemon of several heads: the merged scan's job on unit 255
// (what a Modbus TCP client addresses by default, the spec's "the device
// itself"); head i's job on unit 1 + i.
constexpr int kMergedUnit = 255;

// Names the head in what its scans record: series-start's and the scan
// summary's "source" read "head <name>: <the source>".
class NamedHeadSink final : public ProfileSink {
 public:
  NamedHeadSink(std::string name, ProfileSink& inner) : name_(std::move(name)), inner_(inner) {}
  void begin(const ScanInfo& info) override {
    ScanInfo named = info;
    named.source = "head " + name_ + ": " + info.source;
    inner_.begin(named);
  }
  void consume(const ProfileSpan& p) override { inner_.consume(p); }
  void finish() override { inner_.finish(); }
  void abort() noexcept override { inner_.abort(); }
  bool keeps_spans() const override { return inner_.keeps_spans(); }
  std::size_t batch_bytes_per_frame(int width, int slots) const override { return inner_.batch_bytes_per_frame(width, slots); }
  void consume_kept(const ProfileSpan& p, SpanLease& lease) override { inner_.consume_kept(p, lease); }

 private:
  std::string name_;
  ProfileSink& inner_;
};

std::string trimmed(std::string s) {
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

// ---------------------------------------------------------------- one head

class Head {
 public:
  struct State {
    bool healthy = true, ready = false, alive = true;
    std::string text;
  };

  Head(std::string name, Config cfg, Registry& registry, std::string run_stamp, double merge_wait, ViewerFeed* viewer = nullptr)
      : viewer_(viewer),
        name_(std::move(name)),
        registry_(registry),
        metrics_(registry, name_),
        failures_(registry.counter("stripeline_head_failures_total",
                                   "Times a head went down: its source could not be opened or read, or its pipeline failed (docs/daemon.md).",
                                   fmt::format("head=\"{}\"", name_))),
        running_gauge_(registry.gauge("stripeline_head_running", "1 while the head's pipeline runs.", fmt::format("head=\"{}\"", name_))),
        run_stamp_(std::move(run_stamp)),
        merge_wait_(merge_wait),
        cfg_(std::move(cfg)) {}
  ~Head() { join(); }

  const std::string& name() const { return name_; }
  DaemonMetrics& metrics() { return metrics_; }
  Config config() const {
    std::lock_guard lock(mu_);
    return cfg_;
  }

  // [modbus]: the head's job's registers on unit `unit`. Before start().
  void use_modbus(ModbusServer* modbus, int unit) {
    std::lock_guard lock(mu_);
    modbus_ = modbus;
    unit_ = unit;
  }

  void start() { thread_ = std::thread([this] { loop(); }); }
  void join() {
    if (thread_.joinable()) thread_.join();
  }

  // SIGTERM: stop acquiring; the open scan ends "stopped" once the batches in flight are through.
  void stop() {
    std::lock_guard lock(mu_);
    stop_ = true;
    if (scans_) scans_->set_end_reason("stopped");
    if (pipeline_) pipeline_->stop();
    if (source_) source_->stop();
    cv_.notify_all();
  }

  // SIGHUP: the open scan ends "reload" and the head restarts with `c`.
  void reload(Config c) {
    std::lock_guard lock(mu_);
    pending_ = std::move(c);
    reload_ = true;
    if (scans_) scans_->set_end_reason("reload");
    if (pipeline_) pipeline_->stop();
    if (source_) source_->stop();
    cv_.notify_all();
  }

  // SIGHUP with only its [measure] job changed: the job swapped in, the rows
  // go on (InputError: its units are not the running scan's). False when no
  // job runs: the head restarts instead.
  bool swap_job(const Config& c, std::shared_ptr<const measure::Job> job) {
    std::lock_guard lock(mu_);
    if (!measure_ || !job || !running_) return false;
    measure_->swap(std::move(job));
    cfg_.measure = c.measure;
    return true;
  }

  // Down (failed) or idle (its source ended): what a SIGHUP restarts even unchanged.
  bool resting() const {
    std::lock_guard lock(mu_);
    return !failed_.empty() || idle_;
  }

  void tick(clock::time_point now) {
    std::lock_guard lock(mu_);
    if (scans_) scans_->tick(now);
    if (publisher_) publisher_->tick();
  }

  State state() {
    std::lock_guard lock(mu_);
    return state_locked();
  }

  // The head's entry in the live viewer's health (daemon/viewer_status.h).
  nlohmann::json viewer_status() {
    std::lock_guard lock(mu_);
    nlohmann::json j = viewer_head_status(name_, cfg_, source_, metrics_, publisher_.get(), camera_);
    j["state"] = state_locked().text;
    return j;
  }

  // Brings the head's metrics up to date (`http`: the server's counters, given to one head only).
  void collect(std::optional<HttpServer::Stats> http = std::nullopt) {
    std::lock_guard lock(mu_);
    if (measure_) measure_->collect();
    metrics_.collect(snapshot_of(source_, publisher_.get(), state_locked().healthy, camera_.connected(), http));
  }

 private:
  enum class End { Stopped, Reload, SourceEnd, Failed, CameraLost, CameraUnavailable };

  State state_locked() {
    const double interval = cfg_.camera.reconnect_interval;
    if (stop_) return {false, false, true, "stopping"};
    if (!failed_.empty()) return {false, false, true, "down: " + failed_ + (cfg_.source == SourceKind::Camera ? "; retrying" : "; SIGHUP restarts it")};
    if (auto degraded = camera_.degraded(interval)) return {false, false, true, trimmed(*degraded)};
    if (!running_) return {true, false, true, idle_ ? "idle: the source ended; SIGHUP restarts it" : "starting"};
    if (source_) {
      const double oldest = source_->oldest_in_flight_seconds();
      if (oldest > cfg_.daemon.stall_timeout)
        return {false, false, false, fmt::format("stalled: a batch has been in flight for {:.1f} s (daemon.stall_timeout {} s)", oldest,
                                                 cfg_.daemon.stall_timeout)};
    }
    return {true, true, true, "ok"};
  }

  void fail(const std::string& why) {
    spdlog::error("head {}: {}; the other heads go on", name_, why);
    failures_.add(1);
    std::lock_guard lock(mu_);
    failed_ = why;
  }

  // Waits `seconds`, or until a stop or a reload; false when stopping.
  bool wait_for(double seconds) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, std::chrono::duration<double>(seconds), [this] { return stop_ || reload_; });
    return !stop_;
  }

  void loop();
  End generation(const Config& cfg);
  void use_publisher(const Config& cfg);
  // [head.measure]: the head's live job (InputError naming the key: the head fails); nullptr without one.
  LiveMeasure* use_measure(const Config& cfg, Publisher* publisher) {
    std::shared_ptr<const measure::Job> job = cfg.measure.job.empty() ? nullptr : LiveMeasure::load(cfg.measure);
    std::lock_guard lock(mu_);
    if (!job) measure_.reset();
    else if (!measure_ || measure_->queue_parts() != cfg.measure.queue_parts) measure_ = std::make_unique<LiveMeasure>(registry_, cfg.measure, job, name_);
    else measure_->swap(job);
    if (measure_) measure_->set_publisher(publisher), measure_->set_modbus(modbus_, unit_);
    return measure_.get();
  }

  ViewerFeed* const viewer_;  // the live viewer's tap on this head's rows (nullptr: none)
  const std::string name_;
  Registry& registry_;
  DaemonMetrics metrics_;
  CameraSupervisor camera_;
  Counter& failures_;
  Gauge& running_gauge_;
  const std::string run_stamp_;
  const double merge_wait_;     // seconds to wait for the merge's subscription (0 = no merge)
  std::uint64_t next_scan_ = 1;  // the head's thread only

  mutable std::mutex mu_;
  std::condition_variable cv_;
  Config cfg_;
  std::optional<Config> pending_;
  bool stop_ = false, reload_ = false, running_ = false, idle_ = false;
  std::string failed_;  // why the head is down; "" = it is not
  std::unique_ptr<Publisher> publisher_;
  Pipeline* pipeline_ = nullptr;
  InstrumentedSource* source_ = nullptr;
  ScanWriter* scans_ = nullptr;
  std::unique_ptr<LiveMeasure> measure_;  // outlives the pipelines; its counters go on
  ModbusServer* modbus_ = nullptr;        // [modbus] (nullptr: none), the head's unit on it
  int unit_ = 0;
  std::thread thread_;
};

// Keeps the running publisher when the configuration did not change it (its
// subscribers stay connected across scans and reloads), else replaces it.
void Head::use_publisher(const Config& cfg) {
  const std::optional<PublisherConfig> wanted = stream_of(cfg);
  {
    std::lock_guard lock(mu_);
    if ((publisher_ && wanted && publisher_->config() == *wanted) || (!publisher_ && !wanted)) return;
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
  auto p = bind_publisher(*wanted);
  std::lock_guard lock(mu_);
  publisher_ = std::move(p);
}

Head::End Head::generation(const Config& cfg) {
  {  // a lost camera still closing: wait for it, unless told to stop
    std::unique_lock lock(mu_);
    while (camera_.reaping() && !stop_ && !reload_) cv_.wait_for(lock, 50ms);
    if (stop_) return End::Stopped;
    if (reload_) return End::Reload;
  }
  camera_.join();
  RunSession session(cfg);
  InstrumentedSource* instrumented = nullptr;
  session.open_source([&](FrameSource& opened) {
    auto wrapper = std::make_unique<InstrumentedSource>(opened, cfg.daemon.rate, [this](SourceEnd why) {
      if (why != SourceEnd::DeviceLost) return;
      std::lock_guard lock(mu_);
      if (scans_) scans_->set_end_reason("camera-lost");
    });
    instrumented = wrapper.get();
    return wrapper;
  });
  InstrumentedSource& source = *instrumented;
  if (cfg.source != SourceKind::Camera) {
    camera_.no_camera();
  } else if (const auto away = camera_.opened()) {
    metrics_.camera_reconnected();
    spdlog::info("head {}: camera back after {:.1f} s; a new series starts", name_, *away);
  }
  use_publisher(cfg);
  if (cfg.output.any_file()) {
    session.check_outputs();
    for (const auto& p : session.sweep_outputs({}, true))
      spdlog::warn("head {}: removed {}, left by an interrupted run (its process is gone)", name_, p.string());
  }
  Publisher* publisher = nullptr;
  {
    std::lock_guard lock(mu_);
    publisher = publisher_.get();
  }
  if (publisher && merge_wait_ > 0 && !publisher->wait_for_subscribers(1, std::chrono::milliseconds(static_cast<long long>(merge_wait_ * 1000))))
    spdlog::warn("head {}: the merge did not subscribe within merge.subscribe_timeout = {} s; publishing anyway (rows nobody receives are "
                 "counted as no_subscriber drops)", name_, merge_wait_);
  const std::string endpoint = publisher ? publisher->endpoint() : "off";
  ScanWriter scans(
      cfg.daemon, cfg.output, [&session](const std::string& prefix) { return session.open_scan_outputs(prefix); }, publisher,
      run_stamp_ + "-" + name_, next_scan_,
      [&] {
        spdlog::info("head {}: ready: {} -> {} backend (device {}) -> scans in {} (every {} rows), publisher {}", name_, source.describe(),
                     to_string(resolve_backend(cfg.pipeline.backend)), cfg.pipeline.device, cfg.output.dir.string(), cfg.daemon.scan_rows, endpoint);
      },
      [&](const ScanResult&) { metrics_.scan_completed(); });
  scans.set_log_prefix("head " + name_ + ": ");
  if (const auto sheet = session.apply_calibration())
    spdlog::info("head {}: calibration {} (id {}) applied: points in mm", name_, sheet->file, sheet->id);
  Pipeline& pipeline = session.pipeline();
  metrics_.new_pipeline();
  NamedHeadSink named(name_, scans);
  LiveMeasure* live = use_measure(cfg, publisher);
  std::vector<ProfileSink*> sinks{&named};
  if (live) sinks.push_back(&live->sink());
  {
    std::lock_guard lock(mu_);
    pipeline_ = &pipeline;
    source_ = &source;
    scans_ = &scans;
    running_ = true;
    failed_.clear();
    if (stop_ || reload_) {  // a signal arrived while we were setting up
      scans.set_end_reason(stop_ ? "stopped" : "reload");
      pipeline.stop();
      source.stop();
    }
  }
  running_gauge_.set(1);
  End end = End::SourceEnd;
  try {
    if (viewer_) sinks.push_back(viewer_);
    session.run(sinks, [&](const PipelineStats& s) {
      const std::optional<double> latency = source.batch_done();
      metrics_.on_batch(s, latency);
      if (viewer_) viewer_->on_batch(s, latency);
    });
  } catch (const std::exception& e) {
    end = End::Failed;
    fail(std::string("the pipeline failed: ") + e.what());
  }
  running_gauge_.set(0);
  if (live) live->set_publisher(nullptr);  // its worker stopped with the pipeline; the publisher may be replaced
  collect();
  next_scan_ = scans.next_scan_number();
  const bool lost = source.end_reason() == SourceEnd::DeviceLost;
  if (lost) {
    camera_.lost(session.loss_reason());
    metrics_.camera_lost(session.opened_source().loss_detection_seconds());
    spdlog::warn("head {}: camera lost ({}); reconnecting", name_, session.loss_reason());
  }
  {
    std::lock_guard lock(mu_);
    pipeline_ = nullptr;
    source_ = nullptr;
    scans_ = nullptr;
    running_ = false;
  }
  if (cfg.source == SourceKind::Camera) camera_.reap(session.release_source());  // closed off this thread (Aravis retries a gone camera)
  std::lock_guard lock(mu_);
  if (end == End::Failed) return end;
  if (stop_) return End::Stopped;
  if (reload_) return End::Reload;
  return lost ? End::CameraLost : End::SourceEnd;
}

void Head::loop() {
  while (true) {
    const Config cfg = config();
    End end = End::Failed;
    try {
      end = generation(cfg);
    } catch (const DeviceUnavailable& e) {
      if (camera_.unavailable(e.what())) spdlog::warn("head {}: camera: {}; retrying every {} s", name_, e.what(), cfg.camera.reconnect_interval);
      end = End::CameraUnavailable;
    } catch (const std::exception& e) {
      fail(std::string("cannot start: ") + e.what());
    }
    const bool camera = cfg.source == SourceKind::Camera;
    if (end == End::CameraLost || end == End::CameraUnavailable || (end == End::Failed && camera)) {
      if (!wait_for(cfg.camera.reconnect_interval)) break;  // the supervisor's retry
    } else if (end == End::Failed || end == End::SourceEnd) {
      if (end == End::SourceEnd) spdlog::warn("head {}: the source ended; waiting for SIGHUP (restart it) or SIGTERM", name_);
      std::unique_lock lock(mu_);
      idle_ = end == End::SourceEnd;
      cv_.wait(lock, [this] { return stop_ || reload_; });
      idle_ = false;
    }
    std::lock_guard lock(mu_);
    if (stop_) break;
    if (reload_) {
      if (pending_) cfg_ = std::move(*pending_);
      pending_.reset();
      reload_ = false;
      failed_.clear();
      spdlog::info("head {}: configuration applied", name_);
    }
  }
  collect();
  std::unique_ptr<Publisher> last;
  {
    std::lock_guard lock(mu_);
    last = std::move(publisher_);
  }
  last.reset();  // lingers so that series-end reaches connected subscribers
  for (int i = 0; i < 40 && camera_.reaping(); ++i) std::this_thread::sleep_for(50ms);
  if (!camera_.reaping()) camera_.join();
}

// ---------------------------------------------------------------- the merge

// The merge stage over the heads' streams: one MergeService per merged series
// (a service ends when every head ended its series; the next one starts at
// once for the heads' next scans). Counters per head, labelled. With a job on
// the merged scan ([merge.measure]), the merged rows go to its measurer on the
// merge's thread as they go out (a series' open part ends with the series),
// and each measured part goes out in the merged stream.
class MergeRunner {
 public:
  // `output`: where each merged series' files go (the top-level [output] dir), named <run_stamp>-merge-<NNNNNN>-<name>.
  // `measure`: the merged scan's job (nullptr: none), outliving the runner.
  MergeRunner(MergeServiceConfig cfg, Registry& r, OutputConfig output, std::string run_stamp, std::string range_map, std::string ply,
              LiveMeasure* measure = nullptr)
      : cfg_(std::move(cfg)),
        output_(std::move(output)),
        run_stamp_(std::move(run_stamp)),
        range_map_(std::move(range_map)),
        ply_(std::move(ply)),
        measure_(measure) {
    cfg_.ply_ascii = output_.ply_encoding == io::PlyEncoding::Ascii;
    if (measure_) {
      cfg_.on_rows = [this](const MergedBlock& b) { feed(b); };
      cfg_.on_series_end = [this] { end_parts(); };
      measure_->set_out([this](const nlohmann::json& record) {
        std::lock_guard lock(out_mu_);
        if (out_) out_->publish_measurement(record);
        else if (held_.size() < 64) held_.push_back(record);  // for the next series (the service holds at most 64 too)
      });
    }
    rows_ = &r.counter("stripeline_merge_rows_total", "Merged rows published by the daemon's merge ([merge]).");
    series_ = &r.counter("stripeline_merge_series_total", "Merged series completed.");
    forced_ = &r.counter("stripeline_merge_rows_forced_total", "Merged rows sent early because merge max_pending_rows were waiting.");
    failures_ = &r.counter("stripeline_merge_failures_total", "Times the merge stage failed (bind, subscribe or a file) and was restarted.");
    for (const auto& h : cfg_.merge.heads) {
      std::array<Counter*, kKinds> c{};
      for (std::size_t k = 0; k < kKinds; ++k)
        c[k] = &r.counter("stripeline_merge_head_rows_total",
                          "Rows of each head as the merge accounts them: sent = received + lost; received = merged + late + unmatched + "
                          "no_points + source_missing; absent: merged rows without the head.",
                          fmt::format("head=\"{}\",kind=\"{}\"", h.name, kKindNames[k]));
      head_rows_.push_back(c);
    }
  }
  ~MergeRunner() {
    stop();
    if (measure_) {
      measure_->set_out(nullptr);
      measure_->measurer().abort();  // a series that failed left it open
    }
  }

  void start() { thread_ = std::thread([this] { loop(); }); }

  // After the heads drained: the open merged series completes (or the wait
  // passes), then the stage stops.
  void drain(std::chrono::milliseconds wait) {
    std::unique_lock lock(mu_);
    draining_ = true;
    cv_.wait_for(lock, wait, [this] { return exited_; });
    lock.unlock();
    stop();
  }
  void stop() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
      cv_.notify_all();
    }
    if (thread_.joinable()) thread_.join();
  }

  void collect() {
    std::lock_guard lock(mu_);
    if (current_) account(current_->counters());
  }
  std::string endpoint() {  // of the merged series running ("" = none)
    std::lock_guard lock(mu_);
    return current_ ? endpoint_ : std::string();
  }
  std::string state() {
    std::lock_guard lock(mu_);
    return current_ ? fmt::format("merge: running, publishing on {}", endpoint_) : error_.empty() ? "merge: between series" : "merge: " + error_;
  }

 private:
  static constexpr std::size_t kKinds = 9;
  static constexpr const char* kKindNames[kKinds] = {"sent", "received", "lost", "merged", "late", "unmatched", "no_points", "source_missing", "absent"};

  // Adds what changed since the last look at the current service. Requires mu_.
  void account(const MergeCounters& now) {
    rows_->add(static_cast<double>(now.rows - last_.rows));
    forced_->add(static_cast<double>(now.forced - last_.forced));
    for (std::size_t h = 0; h < now.heads.size() && h < head_rows_.size(); ++h) {
      const MergeHeadCounters& a = now.heads[h];
      const MergeHeadCounters b = h < last_.heads.size() ? last_.heads[h] : MergeHeadCounters{};
      const std::uint64_t va[kKinds] = {a.sent, a.received, a.lost, a.merged, a.late, a.unmatched, a.no_points, a.source_missing, a.absent};
      const std::uint64_t vb[kKinds] = {b.sent, b.received, b.lost, b.merged, b.late, b.unmatched, b.no_points, b.source_missing, b.absent};
      for (std::size_t k = 0; k < kKinds; ++k) head_rows_[h][k]->add(static_cast<double>(va[k] - vb[k]));
    }
    last_ = now;
  }

  void log(const char* how, const MergeCounters& m) {
    std::string heads;
    for (std::size_t i = 0; i < m.heads.size(); ++i) {
      const MergeHeadCounters& h = m.heads[i];
      heads += fmt::format("; head {}: sent {} = received {} + lost {}, merged {}, late {}, unmatched {}, absent from {}", cfg_.merge.heads[i].name,
                           h.sent, h.received, h.lost, h.merged, h.late, h.unmatched, h.absent);
    }
    spdlog::info("merge: series {}: {} merged rows ({} forced early), latency in the merge p99 {:.0f} us{}", how, m.rows, m.forced, m.latency_p99_us,
                 heads);
  }

  // The merge's thread: the block's rows to the merged job, each row's filled
  // cells its points (measure/scan_files.h grid_row, as a range map's row).
  // A row no head has (Y unknown) is skipped. A failing tool ends the
  // series' measuring (logged); the next series measures again.
  void feed(const MergedBlock& b) {
    measure::RowMeasurer& m = measure_->measurer();
    const kernels::RectifyGrid& g = cfg_.merge.grid;
    try {
      if (!measuring_) m.begin("mm", cfg_.y_step_mm, nullptr);
      measuring_ = true;
      for (int r = 0; r < b.rows.rows; ++r) {
        const auto i = static_cast<std::size_t>(r);
        if (!std::isfinite(b.y_mm[i])) continue;
        row_.frame = b.rows.frame_ids[i];
        row_.y = b.y_mm[i];
        row_.has_encoder = b.rows.encoder[i].has_value();
        row_.encoder = b.rows.encoder[i].value_or(0);
        row_.timestamp_ns = b.rows.timestamps_ns[i];
        measure::grid_row(b.rows.z.data() + i * static_cast<std::size_t>(b.rows.width), b.rows.width, g.x_min, g.dx, row_);
        m.push(row_);
      }
    } catch (const std::exception& e) {
      spdlog::error("merge: measuring the merged scan: {}; parts of this series are not measured further", e.what());
      m.abort();
      measuring_ = false;
    }
  }
  // The merge's thread, before the series-end: the open part ends, the queued ones are measured.
  void end_parts() {
    if (!measuring_) return;
    measuring_ = false;
    try {
      measure_->measurer().finish();
    } catch (const std::exception& e) {
      spdlog::error("merge: measuring the merged scan: {}", e.what());
    }
  }

  // The files of merged series number `n` (the service writes them, atomically, when the series ends).
  void name_files(std::uint64_t n) {
    const auto name = [&](const std::string& file) {
      if (file.empty()) return std::filesystem::path();
      const std::filesystem::path p = output_.resolve(file);
      return p.parent_path() / fmt::format("{}-merge-{:06}-{}", run_stamp_, n, p.filename().string());
    };
    cfg_.range_map = name(range_map_);
    cfg_.ply = name(ply_);
    for (const auto* p : {&cfg_.range_map, &cfg_.ply})
      if (!p->empty()) create_output_dir(p->parent_path());
  }

  std::unique_ptr<MergeService> open() {
    const auto deadline = clock::now() + 3s;  // the previous series' socket on the same endpoint closes asynchronously
    while (true) {
      try {
        return std::make_unique<MergeService>(cfg_);
      } catch (const InputError&) {
        if (clock::now() > deadline) throw;
        std::this_thread::sleep_for(50ms);
      }
    }
  }

  void loop() {
    while (true) {
      std::unique_ptr<MergeService> service;
      if (measure_ && measuring_) measure_->measurer().abort();  // the previous series failed with a part open (its thread is joined)
      measuring_ = false;
      try {
        name_files(next_series_);
        service = open();
      } catch (const std::exception& e) {
        spdlog::error("merge: cannot start: {}; retrying in 1 s", e.what());
        failures_->add(1);
        std::unique_lock lock(mu_);
        error_ = e.what();
        if (cv_.wait_for(lock, 1s, [this] { return stop_ || draining_; })) break;
        continue;
      }
      if (measure_) {
        std::lock_guard lock(out_mu_);
        out_ = service.get();
        for (const auto& record : held_) out_->publish_measurement(record);
        held_.clear();
      }
      {
        std::unique_lock lock(mu_);
        current_ = service.get();
        last_ = MergeCounters{};
        error_.clear();
        if (endpoint_.empty()) spdlog::info("merge: {} heads subscribed; publishing on {}", cfg_.merge.heads.size(), service->publish_endpoint());
        endpoint_ = service->publish_endpoint();
        while (!stop_ && !service->done()) cv_.wait_for(lock, 20ms);
      }
      const bool complete = service->done();
      try {
        service->stop();
      } catch (const std::exception& e) {
        spdlog::error("merge: {}", e.what());
        failures_->add(1);
      }
      const MergeCounters final_counters = service->counters();
      {
        std::lock_guard lock(mu_);
        account(final_counters);
        current_ = nullptr;
      }
      series_->add(1);
      log(complete ? "complete" : "stopped", final_counters);
      for (const auto& f : service->files()) spdlog::info("merge: series {}: wrote {}", next_series_, f.string());
      if (final_counters.rows > 0) ++next_series_;
      {
        std::lock_guard lock(out_mu_);
        out_ = nullptr;
      }
      service.reset();
      std::lock_guard lock(mu_);
      if (stop_ || draining_) break;
    }
    std::lock_guard lock(mu_);
    exited_ = true;
    cv_.notify_all();
  }

  MergeServiceConfig cfg_;
  const OutputConfig output_;
  const std::string run_stamp_, range_map_, ply_;
  std::uint64_t next_series_ = 1;  // the merge's thread only
  Counter *rows_, *series_, *forced_, *failures_;
  std::vector<std::array<Counter*, kKinds>> head_rows_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false, draining_ = false, exited_ = false;
  MergeService* current_ = nullptr;
  MergeCounters last_;
  std::string error_, endpoint_;
  LiveMeasure* const measure_;
  bool measuring_ = false;  // the merge's threads (one at a time; the runner's between them): the measurer has begun the series
  measure::MeasureRow row_;
  std::mutex out_mu_;           // guards out_ and held_; never held with mu_
  MergeService* out_ = nullptr;  // where measured parts go: the running service
  std::vector<nlohmann::json> held_;  // measured while no service runs
  std::thread thread_;
};

// ---------------------------------------------------------------- the process

// The motion between merged rows: the heads' calibrated motion step
// ([calibration] y_step_mm, else the file's), which must agree. InputError
// naming the head's key otherwise.
double merged_row_pitch(const std::vector<Config>& cfgs) {
  double pitch = 0;
  for (std::size_t i = 0; i < cfgs.size(); ++i) {
    const CalibrationFileSettings& c = cfgs[i].calibration;
    if (c.file.empty())
      throw InputError(fmt::format("head[{}].calibration.file: is empty, but the merged scan is in mm (expected a sheet-of-light calibration per head)", i));
    // |step|: a head facing the other way (align --reversed) has a negative
    // step in its own frame and the same pitch in the world's.
    const double step = std::abs(c.y_step_mm > 0 ? c.y_step_mm : load_calibration(c.file).model.y_step);
    if (i == 0) pitch = step;
    else if (std::abs(step - pitch) > 1e-9 * std::abs(pitch))
      throw InputError(fmt::format("head[{}].calibration: its motion step {} mm differs from head[0]'s {} mm in size (expected one step for the merged rows)", i,
                                   step, pitch));
  }
  return pitch;
}

// [merge.measure]'s job, loaded and checked: the merged scan is in mm.
std::shared_ptr<const measure::Job> merged_job(const MeasureConfig& m) {
  auto job = LiveMeasure::load(m);
  if (job->units != "mm")
    throw InputError(job->file + ": job.units = \"" + job->units + "\" but the merged scan is in mm (expected units = \"mm\" for merge.measure.job)");
  return job;
}

class HeadsDaemon {
 public:
  HeadsDaemon(std::filesystem::path path, std::function<void(Config&)> overrides, Config first)
      : path_(std::move(path)), overrides_(std::move(overrides)), cfg_(std::move(first)), process_(registry_) {}
  int run();

 private:
  // The heads' configurations of `c`, the command line's overrides applied.
  std::vector<Config> head_configs(const Config& c) const {
    std::vector<Config> out;
    for (const HeadEntry& h : c.heads) {
      Config hc = *h.config;
      if (overrides_) overrides_(hc);
      out.push_back(std::move(hc));
    }
    return out;
  }
  void start_measure(const std::vector<Config>& cfgs, MergeServiceConfig* merge);
  void on_signal(int sig);
  void reload();
  void housekeeping();
  void collect();
  HttpResponse probe(int which);  // 0 /healthz, 1 /livez, 2 /readyz
  std::unique_ptr<HttpServer> start_http();

  const std::filesystem::path path_;
  const std::function<void(Config&)> overrides_;
  const Config cfg_;  // the file as started ([daemon], [http], [merge], the set of heads)
  Registry registry_;
  ProcessMetrics process_;
  SystemdNotifier notifier_;
  std::unique_ptr<ModbusServer> modbus_;          // [modbus]: unit 1 + i = head i's job, kMergedUnit = the merged scan's
  std::unique_ptr<LiveMeasure> merged_measure_;  // [merge.measure]: outlives merge_
  std::vector<std::unique_ptr<Head>> heads_;  // fixed once run() started them
  std::unique_ptr<MergeRunner> merge_;
  std::unique_ptr<HeadsViewer> viewer_;  // [http] viewer: the live viewer of every head (daemon/heads_viewer.h)

  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false, housekeeping_stop_ = false;
  std::optional<clock::time_point> stop_at_;
  clock::time_point beat_ = clock::now();
  HttpServer* http_ = nullptr;
};

void HeadsDaemon::collect() {
  std::optional<HttpServer::Stats> http;
  {
    std::lock_guard lock(mu_);
    if (http_) http = http_->stats();
  }
  for (std::size_t i = 0; i < heads_.size(); ++i) heads_[i]->collect(i == 0 ? http : std::nullopt);  // the server's counters once
  if (merge_) merge_->collect();
  if (merged_measure_) merged_measure_->collect();
  process_.update();
}

HttpResponse HeadsDaemon::probe(int which) {
  bool ok = true;
  std::string text;
  {
    std::lock_guard lock(mu_);
    const double beat = std::chrono::duration<double>(clock::now() - beat_).count();
    if (which == 1 && beat > std::max(2.0, cfg_.daemon.stall_timeout)) {
      ok = false;
      text += fmt::format("not alive: the housekeeping loop has not turned for {:.1f} s\n", beat);
    }
    if (stop_) text += "stopping\n";
  }
  for (const auto& h : heads_) {
    const Head::State s = h->state();
    ok = ok && (which == 0 ? s.healthy : which == 1 ? s.alive : s.ready);
    text += fmt::format("head {}: {}\n", h->name(), s.text);
  }
  if (merge_) text += merge_->state() + "\n";
  const char* verdict[3][2] = {{"degraded", "ok"}, {"not alive", "alive"}, {"not ready", "ready"}};
  return HttpResponse{ok ? 200 : 503, std::string(verdict[which][ok ? 1 : 0]) + "\n" + text};
}

std::unique_ptr<HttpServer> HeadsDaemon::start_http() {
  if (!cfg_.http.enabled) return nullptr;
  std::map<std::string, HttpServer::Handler> routes{
      {"/metrics", [this] { return HttpResponse{200, registry_.render(), "text/plain; version=0.0.4; charset=utf-8"}; }},
      {"/healthz", [this] { return probe(0); }},
      {"/livez", [this] { return probe(1); }},
      {"/readyz", [this] { return probe(2); }}};
  std::map<std::string, HttpServer::StreamHandler> streams;
  if (viewer_)
    viewer_->start(
        registry_, cfg_.http,
        [this] {  // every head's entry, and the merge's state
          nlohmann::json heads = nlohmann::json::array();
          for (const auto& h : heads_) heads.push_back(h->viewer_status());
          const std::string verdict = probe(0).body;
          nlohmann::json j = {{"state", verdict.substr(0, verdict.find('\n'))}, {"heads", heads}};
          if (merge_) j["merge"] = {{"state", merge_->state()}};
          return j.dump();
        },
        [this] { return merge_ ? merge_->endpoint() : std::string(); }, routes, streams);
  return std::make_unique<HttpServer>(cfg_.http.address, cfg_.http.port, std::move(routes), http_limits(cfg_.http), std::move(streams));
}

// SIGHUP: the file reloaded and checked as a whole; the heads whose
// configuration changed (and those down or idle) restart, the others go on.
void HeadsDaemon::reload() {
  spdlog::info("daemon: SIGHUP: reloading {}", path_.string());
  DaemonMetrics& counters = heads_.front()->metrics();  // the reload counters are the process's (unlabelled)
  try {
    require_settings(path_);
    const Config c = load_config(path_);
    std::string names, running;
    for (const auto& h : c.heads) names += h.name + " ";
    for (const auto& h : heads_) running += h->name() + " ";
    if (names != running) throw ConfigError("the set of [[head]]s (" + names + ") differs from the running one (" + running + "): it changes at the next start");
    DaemonMergeConfig merge = c.merge;
    merge.measure.job = cfg_.merge.measure.job;  // the merged job's file may change live; the rest of [merge] not
    if (!(merge == cfg_.merge)) throw ConfigError("[merge] changes take effect at the next start");
    std::shared_ptr<const measure::Job> merged;  // loaded now: a bad one is refused, the running one kept
    if (merged_measure_ && !c.merge.measure.job.empty()) merged = merged_job(c.merge.measure);
    else if (static_cast<bool>(merged_measure_) != !c.merge.measure.job.empty())
      spdlog::warn("daemon: merge.measure.job: a job on the merged scan starts or stops at the next start");
    if (!(c.http == cfg_.http)) spdlog::warn("daemon: [http] changes take effect at the next start");
    const std::vector<Config> cfgs = head_configs(c);
    for (std::size_t i = 0; cfg_.merge.enabled && i < heads_.size(); ++i)  // the merge is subscribed to the endpoints it started with
      if (cfgs[i].publisher.endpoint != heads_[i]->config().publisher.endpoint)
        throw ConfigError(fmt::format("head[{}].publisher.endpoint: with [merge] enabled it changes at the next start", i));
    for (const Config& hc : cfgs) {  // what a head would fail on later, refused now
      hc.publisher.curve.check_key_files();
      if (!hc.calibration.file.empty()) load_calibration(hc.calibration.file);
      if (hc.output.any_file()) create_output_dir(hc.output.dir);
    }
    std::vector<std::shared_ptr<const measure::Job>> jobs;  // [head.measure] jobs: a bad one is refused now, naming its key
    for (const Config& hc : cfgs) jobs.push_back(hc.measure.job.empty() ? nullptr : LiveMeasure::load(hc.measure));
    int restarted = 0;
    for (std::size_t i = 0; i < heads_.size(); ++i)
      if (!heads_[i]->resting() && only_the_job_changed(heads_[i]->config(), cfgs[i]) && heads_[i]->swap_job(cfgs[i], jobs[i]))
        spdlog::info("head {}: SIGHUP: job '{}' swapped in live; the head goes on", heads_[i]->name(), jobs[i]->name);
      else if (settings_values(cfgs[i]) != settings_values(heads_[i]->config()) || heads_[i]->resting()) {
        heads_[i]->reload(cfgs[i]);
        ++restarted;
      }
    if (merged) {
      merged_measure_->swap(merged);
      spdlog::info("merge: SIGHUP: job '{}' swapped in live on the merged scan", merged->name);
    }
    spdlog::info("daemon: SIGHUP: {} of {} heads restart with their configuration; the others go on", restarted, heads_.size());
    counters.reload(true);
  } catch (const std::exception& e) {
    counters.reload(false);
    spdlog::error("daemon: SIGHUP: configuration rejected, keeping the running one: {}", e.what());
  }
}

void HeadsDaemon::on_signal(int sig) {
  if (sig == SIGHUP) return reload();
  {
    std::lock_guard lock(mu_);
    if (stop_) {  // a second stop signal: abort at once (io/atomic_file.h removes the open scans' temporaries)
      const int removed = io::remove_live_temporaries();
      spdlog::warn("daemon: {} again: aborting without finishing the open scans ({} temporar{} removed); exit {}", sig == SIGINT ? "SIGINT" : "SIGTERM",
                   removed, removed == 1 ? "y" : "ies", 128 + sig);
      spdlog::default_logger()->flush();
      std::_Exit(128 + sig);
    }
    spdlog::info("daemon: {}: stopping {} heads (draining the batches in flight)", sig == SIGINT ? "SIGINT" : "SIGTERM", heads_.size());
    stop_ = true;
    stop_at_ = clock::now();
    cv_.notify_all();
  }
  for (const auto& h : heads_) h->stop();
  notifier_.stopping("stopping: draining");
}

void HeadsDaemon::housekeeping() {
  std::unique_lock lock(mu_);
  while (!housekeeping_stop_) {
    cv_.wait_for(lock, 100ms);
    if (housekeeping_stop_) break;
    const auto now = clock::now();
    beat_ = now;
    if (stop_at_ && now - *stop_at_ > std::chrono::duration<double>(cfg_.daemon.stop_timeout)) {
      io::remove_live_temporaries();
      spdlog::critical("daemon: did not stop within daemon.stop_timeout = {} s; exiting 1 (files of the open scans are not kept)",
                       cfg_.daemon.stop_timeout);
      spdlog::default_logger()->flush();
      std::_Exit(1);
    }
    const bool stopping = stop_;
    lock.unlock();  // the heads' locks are never taken under ours
    bool alive = true;
    for (const auto& h : heads_) {
      h->tick(now);
      alive = alive && h->state().alive;
    }
    if (!stopping && alive && notifier_.is_ready()) notifier_.watchdog();
    lock.lock();
  }
}

// [merge.measure] and [modbus] at start: the merged job (its rows' motion
// step from the heads' calibrations) and the Modbus server, a unit per head
// and kMergedUnit for the merged job. `merge`: [merge]'s (nullptr: none).
// InputError: exit 2.
void HeadsDaemon::start_measure(const std::vector<Config>& cfgs, MergeServiceConfig* merge) {
  std::shared_ptr<const measure::Job> job;
  if (merge && !cfg_.merge.measure.job.empty()) {
    job = merged_job(cfg_.merge.measure);
    merge->y_step_mm = merged_row_pitch(cfgs);
  } else if (merge) {
    try {  // without a job only the range map's description wants it
      merge->y_step_mm = merged_row_pitch(cfgs);
    } catch (const InputError&) {
      merge->y_step_mm = 0;
    }
  }
  if (cfg_.modbus.enabled) {
    std::vector<int> units;
    for (std::size_t i = 0; i < cfgs.size(); ++i) units.push_back(static_cast<int>(i) + 1);
    if (job) units.push_back(kMergedUnit);
    modbus_ = std::make_unique<ModbusServer>(cfg_.modbus.address, cfg_.modbus.port, units);
    spdlog::info("modbus: listening on {}:{} (unit 1..{}: the heads' jobs in [[head]] order{})", cfg_.modbus.address, modbus_->port(), cfgs.size(),
                 job ? fmt::format(", unit {}: the merged scan's", kMergedUnit) : std::string());
  }
  if (!job) return;
  merged_measure_ = std::make_unique<LiveMeasure>(registry_, cfg_.merge.measure, job, "merged");
  merged_measure_->set_modbus(modbus_.get(), kMergedUnit);
  spdlog::info("merge: measure: job '{}' ({}, {} tool{}) on the merged scan", job->name, cfg_.merge.measure.job, job->tools.size(),
               job->tools.size() == 1 ? "" : "s");
}

int HeadsDaemon::run() {
  block_daemon_signals();  // before any thread exists
  ::mallopt(M_MMAP_THRESHOLD, 1 << 20);  // as the single head's daemon (daemon.cpp): per-scan buffers in their own mappings
  if (spdlog::get_level() > spdlog::level::debug) spdlog::set_level(spdlog::level::from_str(cfg_.daemon.log_level));
  const std::vector<Config> cfgs = head_configs(cfg_);
  const std::string run_stamp = utc_stamp();
  std::optional<MergeServiceConfig> merge;
  if (cfg_.merge.enabled) {
    merge = merge_service_config(cfg_.merge, cfg_.heads);  // InputError (the transforms file): exit 2
    merge->curve = cfg_.publisher.curve;                    // the merged stream: the top-level [security], as the heads inherit it
  }
  start_measure(cfgs, merge ? &*merge : nullptr);  // InputError (a bad merged job, a Modbus address in use): exit 2
  if (cfg_.http.enabled && cfg_.http.viewer) {
    std::vector<std::string> names;
    for (const HeadEntry& h : cfg_.heads) names.push_back(h.name);
    viewer_ = std::make_unique<HeadsViewer>(names, merge.has_value());
  }
  for (std::size_t i = 0; i < cfgs.size(); ++i)
    heads_.push_back(std::make_unique<Head>(cfg_.heads[i].name, cfgs[i], registry_, run_stamp, merge ? cfg_.merge.subscribe_timeout : 0.0,
                                            viewer_ ? &viewer_->feed(i) : nullptr));
  for (std::size_t i = 0; modbus_ && i < heads_.size(); ++i) heads_[i]->use_modbus(modbus_.get(), static_cast<int>(i) + 1);
  if (merge)
    merge_ = std::make_unique<MergeRunner>(*merge, registry_, cfg_.output, run_stamp, cfg_.merge.range_map, cfg_.merge.ply, merged_measure_.get());
  registry_.set_collector([this] { collect(); });
  SignalThread signals([this](int sig) { on_signal(sig); });
  std::unique_ptr<HttpServer> http = start_http();
  {
    std::lock_guard lock(mu_);
    http_ = http.get();
  }
  std::thread keeper([this] { housekeeping(); });
  if (merge_) merge_->start();
  for (const auto& h : heads_) h->start();
  std::string names;
  for (const auto& h : heads_) names += (names.empty() ? "" : ", ") + h->name();
  spdlog::info("daemon: ready: {} heads ({}){}", heads_.size(), names, merge_ ? ", merged" : "");
  notifier_.ready(fmt::format("running: {} heads", heads_.size()));
  {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return stop_; });
  }
  for (const auto& h : heads_) h->join();  // each finished its open scan and sent its series-end
  if (merge_) merge_->drain(std::chrono::milliseconds(static_cast<long long>(cfg_.merge.window_ms)) + 2s);
  collect();
  double frames = 0, profiles = 0, published = 0, dropped = 0, scans = 0;
  for (const auto& h : heads_) {
    const auto t = h->metrics().totals();
    frames += t.frames, profiles += t.profiles, published += t.published, scans += t.scans;
    dropped += t.dropped[0] + t.dropped[1] + t.dropped[2];
    spdlog::info("head {}: stopped: frames acquired {}, profiles emitted {}, published {}, dropped {}; scans {}", h->name(), t.frames, t.profiles,
                 t.published, t.dropped[0] + t.dropped[1] + t.dropped[2], t.scans);
  }
  spdlog::info("daemon: stopped: {} heads, frames acquired {}, profiles emitted {}, published {}, dropped {}; scans {}", heads_.size(), frames,
               profiles, published, dropped, scans);
  {
    std::lock_guard lock(mu_);
    housekeeping_stop_ = true;
    http_ = nullptr;
    cv_.notify_all();
  }
  keeper.join();
  http.reset();
  viewer_.reset();  // its threads read the heads and the merge
  merge_.reset();
  heads_.front()->metrics().set_up(false);
  spdlog::default_logger()->flush();
  return 0;
}

}  // namespace

int run_heads(const std::filesystem::path& config_path, std::function<void(Config&)> overrides, Config first) {
  HeadsDaemon d(config_path, std::move(overrides), std::move(first));
  return d.run();
}

}  // namespace stripeline::daemon
