// `stripeline bench`: where the time goes, per batch shape, on this machine.
// See bench/README.md for what each line measures and how to read it.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <exception>
#include <latch>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "acquisition/paced_source.h"
#include "acquisition/synthetic_scanner.h"
#include "core/errors.h"
#include "core/thread_scheduling.h"
#include "io/atomic_file.h"
#include "pipeline/pipeline.h"
#include "stages/chain.h"
#include "stages/device_info.h"
#include "app/calibration_setup.h"
#include "app/run_session.h"
#include "tools/bench_calibrated.h"
#include "tools/commands.h"
#include "tools/setting_flags.h"
#if STRIPELINE_HAVE_CUDA
#include "stages/cuda/cuda_stages.h"
#endif

namespace stripeline::tools {

namespace {

using clock = std::chrono::steady_clock;

struct Shape {
  std::string name;
  int width, frame_height, frames;  // frames per batch
  BatchLayout layout() const { return {width, frame_height, frames, PixelFormat::Mono8}; }
  double mb() const { return static_cast<double>(layout().bytes()) / 1e6; }
};

// The simulated scanner's content for a shape, endless.
SyntheticConfig scanner_config(const Shape& s) {
  SyntheticConfig c;
  c.width = s.width;
  c.frame_height = s.frame_height;
  c.frames = 0;
  return c;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
double percentile(std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const std::size_t i = std::min(sorted.size() - 1, static_cast<std::size_t>(std::ceil(p * sorted.size())) - (p > 0 ? 1 : 0));
  return sorted[i];
}

// A JSON object built line by line.
class Json {
 public:
  void field(const std::string& k, double v) { add("\"" + k + "\": " + number(v)); }
  void field(const std::string& k, const std::string& v) { add("\"" + k + "\": \"" + v + "\""); }
  void object(const std::string& k, const Json& o) { add("\"" + k + "\": " + o.str()); }
  std::string str() const {
    std::string s = "{";
    for (std::size_t i = 0; i < items_.size(); ++i) s += (i ? ", " : "") + items_[i];
    return s + "}";
  }

 private:
  static std::string number(double v) {
    if (!std::isfinite(v)) return "null";
    char b[64];
    std::snprintf(b, sizeof b, "%.6g", v);
    return b;
  }
  void add(std::string s) { items_.push_back(std::move(s)); }
  std::vector<std::string> items_;
};

// Hands over pinned batch buffers already filled, as a frame grabber's DMA
// does: each pool slot is rendered once (warm-up), after which fill() only
// stamps the metadata. The pool holds more distinct content than the GPU's L2.
class PrefilledSource final : public FrameSource {
 public:
  // gate: engines started together wait there after `gate_after` batches
  // (their warm-up), so their timed windows coincide.
  PrefilledSource(const Shape& s, std::uint64_t batches, std::latch* gate = nullptr, std::uint64_t gate_after = 0)
      : scanner_(scanner_config(s)), shape_(s), batches_(batches), gate_(gate), gate_after_(gate_after) {}
  BatchLayout frame_layout() const override { return scanner_.frame_layout(); }
  bool fill(Batch& b) override {
    if (served_ == batches_) return false;
    if (gate_ && served_ == gate_after_) {
      passed_gate_ = true;
      gate_->arrive_and_wait();
    }
    if (std::find(rendered_.begin(), rendered_.end(), b.pixels.data()) == rendered_.end()) {
      scanner_.fill(b);  // first sight of this slot: render real stripe content into it
      rendered_.push_back(b.pixels.data());
    }
    b.frames = b.layout.frames;
    for (int i = 0; i < b.frames; ++i) b.meta[i] = FrameMeta{next_id_ + static_cast<std::uint64_t>(i), 0, 0, false, false};
    next_id_ += static_cast<std::uint64_t>(b.frames);
    ++served_;
    return true;
  }
  std::string describe() const override { return "prefilled " + shape_.name; }
  bool passed_gate() const { return passed_gate_; }

 private:
  SyntheticScanner scanner_;
  Shape shape_;
  std::uint64_t batches_, served_ = 0, next_id_ = 0;
  std::latch* gate_;
  std::uint64_t gate_after_;
  bool passed_gate_ = false;
  std::vector<std::byte*> rendered_;
};

// Counts batches; after `warmup` of them, times the rest.
class TimingSink final : public ProfileSink {
 public:
  explicit TimingSink(std::uint64_t warmup) : warmup_(warmup) {}
  void begin(const ScanInfo& info) override {
    frame_bytes_ = info.layout.frame_pixels() * bytes_per_pixel(info.layout.format);
  }
  void consume(const ProfileSpan& p) override {
    ++batches_;
    if (batches_ == warmup_) start_ = clock::now();
    if (batches_ > warmup_) {
      timed_batches_++;
      timed_frames_ += static_cast<std::uint64_t>(p.frames);
      timed_bytes_ += static_cast<std::uint64_t>(p.frames) * frame_bytes_;
    }
    end_ = clock::now();
  }
  void finish() override {}
  double seconds() const { return std::chrono::duration<double>(end_ - start_).count(); }
  clock::time_point start() const { return start_; }
  clock::time_point end() const { return end_; }
  std::uint64_t timed_batches_ = 0, timed_frames_ = 0, timed_bytes_ = 0;

 private:
  std::uint64_t warmup_, batches_ = 0, frame_bytes_ = 0;
  clock::time_point start_, end_;
};

// Frame arrival (the paced source's schedule) -> profile out, per frame, by
// frame id (frames dropped by the live path's bound keep NaN).
class LatencySink final : public ProfileSink {
 public:
  LatencySink(const PacedSource& source, std::vector<double>& latencies_us) : source_(source), latencies_(latencies_us) {}
  void begin(const ScanInfo&) override {}
  void consume(const ProfileSpan& p) override {
    const std::int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now().time_since_epoch()).count();
    for (int f = 0; f < p.frames; ++f)
      if (p.meta[f].frame_id < latencies_.size()) latencies_[p.meta[f].frame_id] = static_cast<double>(now - source_.arrival_ns(p.meta[f])) / 1e3;
  }
  void finish() override {}

 private:
  const PacedSource& source_;
  std::vector<double>& latencies_;
};

struct BenchOptions {
  std::string json;
  std::uint64_t batches = 200;
  bool quick = false;
  bool cpu = true;
  double rate = 20000.0;
  int buffers = 6;
  std::string calibration, roi_offset;           // --calibration FILE, --roi-offset X,Y
  std::shared_ptr<const AppliedCalibration> sheet;  // loaded from them
  std::string method = "default";     // the extraction chain timed: the default, or a method by name
  std::string estimator = "centroid";  // with method adaptive
  int neighbour_columns = 0;           // the neighbour check after extraction (0 = off)
  SettingFlags processing;              // --pixel-bits (not given: the synthetic frames' own depth)
  bool along_columns = false;          // the blur along the columns only instead of the default 2-D blur
  bool production_only = false;
  std::uint64_t latency_frames = 0;    // --latency-frames: frames of each latency run (0: one second's)
  std::string backend = "auto";        // --backend: where the chain runs (cpu on a GPU host too)
  std::vector<int> devices;            // --devices: the multi-device run instead of the shapes (one engine per entry)
  int live_only = 0;                   // --live-only N: only the live path's run, N times (the host's stalls told apart from the path's), and the sustained rate
  std::string lane_cpus;               // --lane-cpus: the live path's lane threads on these CPUs (a second run beside the default's)
  int lane_fifo = 0;                   // --lane-realtime-priority: and at SCHED_FIFO at this priority
  bool copy_ahead_ab = false;          // --copy-ahead-ab: with --live-only, the copy kernel against none on two dedicated threads, interleaved
  std::vector<int> live_lanes{0};      // --live-lanes: the live path's runs with each of these lane thread counts (0 = automatic)
  ChainConfig chain() const {
    ChainConfig c;  // the built-in default (adaptive, centroid)
    if (method != "default") c.column.method = parse_method(method);  // cog etc. with their default threshold 40 / min_peak 50
    c.adaptive.estimator = parse_estimator(estimator);
    c.neighbour_check.columns = neighbour_columns;
    c.blur_across = !along_columns;
    return chain_with_flags(processing, c);
  }
};

// The CPU backend's compute alone on the batch (warmed up).
void bench_cpu(const Shape& shape, const BenchOptions& o, const Batch& batch, const ChainConfig& chain, Json& j) {
  const BatchLayout& layout = batch.layout;
  auto cpu = make_processor(Backend::Cpu, layout, chain);
  ProfileBatch out(layout.width, layout.frames, 1, &allocate_host);
  cpu->process(batch, out);  // warm-up: per-thread scratch
  std::vector<double> ms;
  for (int i = 0; i < (o.quick ? 2 : 5); ++i) {
    const auto t0 = clock::now();
    cpu->process(batch, out);
    ms.push_back(std::chrono::duration<double, std::milli>(clock::now() - t0).count());
  }
  const double m = median(ms);
  std::printf("  %-34s %9.3f ms/batch  %10.1f MB/s  %12.0f profiles/s  (%u threads)\n", "CPU backend (compute)", m, shape.mb() / m * 1e3,
              shape.frames / m * 1e3, std::thread::hardware_concurrency());
  Json c;
  c.field("ms_per_batch", m);
  c.field("mb_per_s", shape.mb() / m * 1e3);
  c.field("profiles_per_s", shape.frames / m * 1e3);
  c.field("threads", std::thread::hardware_concurrency());
  j.object("cpu", c);
}

#if STRIPELINE_HAVE_CUDA
// The kernels on data already on the device (compute_only); three
// processors in rotation so the input does not sit in the GPU's L2.
void bench_cuda_compute(const Shape& shape, const BenchOptions& o, const Batch& batch, const ChainConfig& chain, double h2d_ms, Json& j) {
  const BatchLayout& layout = batch.layout;
  std::vector<std::unique_ptr<cuda::CudaProcessor>> procs;
  Batch pinned(layout, host_allocator_for(Backend::Cuda));
  std::memcpy(pinned.pixels.data(), batch.pixels.data(), layout.bytes());
  pinned.frames = layout.frames;
  ProfileBatch out(layout.width, layout.frames, 1, host_allocator_for(Backend::Cuda));
  for (int i = 0; i < 3; ++i) {
    procs.push_back(cuda::make_cuda_processor_ex(layout, chain));
    procs.back()->process(pinned, out);  // uploads this processor's input
  }
  std::vector<double> ms;
  for (int i = 0; i < (o.quick ? 6 : 60); ++i) ms.push_back(procs[i % 3]->compute_only(layout.frames));
  const double m = median(ms);
  std::printf("  %-34s %9.3f ms/batch  %10.1f MB/s  %12.0f profiles/s  (%.1f%% of the batch's H2D time)\n", "CUDA fused kernel (compute only)",
              m, shape.mb() / m * 1e3, shape.frames / m * 1e3, 100.0 * m / h2d_ms);
  Json c;
  c.field("ms_per_batch", m);
  c.field("mb_per_s", shape.mb() / m * 1e3);
  c.field("profiles_per_s", shape.frames / m * 1e3);
  c.field("fraction_of_h2d", m / h2d_ms);
  j.object("cuda_compute", c);
}

// Small batches: the fused kernel against the warp per column (stripe_kernels.h).
void bench_small_batch_kernels(const BenchOptions& o, const Batch& batch, const ChainConfig& chain, Json& j) {
  const BatchLayout& layout = batch.layout;
  Json small;
  std::printf("  the kernels for a few frames (compute only, median of %d; the line model included when on):\n", o.quick ? 20 : 200);
  for (int n : {1, 2, 4, 8, 16}) {
    BatchLayout few = layout;
    few.frames = n;
    Batch pinned(few, host_allocator_for(Backend::Cuda));
    std::memcpy(pinned.pixels.data(), batch.pixels.data(), few.bytes());
    pinned.frames = n;
    ProfileBatch out(few.width, n, 1, host_allocator_for(Backend::Cuda));
    double us[2];
    for (int warp : {0, 1}) {
      cuda::CudaProcessorOptions options;
      options.warp_chain_max_frames = warp ? n : 0;
      auto proc = cuda::make_cuda_processor_ex(few, chain, options);
      proc->process(pinned, out);
      std::vector<double> ms;
      for (int i = 0; i < (o.quick ? 20 : 200); ++i) ms.push_back(proc->compute_only(n));
      us[warp] = median(ms) * 1e3;
    }
    std::printf("    %2d frame(s): fused kernel %7.1f us, warp per column %7.1f us\n", n, us[0], us[1]);
    Json k;
    k.field("fused_us", us[0]);
    k.field("warp_chain_us", us[1]);
    small.object("frames_" + std::to_string(n), k);
  }
  j.object("small_batch_kernels", small);
}

// End to end, streaming, overlapped: pre-filled batches through the CUDA
// pipeline; with `sheet`, every detection mapped to mm on the GPU as well
// (tools/bench_calibrated.h).
void bench_cuda_streaming(const Shape& shape, const BenchOptions& o, const ChainConfig& chain, const CopyBandwidth& bw,
                          std::shared_ptr<const AppliedCalibration> sheet, Json& j) {
  PrefilledSource src(shape, o.batches + static_cast<std::uint64_t>(o.buffers));
  TimingSink sink(static_cast<std::uint64_t>(o.buffers));
  CalibratedPointsCheck mapped;
  PipelineOptions po;
  po.backend = Backend::Cuda;
  po.batch_frames = shape.frames;
  po.buffers = o.buffers;
  po.chain = chain;
  po.sheet = sheet;
  run_engine(po, src, sheet ? std::vector<ProfileSink*>{&mapped, &sink} : std::vector<ProfileSink*>{&sink});
  const double s = sink.seconds();
  const double mbps = static_cast<double>(sink.timed_bytes_) / 1e6 / s;
  const double ms_per_batch = s * 1e3 / static_cast<double>(sink.timed_batches_);
  Json c;
  c.field("ms_per_batch", ms_per_batch);
  c.field("mb_per_s", mbps);
  c.field("profiles_per_s", sink.timed_frames_ / s);
  c.field("fraction_of_h2d", mbps / (bw.h2d_gb_per_s * 1e3));
  if (sheet) {
    std::printf("  %-34s %9.3f ms/batch  %10.1f MB/s  %12.0f profiles/s  (%.1f%% of pinned H2D; %.0f points mapped per batch)\n",
                "CUDA streaming + calibrated points", ms_per_batch, mbps, sink.timed_frames_ / s, 100.0 * mbps / (bw.h2d_gb_per_s * 1e3),
                static_cast<double>(mapped.points_per_batch()));
    c.field("calibration_id", sheet->id);
    j.object("cuda_streaming_calibrated", c);
  } else {
    std::printf("  %-34s %9.3f ms/batch  %10.1f MB/s  %12.0f profiles/s  (%.1f%% of pinned H2D, %llu batches, %d buffers)\n",
                "CUDA end-to-end streaming", ms_per_batch, mbps, sink.timed_frames_ / s, 100.0 * mbps / (bw.h2d_gb_per_s * 1e3),
                static_cast<unsigned long long>(sink.timed_batches_), o.buffers);
    c.field("batches", static_cast<double>(sink.timed_batches_));
    c.field("buffers", o.buffers);
    j.object("cuda_streaming", c);
  }
}
#endif

Json bench_shape(const Shape& shape, const BenchOptions& o, bool cuda) {
  Json j;
  j.field("width", shape.width);
  j.field("frame_height", shape.frame_height);
  j.field("frames_per_batch", shape.frames);
  j.field("batch_mb", shape.mb());
  std::printf("\n== %s: %d frames of %dx%d per batch (%dx%d, %.1f MB)\n", shape.name.c_str(), shape.frames, shape.width, shape.frame_height,
              shape.width, shape.frames * shape.frame_height, shape.mb());

  const BatchLayout layout = shape.layout();
  const ChainConfig chain = o.chain();
  Batch batch(layout, &allocate_host);
  SyntheticScanner scanner(scanner_config(shape));
  {  // synthetic rendering, on its own line
    std::vector<double> ms;
    for (int i = 0; i < (o.quick ? 1 : 3); ++i) {
      const auto t0 = clock::now();
      scanner.fill(batch);
      ms.push_back(std::chrono::duration<double, std::milli>(clock::now() - t0).count());
    }
    std::printf("  %-34s %9.3f ms/batch  %10.1f MB/s\n", "synthetic rendering (CPU)", median(ms), shape.mb() / median(ms) * 1e3);
    j.field("render_ms", median(ms));
  }
  if (o.cpu) bench_cpu(shape, o, batch, chain, j);
  if (!cuda) return j;
#if STRIPELINE_HAVE_CUDA
  const CopyBandwidth bw = measure_copy_bandwidth(layout.bytes(), o.quick ? 5 : 30);
  const double h2d_ms = static_cast<double>(layout.bytes()) / (bw.h2d_gb_per_s * 1e9) * 1e3;
  std::printf("  %-34s %9.3f ms/batch  %10.1f MB/s  (D2H %.1f MB/s, pageable H2D %.1f MB/s)\n", "pinned H2D copy (the bus limit)", h2d_ms,
              bw.h2d_gb_per_s * 1e3, bw.d2h_gb_per_s * 1e3, bw.pageable_h2d_gb_per_s * 1e3);
  Json b;
  b.field("h2d_gb_per_s", bw.h2d_gb_per_s);
  b.field("d2h_gb_per_s", bw.d2h_gb_per_s);
  b.field("pageable_h2d_gb_per_s", bw.pageable_h2d_gb_per_s);
  b.field("h2d_ms_per_batch", h2d_ms);
  b.field("max_profiles_per_s", shape.frames / h2d_ms * 1e3);
  j.object("bus", b);

  bench_cuda_compute(shape, o, batch, chain, h2d_ms, j);
  if (chain.column.method == ColumnMethod::Adaptive) bench_small_batch_kernels(o, batch, chain, j);
  bench_cuda_streaming(shape, o, chain, bw, nullptr, j);
  if (o.sheet) bench_cuda_streaming(shape, o, chain, bw, o.sheet, j);
#endif
  return j;
}

// ---------------------------------------------------------------------------
// Several engines at once (docs/scale-out.md, "Several GPUs"): one per entry
// of --devices, each streaming pre-filled pinned batches of the shape through
// its own pipeline on its device (PipelineOptions::device: the code path of a
// daemon's heads). The engines wait for each other after their warm-up, so
// the timed windows coincide; the total is every engine's timed frames over
// the span from the first start to the last end.
struct EnginesRun {
  std::vector<double> profiles_per_s;  // each engine over its own window
  double total_profiles_per_s = 0;
};
[[maybe_unused]] EnginesRun run_engines_together(const Shape& shape, const BenchOptions& o, const std::vector<int>& devices) {  // CUDA builds only
  const auto n = devices.size();
  const auto warmup = static_cast<std::uint64_t>(o.buffers);
  std::latch gate(static_cast<std::ptrdiff_t>(n));
  std::vector<std::unique_ptr<PrefilledSource>> sources;
  std::vector<std::unique_ptr<TimingSink>> sinks;
  for (std::size_t i = 0; i < n; ++i) {
    sources.push_back(std::make_unique<PrefilledSource>(shape, o.batches + warmup, &gate, warmup));
    sinks.push_back(std::make_unique<TimingSink>(warmup));
  }
  std::vector<std::exception_ptr> errors(n);
  {
    std::vector<std::jthread> engines;
    for (std::size_t i = 0; i < n; ++i)
      engines.emplace_back([&, i] {
        try {
          PipelineOptions po;
          po.backend = Backend::Cuda;
          po.device = devices[i];
          po.batch_frames = shape.frames;
          po.buffers = o.buffers;
          po.chain = o.chain();
          run_engine(po, *sources[i], {sinks[i].get()});
        } catch (...) {
          errors[i] = std::current_exception();
          if (!sources[i]->passed_gate()) gate.count_down();  // the others must not wait for an engine that failed before its gate
        }
      });
  }
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
  EnginesRun r;
  clock::time_point first = sinks[0]->start(), last = sinks[0]->end();
  std::uint64_t frames = 0;
  for (const auto& s : sinks) {
    r.profiles_per_s.push_back(static_cast<double>(s->timed_frames_) / s->seconds());
    first = std::min(first, s->start());
    last = std::max(last, s->end());
    frames += s->timed_frames_;
  }
  r.total_profiles_per_s = static_cast<double>(frames) / std::chrono::duration<double>(last - first).count();
  return r;
}

std::string device_list(const std::vector<int>& devices) {
  std::string s;
  for (const int d : devices) s += (s.empty() ? "" : ",") + std::to_string(d);
  return s;
}

// --devices: pinned H2D per device alone and all at once, then the streaming
// total for the first 1..N entries, against N x the first device alone.
Json bench_devices(const Shape& shape, const BenchOptions& o) {
#if !STRIPELINE_HAVE_CUDA
  (void)shape;
  (void)o;
  throw_no_cuda_backend();  // never reached: --devices is refused first without CUDA
#else
  const std::vector<int>& devices = o.devices;
  Json j;
  std::printf("\n== several engines: %d frames of %dx%d per batch (%.1f MB), devices %s\n", shape.frames, shape.width, shape.frame_height,
              shape.mb(), device_list(devices).c_str());
  for (const int d : devices) std::printf("  device %d: %s\n", d, cuda_device_description(d).c_str());
  const int copies = o.quick ? 10 : 100;
  Json h2d;
  double alone_sum = 0;
  for (const int d : devices) {
    const double gbps = measure_h2d_together(shape.layout().bytes(), {d}, copies)[0];
    alone_sum += gbps;
    std::printf("  %-34s %9.1f GB/s\n", ("pinned H2D, device " + std::to_string(d) + " alone").c_str(), gbps);
    h2d.field("alone_device_" + std::to_string(d), gbps);
  }
  const std::vector<double> together = measure_h2d_together(shape.layout().bytes(), devices, copies);
  double together_sum = 0;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    together_sum += together[i];
    std::printf("  %-34s %9.1f GB/s\n", ("pinned H2D, device " + std::to_string(devices[i]) + " with the others").c_str(), together[i]);
    h2d.field("together_device_" + std::to_string(devices[i]) + "_" + std::to_string(i), together[i]);
  }
  std::printf("  %-34s %9.1f GB/s  (%.3f of the sum alone)\n", "pinned H2D, all at once", together_sum, together_sum / alone_sum);
  h2d.field("together_sum_gb_per_s", together_sum);
  h2d.field("together_over_alone", together_sum / alone_sum);
  j.object("pinned_h2d", h2d);

  Json streaming;
  double one = 0;
  for (std::size_t k = 1; k <= devices.size(); ++k) {
    const std::vector<int> used(devices.begin(), devices.begin() + static_cast<std::ptrdiff_t>(k));
    const EnginesRun r = run_engines_together(shape, o, used);
    if (k == 1) one = r.total_profiles_per_s;
    std::string each;
    for (const double p : r.profiles_per_s) each += (each.empty() ? "" : " + ") + std::to_string(static_cast<long long>(std::lround(p)));
    std::printf("  %-34s %12.0f profiles/s  (%.3f of %zu x the first alone; engines %s)\n",
                ("streaming on " + device_list(used)).c_str(), r.total_profiles_per_s, r.total_profiles_per_s / (static_cast<double>(k) * one), k,
                each.c_str());
    Json e;
    e.field("devices", device_list(used));
    e.field("profiles_per_s", r.total_profiles_per_s);
    e.field("ratio_to_k_times_one", r.total_profiles_per_s / (static_cast<double>(k) * one));
    for (std::size_t i = 0; i < r.profiles_per_s.size(); ++i) e.field("engine_" + std::to_string(i) + "_profiles_per_s", r.profiles_per_s[i]);
    streaming.object("engines_" + std::to_string(k), e);
  }
  // The other devices alone too: the host's GPUs need not be equal.
  double alone_total = one;
  for (std::size_t i = 1; i < devices.size(); ++i) {
    if (devices[i] == devices[0]) continue;
    const EnginesRun r = run_engines_together(shape, o, {devices[i]});
    alone_total += r.total_profiles_per_s;
    std::printf("  %-34s %12.0f profiles/s\n", ("streaming on " + std::to_string(devices[i]) + " alone").c_str(), r.total_profiles_per_s);
    streaming.field("alone_device_" + std::to_string(devices[i]) + "_profiles_per_s", r.total_profiles_per_s);
  }
  streaming.field("alone_sum_profiles_per_s", alone_total);
  j.object("streaming", streaming);
  return j;
#endif
}

// What the host took from the run's threads while it ran: the VM's steal
// time (/proc/stat: time the hypervisor gave this machine's virtual CPUs to
// something else; 0 where the kernel does not account it) and this process's
// involuntary context switches (a thread preempted by another thread of
// this machine). A latency tail that comes with either is the host's.
struct HostInterference {
  double steal_ms = 0;
  long preemptions = 0;
  static HostInterference now() {
    HostInterference h;
    if (std::FILE* f = std::fopen("/proc/stat", "r")) {
      unsigned long long user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
      if (std::fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &user, &nice, &system, &idle, &iowait, &irq, &softirq, &steal) == 8)
        h.steal_ms = static_cast<double>(steal) * 1e3 / static_cast<double>(::sysconf(_SC_CLK_TCK));
      std::fclose(f);
    }
    rusage usage{};
    if (::getrusage(RUSAGE_SELF, &usage) == 0) h.preemptions = usage.ru_nivcsw;
    return h;
  }
  HostInterference since(const HostInterference& start) const { return {steal_ms - start.steal_ms, preemptions - start.preemptions}; }
  std::string text() const {
    char t[160];
    std::snprintf(t, sizeof t, "the host meanwhile: %.0f ms stolen from this VM's CPUs (steal), %ld involuntary context switches of this process",
                  steal_ms, preemptions);
    return t;
  }
};

// One paced run: `frames` frames at `rate`, batches of `k`, the live path's
// growth up to `live_max` (0 = off: the plain batch-of-k path).
struct PacedRun {
  double p50 = 0, p99 = 0, max = 0;  // frame arrival -> profile, us, after the first tenth
  double p90 = 0, p999 = 0;          // the tail's shape: the 90th and 99.9th percentiles
  std::uint64_t frames = 0, dropped = 0, backlog = 0;  // frames timed; dropped by the bound; most frames seen waiting at a fill
  std::uint64_t dropped_timed = 0;  // of the dropped, those after the first tenth (the timed frames' span)
  double gpu_us = 0;  // the device's time per batch (the processor's events around the kernels), mean over the run
  LiveStats live;
  std::string engine_phases;  // the persistent engine's (CudaProcessor::live_report), when it ran the frames
  std::uint64_t engine_launches = 0;  // its kernels' launches by the run's end (the first, then one after each idle end)
  std::array<double, StageTimes::kStages> stage_us{};  // through the pipeline: each stage's median a batch (PipelineStats::stages)
  HostInterference host;  // during the run
  double frames_per_s = 0;  // processor_alone: frames done a second, all its threads together (the first one's rate times their count)
  std::string stages_text() const {
    char text[160];
    std::snprintf(text, sizeof text, "the source's hand-over %.2f us, the processing %.2f us, the point count %.2f us, the sinks %.2f us", stage_us[0],
                  stage_us[1], stage_us[2], stage_us[3]);
    return text;
  }
  // p50, p99, max and frames of these latencies (us).
  void take(std::vector<double> us) {
    std::sort(us.begin(), us.end());
    if (!us.empty()) p50 = percentile(us, 0.50), p90 = percentile(us, 0.90), p99 = percentile(us, 0.99), p999 = percentile(us, 0.999), max = us.back();
    frames = us.size();
  }
  Json latency_json() const {
    Json j;
    j.field("p50_us", p50);
    j.field("p99_us", p99);
    j.field("max_us", max);
    j.field("p90_us", p90);
    j.field("p999_us", p999);
    return j;
  }
};
PacedRun paced_run(const Shape& frame_shape, const BenchOptions& o, Backend backend, double rate, std::uint64_t frames, int k, int live_max,
                   bool graphs = true, LaneScheduling scheduling = LaneScheduling::Auto, int lanes = 0, bool engine = true,
                   const ThreadScheduling& lane_scheduling = {}) {
  std::vector<double> lat(frames, std::nan(""));
  PacedSource src(scanner_config(frame_shape), {{frames, rate}});
  LatencySink sink(src, lat);
  PipelineOptions po;
  po.backend = backend;
  po.batch_frames = k;
  po.buffers = 8;
  po.live_max_batch = live_max;
  po.scheduling = scheduling;
  po.lanes = lanes;
  po.chain = o.chain();
  po.chain.cuda_graphs = po.chain.cuda_graphs && graphs;
  po.chain.persistent_engine = po.chain.persistent_engine && engine;
  po.lane_thread_scheduling = lane_scheduling;
  const HostInterference before = HostInterference::now();
  const PipelineStats stats = run_engine(po, src, {&sink});
  const HostInterference host = HostInterference::now().since(before);
  std::vector<double> steady;
  PacedRun r;
  for (std::size_t i = frames / 10; i < lat.size(); ++i)  // skip the warm-up tenth
    if (!std::isnan(lat[i]))
      steady.push_back(lat[i]);
    else
      ++r.dropped_timed;
  r.take(std::move(steady));
  r.dropped = src.dropped();
  r.backlog = src.largest_backlog();
  r.live = stats.live;
  r.host = host;
  for (int i = 0; i < StageTimes::kStages && stats.stages; ++i)
    r.stage_us[static_cast<std::size_t>(i)] = stats.stages->median_us(static_cast<StageTimes::Stage>(i));
  if (stats.batches > 0) r.gpu_us = stats.compute_ms * 1e3 / static_cast<double>(stats.batches);
  return r;
}

// The highest rate the batch-of-1 path sustains (live growth off), by a
// sweep: a rate is sustained when, over one second of frames (a quarter with
// --quick), the frames seen waiting at the source never exceed
// kSustainBacklog and p99 stays within kSustainBacklog frame periods (plus
// 1 ms for the host's scheduling). Doubling from 250 frames/s to the first
// rate that fails, then halving the interval four times.
constexpr std::uint64_t kSustainBacklog = 16;
Json sustained_rate(const Shape& frame_shape, const BenchOptions& o, Backend backend) {
  const double seconds = o.quick ? 0.25 : 1.0;
  auto sustained = [&](double rate, PacedRun& r) {
    r = paced_run(frame_shape, o, backend, rate, std::max<std::uint64_t>(500, static_cast<std::uint64_t>(rate * seconds)), 1, 0);
    const bool ok = r.backlog <= kSustainBacklog && r.p99 <= kSustainBacklog * 1e6 / rate + 1000.0;
    std::printf("    %9.0f frames/s: p50 %8.1f us  p99 %8.1f us  max %9.1f us, at most %5llu frames waiting: %s\n", rate, r.p50, r.p99, r.max,
                static_cast<unsigned long long>(r.backlog), ok ? "sustained" : "falls behind");
    return ok;
  };
  std::printf("  batch of 1, the highest sustained rate (sustained: at most %llu frames waiting, p99 <= %llu frame periods + 1 ms):\n",
              static_cast<unsigned long long>(kSustainBacklog), static_cast<unsigned long long>(kSustainBacklog));
  double good = 0, bad = 0;
  PacedRun best, r;
  for (double rate = 250; rate <= 1.6e6; rate *= 2) {
    if (!sustained(rate, r)) {
      bad = rate;
      break;
    }
    good = rate;
    best = r;
  }
  for (int i = 0; i < 4 && good > 0 && bad > 0; ++i) {
    const double mid = std::round((good + bad) / 2);
    if (sustained(mid, r)) {
      good = mid;
      best = r;
    } else {
      bad = mid;
    }
  }
  std::printf("  batch of 1 sustains %.0f frames/s (p50 %.1f us, p99 %.1f us there)%s\n", good, best.p50, best.p99,
              bad > 0 ? "" : " (the sweep's top: not limited)");
  Json j;
  j.field("sustained_fps", good);
  j.field("first_failing_fps", bad);
  j.field("p50_us", best.p50);
  j.field("p99_us", best.p99);
  j.field("max_us", best.max);
  j.field("criterion_backlog_frames", static_cast<double>(kSustainBacklog));
  return j;
}

#if STRIPELINE_HAVE_CUDA
// One frame of the bench's synthetic scanner in pinned memory, and a CUDA
// processor for frames of 1 of the bench's chain, warmed up (its graph
// captured).
struct OneFrameProcessor {
  BatchLayout one;
  Batch in;
  ProfileBatch out;
  std::unique_ptr<cuda::CudaProcessor> processor;
  OneFrameProcessor(const Shape& frame_shape, const BenchOptions& o, const cuda::CudaProcessorOptions& options = {})
      : one(one_frame(frame_shape)),
        in(one, host_allocator_for(Backend::Cuda)),
        out(one.width, 1, output_slots(o.chain(), one.frame_height), host_allocator_for(Backend::Cuda)),
        processor(cuda::make_cuda_processor_ex(one, o.chain(), options)) {
    SyntheticScanner scanner(scanner_config(frame_shape));
    scanner.fill(in);
    in.frames = 1;
    for (int i = 0; i < 50; ++i) process();
  }
  void process() { processor->process(in, out); }
  static BatchLayout one_frame(const Shape& s) {
    BatchLayout l = s.layout();
    l.frames = 1;
    return l;
  }
};
#endif

// The floor of the per-frame path on this host, beside the pipeline's
// batch of 1: one thread and one CUDA processor, frames back to back, each
// processed alone (upload, chain, download: one graph replay, waited on by
// spinning); the time of each call. No pool, no pipeline stages, no sink,
// no arrival schedule: what one frame costs the host and the device.
// With `threads` > 1, as many threads and processors at once (each its own
// stream): whether frames in flight overlap on the device (the pipeline's
// lanes do the same); the figures are the first thread's.
PacedRun processor_alone(const Shape& frame_shape, const BenchOptions& o, std::uint64_t frames, int threads = 1
#if STRIPELINE_HAVE_CUDA
                         ,
                         const cuda::CudaProcessorOptions& options = {}
#endif
) {
  PacedRun r;
#if STRIPELINE_HAVE_CUDA
  auto run = [&](PacedRun* into) {
    OneFrameProcessor p(frame_shape, o, options);
    std::vector<double> us;
    us.reserve(frames);
    double device_us = 0;
    const auto start = clock::now();
    for (std::uint64_t i = 0; i < frames; ++i) {
      const auto t0 = clock::now();
      p.process();
      us.push_back(std::chrono::duration<double, std::micro>(clock::now() - t0).count());
      device_us += p.processor->last_compute_ms() * 1e3;
    }
    if (into == nullptr) return;
    into->frames_per_s = static_cast<double>(frames) * threads / std::chrono::duration<double>(clock::now() - start).count();
    into->take(std::move(us));
    into->gpu_us = frames > 0 ? device_us / static_cast<double>(frames) : 0.0;
    into->engine_phases = p.processor->live_report();
  };
  std::vector<std::thread> others;
  for (int t = 1; t < threads; ++t) others.emplace_back(run, nullptr);
  run(&r);
  for (std::thread& t : others) t.join();
#else
  (void)frame_shape, (void)o, (void)frames, (void)threads;
#endif
  return r;
}

// The live path's floor with dedicated threads instead of the pipeline's
// scheduling: `threads` processors, each on its own thread, take the frames
// arriving at `rate` in turn (frame i to thread i mod threads), each thread
// spinning until its next frame's arrival; latency = done - arrival. No
// hand-over between threads, no pool, no sink: what a dedicated-thread live
// path could reach on this host (issue 24).
PacedRun dedicated_threads(const Shape& frame_shape, const BenchOptions& o, double rate, std::uint64_t frames, int threads
#if STRIPELINE_HAVE_CUDA
                           ,
                           const cuda::CudaProcessorOptions& options = {}
#endif
) {
  PacedRun r;
#if STRIPELINE_HAVE_CUDA
  std::vector<double> lat(frames, 0.0);
  std::latch ready(threads);
  std::atomic<std::int64_t> start_ns{0};
  auto run = [&](int t) {
    OneFrameProcessor p(frame_shape, o, options);
    ready.arrive_and_wait();
    if (t == 0) start_ns.store(std::chrono::duration_cast<std::chrono::nanoseconds>((clock::now() + std::chrono::milliseconds(2)).time_since_epoch()).count());
    while (start_ns.load() == 0) {
    }
    const clock::time_point start{std::chrono::duration_cast<clock::duration>(std::chrono::nanoseconds(start_ns.load()))};
    for (std::uint64_t i = static_cast<std::uint64_t>(t); i < frames; i += static_cast<std::uint64_t>(threads)) {
      const auto due = start + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(static_cast<double>(i) / rate));
      while (clock::now() < due) {
      }
      p.process();
      lat[i] = std::chrono::duration<double, std::micro>(clock::now() - due).count();
    }
    if (t == 0) r.engine_launches = p.processor->live_launches(), r.engine_phases = p.processor->live_report();
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(run, t);
  for (std::thread& t : pool) t.join();
  r.take(std::vector<double>(lat.begin() + static_cast<std::ptrdiff_t>(frames / 10), lat.end()));  // the warm-up tenth skipped
#else
  (void)frame_shape, (void)o, (void)rate, (void)frames, (void)threads;
#endif
  return r;
}

#if STRIPELINE_HAVE_CUDA
// The copy kernel ahead of the chain (the default) against the chain's blocks
// copying the frame, at the camera's rate on two dedicated threads, the two
// interleaved `repeats` times (the host's noise falls on both alike): what
// the copy kernel, made for the rate of frames back to back, costs a frame
// alone at 20 kHz.
void copy_ahead_runs(const Shape& frame_shape, const BenchOptions& o, std::uint64_t frames, int repeats, Json& all) {
  for (int i = 0; i < repeats; ++i)
    for (bool ahead : {true, false}) {
      const PacedRun r = dedicated_threads(frame_shape, o, o.rate, frames, 2, {.live_copy_ahead = ahead});
      std::printf("  batch of  1, 2 dedicated threads at %.0f frames/s, %s: p50 %8.1f us  p99 %8.1f us  max %8.1f us  (p90 %.1f, p99.9 %.1f; %llu "
                  "frames)\n    the engine's device time: %s\n",
                  o.rate, ahead ? "the copy kernel ahead (the default)" : "no copy kernel (live_copy_ahead = false)", r.p50, r.p99, r.max, r.p90,
                  r.p999, static_cast<unsigned long long>(r.frames), r.engine_phases.c_str());
      all.object(std::string(ahead ? "threads_2_copy_ahead" : "threads_2_copy_in_chain") + (i > 0 ? "_" + std::to_string(i + 1) : ""),
                 r.latency_json());
    }
}
#endif

// Batches of 1, 4 and 16 at `rate` through the pipeline; the batch of 1's
// stages (where its latency goes) too.
void fixed_batch_runs(const Shape& frame_shape, const BenchOptions& o, Backend backend, double rate, std::uint64_t frames, Json& all) {
  for (int k : {1, 4, 16}) {
    const PacedRun r = paced_run(frame_shape, o, backend, rate, frames, k, 0);
    std::printf("  batch of %2d frames: p50 %8.1f us  p99 %8.1f us  max %8.1f us  (%llu frames, at most %llu waiting; device %.1f us a batch)\n", k, r.p50,
                r.p99, r.max, static_cast<unsigned long long>(r.frames), static_cast<unsigned long long>(r.backlog), r.gpu_us);
    if (k == 1)
      std::printf("    where it goes, medians a batch: %s\n", r.stages_text().c_str());
    Json j = r.latency_json();
    j.field("device_us_per_batch", r.gpu_us);
    j.field("source_handover_us_median", r.stage_us[0]);
    j.field("processing_us_median", r.stage_us[1]);
    j.field("point_count_us_median", r.stage_us[2]);
    j.field("sinks_us_median", r.stage_us[3]);
    j.field("frames", static_cast<double>(r.frames));
    j.field("largest_backlog", static_cast<double>(r.backlog));
    all.object("batch_" + std::to_string(k), j);
  }
}

#if STRIPELINE_HAVE_CUDA
// The persistent engine (stages/cuda/live_engine.h, the default) at the
// camera's rate on dedicated threads.
void engine_runs(const Shape& frame_shape, const BenchOptions& o, double rate, std::uint64_t frames, Json& all) {
  for (int threads : {1, 2}) {
    const PacedRun r = dedicated_threads(frame_shape, o, rate, frames, threads);
    std::printf("  batch of  1, %d dedicated thread(s), the persistent engine: p50 %8.1f us  p99 %8.1f us  max %8.1f us  (%llu frames; "
                "its kernels launched %llu times)\n",
                threads, r.p50, r.p99, r.max, static_cast<unsigned long long>(r.frames), static_cast<unsigned long long>(r.engine_launches));
    if (!r.engine_phases.empty()) std::printf("    the engine's device time: %s\n", r.engine_phases.c_str());
    all.object("batch_1_engine_threads_" + std::to_string(threads), r.latency_json());
  }
}
#endif

// The live path's kinds of run: each lane thread count of --live-lanes with
// the default scheduling, then (with --lane-cpus or --lane-realtime-priority)
// each again with the lane threads so scheduled.
std::vector<std::pair<ThreadScheduling, int>> live_run_kinds(const BenchOptions& o) {
  ThreadScheduling pinned;
  if (!o.lane_cpus.empty()) pinned.cpus = parse_cpu_list(o.lane_cpus, "--lane-cpus");
  pinned.fifo_priority = o.lane_fifo;
  std::vector<std::pair<ThreadScheduling, int>> kinds;
  for (int count : o.live_lanes) kinds.emplace_back(ThreadScheduling{}, count);
  if (!pinned.is_default())
    for (int count : o.live_lanes) kinds.emplace_back(pinned, count);
  return kinds;
}

// Frames of each live-path run at the camera's rate (--latency-frames, else
// one second's; --quick at most 4,000).
std::uint64_t live_run_frames(const BenchOptions& o) {
  if (o.latency_frames > 0) return o.latency_frames;
  const auto one_second = static_cast<std::uint64_t>(o.rate);
  return o.quick ? std::min<std::uint64_t>(4000, one_second) : one_second;
}

// The live path at the camera's rate (o.rate, not clamped): batch of 1
// growing while frames wait, `repeats` times; with --lane-cpus or
// --lane-realtime-priority, as many runs with the lane threads so
// scheduled after them. Each run's line says what the host took meanwhile.
void live_path_runs(const Shape& frame_shape, const BenchOptions& o, Backend backend, int repeats, Json& all) {
  const double live_rate = o.rate;
  const std::uint64_t n = live_run_frames(o);
  const PipelineOptions defaults;
  for (const auto& [lanes, count] : live_run_kinds(o)) {
    try {
      if (lanes.fifo_priority > 0) lanes.check_permitted("--lane-realtime-priority");
    } catch (const ConfigError& e) {
      std::printf("  live path, lane threads %s: not measured (%s)\n", lanes.describe().c_str(), e.what());
      continue;
    }
    for (int i = 0; i < repeats; ++i) {
      const PacedRun r = paced_run(frame_shape, o, backend, live_rate, n, 1, defaults.live_max_batch, true, LaneScheduling::Auto, count, true, lanes);
      const std::string where = (lanes.is_default() ? "" : ", lane threads " + lanes.describe()) +
                                (count > 0 ? ", " + std::to_string(count) + " lane thread" + (count == 1 ? "" : "s") : "");
      std::printf("  live path at %.0f frames/s (batch of 1, growing up to %d while frames wait%s): p50 %8.1f us  p99 %8.1f us  max %8.1f us;\n"
                  "    p90 %.1f us, p99.9 %.1f us; largest batch %d, %llu switches to batching, %llu back, %llu of %llu frames dropped (%llu after "
                  "the first tenth), at most %llu frames waiting;\n    %s\n",
                  live_rate, defaults.live_max_batch, where.c_str(), r.p50, r.p99, r.max, r.p90, r.p999, r.live.largest_batch,
                  static_cast<unsigned long long>(r.live.to_batching), static_cast<unsigned long long>(r.live.caught_up),
                  static_cast<unsigned long long>(r.dropped), static_cast<unsigned long long>(n), static_cast<unsigned long long>(r.dropped_timed),
                  static_cast<unsigned long long>(r.backlog),
                  r.host.text().c_str());
      Json j = r.latency_json();
      j.field("rate_fps", live_rate);
      j.field("frames", static_cast<double>(n));
      j.field("largest_batch", r.live.largest_batch);
      j.field("to_batching", static_cast<double>(r.live.to_batching));
      j.field("caught_up", static_cast<double>(r.live.caught_up));
      j.field("dropped", static_cast<double>(r.dropped));
      j.field("dropped_after_first_tenth", static_cast<double>(r.dropped_timed));
      j.field("largest_backlog", static_cast<double>(r.backlog));
      j.field("host_steal_ms", r.host.steal_ms);
      j.field("involuntary_context_switches", static_cast<double>(r.host.preemptions));
      if (!lanes.is_default()) j.field("lane_threads", lanes.describe());
      if (count > 0) j.field("lane_thread_count", count);
      const std::string key = std::string("live") + (lanes.is_default() ? "" : "_lanes_scheduled") + (count > 0 ? "_lanes_" + std::to_string(count) : "") +
                              (i > 0 ? "_" + std::to_string(i + 1) : "");
      all.object(key, j);
    }
  }
}

Json bench_latency(const Shape& frame_shape, const BenchOptions& o, Backend backend) {
  Json all;
  // The CPU backend cannot keep up with a camera's 20 kHz on a few cores; it
  // is measured at a rate it sustains, so the figure is latency, not backlog.
  const double rate = backend == Backend::Cuda ? o.rate : std::min(o.rate, 1000.0);
  all.field("rate_fps", rate);
  std::printf("\n== low-latency mode (%s backend): %dx%d frames at %.0f frames/s, frame arrival -> profile\n", to_string(backend),
              frame_shape.width, frame_shape.frame_height, rate);
  const std::uint64_t one_second = o.quick ? std::min<std::uint64_t>(2000, static_cast<std::uint64_t>(rate)) : static_cast<std::uint64_t>(rate);
  const std::uint64_t frames = o.latency_frames > 0 ? o.latency_frames : one_second;
  fixed_batch_runs(frame_shape, o, backend, rate, frames, all);
  if (backend == Backend::Cuda) {  // the same frames without the pipeline: what the pipeline's stages cost
    for (int threads : {1, 2, 4}) {
      const PacedRun r = processor_alone(frame_shape, o, frames, threads);
      std::printf("  batch of  1, %d processor(s) on %d thread(s), back to back (no pipeline): a frame p50 %8.1f us  p99 %8.1f us  max %8.1f us  (%llu frames; device %.1f us; %.0f frames/s)\n",
                  threads, threads, r.p50, r.p99, r.max, static_cast<unsigned long long>(r.frames), r.gpu_us, r.frames_per_s);
      if (threads == 1 && !r.engine_phases.empty()) std::printf("    the engine's device time: %s\n", r.engine_phases.c_str());
      Json j = r.latency_json();
      j.field("device_us", r.gpu_us);
      j.field("frames_per_s", r.frames_per_s);
      all.object("batch_1_processors_" + std::to_string(threads), j);
    }
  }
#if STRIPELINE_HAVE_CUDA
  struct Variant {  // one processor back to back with other options
    const char* what;
    const char* key;
    cuda::CudaProcessorOptions options;
  };
  auto alone = [&](const Variant& v, bool device) {
    const PacedRun r = processor_alone(frame_shape, o, frames, 1, v.options);
    Json j = r.latency_json();
    if (device) {
      std::printf("  batch of  1, 1 processor, %s: a frame p50 %8.1f us  p99 %8.1f us  max %8.1f us  (device %.1f us)\n", v.what, r.p50, r.p99, r.max,
                  r.gpu_us);
      if (!r.engine_phases.empty()) std::printf("    the engine's device time: %s\n", r.engine_phases.c_str());
      j.field("device_us", r.gpu_us);
    } else {
      std::printf("  batch of  1, 1 processor, %s: a frame p50 %8.1f us  p99 %8.1f us  max %8.1f us\n", v.what, r.p50, r.p99, r.max);
    }
    all.object(v.key, j);
  };
  if (backend == Backend::Cuda && o.chain().line_model.enabled) {  // what the live path's steps save (the line model's, the warp evaluation), each undone alone
    const Variant variants[] = {{"the graphs instead of the persistent engine (persistent_live = false)", "batch_1_processor_graphs", {.persistent_live = false}},
                                {"profiles downloaded (line_model_to_host = false)", "batch_1_processor_profiles_downloaded", {.line_model_to_host = false}},
                                {"the line model stages its pass 0 (stage_line_ahead = false)", "batch_1_processor_model_stages_itself",
                                 {.stage_line_ahead = false}},
                                {"the warp chain's candidates a lane each (warp_evaluation = false)", "batch_1_processor_candidates_by_lanes",
                                 {.warp_evaluation = false}},
                                {"the chain's blocks copying the frame, no copy kernel (live_copy_ahead = false)", "batch_1_processor_copy_in_chain",
                                 {.live_copy_ahead = false}}};
    for (const Variant& v : variants) alone(v, true);
    // What the copy kernel buys: the engine's rate with four frames in
    // flight, the frames copied ahead by the copy kernel or by the chain's
    // blocks first; one after the other, the same frames.
    for (const bool ahead : {true, false}) {
      const PacedRun r = processor_alone(frame_shape, o, frames, 4, {.live_copy_ahead = ahead});
      std::printf("  batch of  1, 4 processors on 4 threads back to back, %s: %.0f frames/s (a frame p50 %.1f us, p99 %.1f us)\n",
                  ahead ? "the copy kernel ahead (the default)" : "no copy kernel (live_copy_ahead = false)", r.frames_per_s, r.p50, r.p99);
      Json j = r.latency_json();
      j.field("frames_per_s", r.frames_per_s);
      all.object(ahead ? "batch_1_processors_4_copy_ahead" : "batch_1_processors_4_copy_in_chain", j);
    }
  }
  if (backend == Backend::Cuda) {  // what timing the kernels costs: of every batch, of none after the first (the default: one in 100 ms)
    const Variant timings[] = {{"every batch's kernels timed (time_interval_ms = 0)", "batch_1_processor_every_batch_timed",
                                {.time_every = 1, .time_interval_ms = 0}},
                               {"no batch's kernels timed after the first (time_every = 2^30)", "batch_1_processor_first_batch_timed",
                                {.time_every = 1 << 30, .time_interval_ms = 0}}};
    for (const Variant& v : timings) alone(v, false);
  }
#endif
  if (backend == Backend::Cuda) {  // the same frames on dedicated threads, no pipeline
    for (int threads : {2, 3, 4}) {
      const PacedRun r = dedicated_threads(frame_shape, o, rate, frames, threads);
      std::printf("  batch of  1, %d dedicated threads in turn (no pipeline): p50 %8.1f us  p99 %8.1f us  max %8.1f us  (%llu frames)\n", threads, r.p50,
                  r.p99, r.max, static_cast<unsigned long long>(r.frames));
      all.object("batch_1_dedicated_threads_" + std::to_string(threads), r.latency_json());
    }
  }
#if STRIPELINE_HAVE_CUDA
  if (backend == Backend::Cuda && o.chain().line_model.enabled) {  // the persistent engine (stages/cuda/live_engine.h, the default) at the camera's rate, and the graphs
    engine_runs(frame_shape, o, rate, frames, all);
    const PacedRun r = paced_run(frame_shape, o, backend, rate, frames, 1, 0, true, LaneScheduling::Auto, 0, false);
    std::printf("  batch of  1, the graphs instead of the engine (persistent_engine = false): p50 %8.1f us  p99 %8.1f us  max %8.1f us  (%llu frames, "
                "at most %llu waiting)\n",
                r.p50, r.p99, r.max, static_cast<unsigned long long>(r.frames), static_cast<unsigned long long>(r.backlog));
    all.object("batch_1_graphs", r.latency_json());
  }
#endif
  if (backend == Backend::Cuda) {  // the lane threads' count (the runs above: the automatic count, kLaneThreadsAuto)
    for (int lanes : {2, 3, 4}) {
      const PacedRun r = paced_run(frame_shape, o, backend, rate, frames, 1, 0, true, LaneScheduling::Threads, lanes);
      std::printf("  batch of  1, %d lane threads: p50 %8.1f us  p99 %8.1f us  max %8.1f us  (%llu frames, at most %llu waiting)\n", lanes, r.p50,
                  r.p99, r.max, static_cast<unsigned long long>(r.frames), static_cast<unsigned long long>(r.backlog));
      std::printf("    medians a batch: %s\n", r.stages_text().c_str());
      all.object("batch_1_lane_threads_" + std::to_string(lanes), r.latency_json());
    }
  }
  if (backend == Backend::Cuda) {  // the lane threads under SCHED_FIFO (lane_realtime_priority): no time-sharing slice between them and other threads
    ThreadScheduling fifo;
    fifo.fifo_priority = 10;
    try {
      const PacedRun r = paced_run(frame_shape, o, backend, rate, frames, 1, 0, true, LaneScheduling::Auto, 0, true, fifo);
      std::printf("  batch of  1, lane threads at SCHED_FIFO %d (lane_realtime_priority): p50 %8.1f us  p99 %8.1f us  max %8.1f us  (%llu frames, at most %llu "
                  "waiting)\n",
                  fifo.fifo_priority, r.p50, r.p99, r.max, static_cast<unsigned long long>(r.frames), static_cast<unsigned long long>(r.backlog));
      all.object("batch_1_lane_threads_fifo", r.latency_json());
    } catch (const ConfigError& e) {
      std::printf("  batch of  1, lane threads at SCHED_FIFO %d: not measured (%s)\n", fifo.fifo_priority, e.what());
    }
  }
  if (backend == Backend::Cuda) {  // what the lane threads save: the same run on oneTBB's pipeline
    const PacedRun r = paced_run(frame_shape, o, backend, rate, frames, 1, 0, true, LaneScheduling::Pipeline);
    std::printf("  batch of  1, oneTBB's pipeline (scheduling = pipeline): p50 %8.1f us  p99 %8.1f us  max %8.1f us  (%llu frames, at most %llu waiting)\n",
                r.p50, r.p99, r.max, static_cast<unsigned long long>(r.frames), static_cast<unsigned long long>(r.backlog));
    all.object("batch_1_tbb_pipeline", r.latency_json());
  }
  if (backend == Backend::Cuda && o.chain().cuda_graphs) {  // what the graphs save: the same run enqueued call by call
    const PacedRun r = paced_run(frame_shape, o, backend, rate, frames, 1, 0, false, LaneScheduling::Auto, 0, false);
    std::printf("  batch of  1, no CUDA graph: p50 %8.1f us  p99 %8.1f us  max %8.1f us  (%llu frames, at most %llu waiting; cuda_graphs = false, persistent_engine = false)\n",
                r.p50, r.p99, r.max, static_cast<unsigned long long>(r.frames), static_cast<unsigned long long>(r.backlog));
    all.object("batch_1_without_graphs", r.latency_json());
  }
  live_path_runs(frame_shape, o, backend, 1, all);
  all.object("batch_1_sustained", sustained_rate(frame_shape, o, backend));
  return all;
}

}  // namespace

Subcommand add_bench(CLI::App& app) {
  auto* sub = app.add_subcommand("bench", "Measure the engine: bus bandwidth, CPU, CUDA compute, streaming, latency (bench/README.md)");
  auto o = std::make_shared<BenchOptions>();
  sub->add_option("--json", o->json, "Also write the results as JSON here");
  sub->add_option("--batches", o->batches, "Batches timed in the streaming run (at least 100 for the published figures)")->capture_default_str();
  sub->add_option("--buffers", o->buffers, "Pinned batch buffers in the streaming run")->capture_default_str();
  sub->add_option("--rate", o->rate, "Frame rate of the low-latency run, frames per second")->capture_default_str();
  sub->add_flag("--quick", o->quick, "Few repetitions (a smoke test, not figures to publish)");
  sub->add_option("--calibration", o->calibration, "Also run the CUDA streaming with this calibration applied to every point (docs/calibration.md)");
  sub->add_option("--roi-offset", o->roi_offset, "With --calibration: X,Y offset of the benchmark's frames on the sensor (default 0,0)");
  sub->add_option("--method", o->method, "Extraction timed: default (adaptive), or adaptive, cog, max, window, local-max, all")->capture_default_str();
  sub->add_option("--estimator", o->estimator, "With --method adaptive/default: centroid, gauss, parabola or steger")->capture_default_str();
  sub->add_option("--neighbour-columns", o->neighbour_columns, "Time the chain with the neighbour check on, this many columns each side (0 = off)")
      ->capture_default_str();
  o->processing.add(sub, "processing", {"pixel_bits", "line_model", "line_candidates"});
  sub->add_flag("--blur-along-columns", o->along_columns, "Time the chain with the blur along the columns only (processing.blur_across = false)");
  sub->add_flag("--production-only", o->production_only, "Only the production shape (2048x52, 300 frames per batch) and the latency run");
  sub->add_option("--latency-frames", o->latency_frames, "Frames of each latency run, the live path's too (0: one second's at --rate)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--live-only", o->live_only, "Only the live path's latency run, this many times (with --lane-cpus or --lane-realtime-priority, as many again with the lane threads so scheduled), and the sustained rate")
      ->check(CLI::Range(1, 100));
  sub->add_flag("--copy-ahead-ab", o->copy_ahead_ab,
                "With --live-only: also the copy kernel against the chain's own copy at --rate on two dedicated threads, interleaved as many times");
  sub->add_option("--live-lanes", o->live_lanes, "The live path's runs with each of these lane thread counts (e.g. 4,2,1; 0 = automatic)")
      ->delimiter(',')
      ->check(CLI::Range(0, 64))
      ->capture_default_str();
  sub->add_option("--lane-cpus", o->lane_cpus, "The live path's run again with its lane threads on these CPUs (e.g. 2-5), beside the default's");
  sub->add_option("--lane-realtime-priority", o->lane_fifo, "The live path's run again with its lane threads at SCHED_FIFO at this priority (with --lane-cpus: both)")
      ->check(CLI::Range(0, 99));
  sub->add_option("--devices", o->devices,
                  "CUDA devices, comma-separated (e.g. 0,1; 0,0 = two engines on one GPU): only the several-engines run, one engine per entry "
                  "(pinned H2D alone and at once, streaming for the first 1..N entries)")
      ->delimiter(',');
  sub->add_option("--backend", o->backend, "auto (CUDA when a GPU is present), cpu or cuda: the backend of the latency run and the CUDA lines")
      ->capture_default_str();
  return {sub, [o] {
            if (!o->calibration.empty()) {
              CalibrationFileSettings cs;
              cs.file = o->calibration;
              if (!o->roi_offset.empty()) parse_roi_offset(o->roi_offset, "--roi-offset", cs);
              o->sheet = load_applied_calibration(cs, 0, 0);  // every shape's frames: checked against the sensor per shape is not needed for timing
            }
            const bool cuda = resolve_backend(parse_backend(o->backend)) == Backend::Cuda;  // ConfigError naming the value: exit 2
            if (o->quick && o->batches == 200) o->batches = 10;
            char host[256] = {};
            ::gethostname(host, sizeof host - 1);
            const std::time_t now = std::time(nullptr);
            char date[32];
            std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
            std::printf("stripeline bench %s  %s  host %s, %u CPU threads\n", STRIPELINE_VERSION, date, host, std::thread::hardware_concurrency());
            std::printf("device: %s\n", cuda                ? cuda_status().c_str()
                                         : cuda_available() ? (cuda_status() + " (not used: --backend cpu)").c_str()
                                                            : ("none (" + cuda_status() + ")").c_str());
            const ChainConfig chain = o->chain();  // validated here: a bad name is one line, exit 2
            std::printf("extraction: %s%s%s, blur %d%s, neighbour check %s\n", to_string(chain.column.method),
                        chain.column.method == ColumnMethod::Adaptive ? " / " : "",
                        chain.column.method == ColumnMethod::Adaptive ? to_string(chain.adaptive.estimator) : "", chain.blur_size,
                        chain.blur_size > 0 ? (chain.blur_across ? " 2-D" : " along columns") : "",
                        chain.neighbour_check.columns > 0 ? (std::to_string(chain.neighbour_check.columns) + " columns").c_str() : "off");
            if (cuda) std::printf("CUDA start-up (once per process, outside every figure below): %.1f ms\n", cuda_startup_ms());
            Json root;
            root.field("version", STRIPELINE_VERSION);
            root.field("date", date);
            root.field("host", host);
            root.field("cpu_threads", std::thread::hardware_concurrency());
            root.field("device", cuda ? cuda_status() : "none");
            root.field("cuda_startup_ms", cuda ? cuda_startup_ms() : 0.0);
            root.field("method", to_string(chain.column.method));
            root.field("estimator", to_string(chain.adaptive.estimator));
            root.field("neighbour_columns", chain.neighbour_check.columns);
            root.field("blur_across", chain.blur_across);
            const std::vector<Shape> shapes = {{"production", 2048, 52, 300}, {"seeds-1936x504", 1936, 504, 30}, {"recording-1936", 1936, 50, 304}};
            if (!o->devices.empty()) {
              if (!cuda) throw ConfigError("--devices " + device_list(o->devices) + ": the several-engines run needs CUDA (" + cuda_status() + ")");
              root.object("devices", bench_devices(shapes[0], *o));
              if (!o->json.empty()) io::write_file_atomically(o->json, root.str() + "\n");
              return 0;
            }
            if (o->live_only > 0) {
              if (!cuda) throw ConfigError("--live-only: the live path's run needs CUDA (" + cuda_status() + ")");
              std::printf("\n== the live path (cuda backend): %dx%d frames at %.0f frames/s, frame arrival -> profile\n", shapes[0].width,
                          shapes[0].frame_height, o->rate);
              Json live;
              live_path_runs(shapes[0], *o, Backend::Cuda, o->live_only, live);
              if (o->copy_ahead_ab) {
#if STRIPELINE_HAVE_CUDA
                copy_ahead_runs(shapes[0], *o, live_run_frames(*o), o->live_only, live);
#endif
              }
              live.object("batch_1_sustained", sustained_rate(shapes[0], *o, Backend::Cuda));
              root.object("live_only", live);
              if (!o->json.empty()) io::write_file_atomically(o->json, root.str() + "\n");
              return 0;
            }
            Json per_shape;
            for (const auto& s : shapes) {
              per_shape.object(s.name, bench_shape(s, *o, cuda));
              if (o->quick || o->production_only) break;
            }
            root.object("shapes", per_shape);
            root.object("latency", bench_latency(shapes[0], *o, cuda ? Backend::Cuda : Backend::Cpu));
            if (!o->json.empty()) {
              io::write_file_atomically(o->json, root.str() + "\n");
              std::printf("\nwrote %s\n", o->json.c_str());
            }
            return 0;
          }};
}

}  // namespace stripeline::tools
