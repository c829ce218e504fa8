// CUDA backend: stages and the fused chain. Set-up (constructors) allocates
// the lane (stream and events) and the device buffers; do_run()/enqueue()
// only enqueue copies and kernels on the lane's stream.
#include "stages/cuda/cuda_stages.h"
#include "stages/cuda/device_profiles.h"
#include "stages/cuda/heightmap_filters_cuda.h"
#include "stages/cuda/live_engine.h"
#include "stages/factory.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "core/cuda/device_lane.h"
#include "core/cuda/runtime.h"
#include "core/errors.h"
#include "kernels/cuda/calibrated_points_kernels.h"
#include "kernels/cuda/line_model_kernels.h"
#include "kernels/cuda/neighbour_check_kernels.h"
#include "kernels/cuda/stripe_kernels.h"

namespace stripeline::cuda {

namespace kc = kernels::cuda;

namespace {

template <class T>
kc::FramesView<const T> device_frames(const DeviceBuffer& b, const BatchLayout& l, int frames) {
  return {b.as<const T>(), l.width, l.frame_height, frames};
}
template <class T>
kc::FramesView<T> device_frames_out(const DeviceBuffer& b, const BatchLayout& l, int frames) {
  return {b.as<T>(), l.width, l.frame_height, frames};
}

void upload(const Batch& in, const DeviceBuffer& to, cudaStream_t stream) {
  const std::size_t bytes = in.filled_bytes();
  if (bytes > 0) STRIPELINE_CUDA_CHECK(cudaMemcpyAsync(to.data(), in.pixels.data(), bytes, cudaMemcpyHostToDevice, stream));
}
void download(const DeviceBuffer& from, const Batch& in, Batch& out, cudaStream_t stream) {
  const std::size_t bytes = in.filled_bytes();
  if (bytes > 0) STRIPELINE_CUDA_CHECK(cudaMemcpyAsync(out.pixels.data(), from.data(), bytes, cudaMemcpyDeviceToHost, stream));
}

// ---------------------------------------------------------------------------
class CudaBlur final : public PixelStage {
 public:
  CudaBlur(const BatchLayout& l, const kernels::GaussianTaps& taps)
      : PixelStage("blur", l),
        taps_(kc::to_blur_taps(taps)),
        in_(DeviceBuffer::allocate(l.bytes(), "blur input")),
        out_(DeviceBuffer::allocate(l.bytes(), "blur output")) {}

  ~CudaBlur() override { device_.enter_for_teardown(); }

 private:
  void do_run(const Batch& in, Batch& out) override {
    const ScopedDevice on_device = device_.scope();
    upload(in, in_, lane_.stream());
    with_pixel_type(layout().format, [&](auto zero) {
      using T = decltype(zero);
      kc::blur<T>(device_frames<T>(in_, layout(), in.frames), device_frames_out<T>(out_, layout(), in.frames), taps_, lane_.stream());
    });
    download(out_, in, out, lane_.stream());
    lane_.finish();
  }

  DeviceAffinity device_;  // first: destroyed last (core/cuda/runtime.h)
  kc::BlurTaps taps_;
  DeviceBuffer in_, out_;
  DeviceLane lane_;  // declared last: destroyed first, waiting for the stream before the buffers go
};

class CudaThreshold final : public PixelStage {
 public:
  CudaThreshold(const BatchLayout& l, std::uint32_t t) : PixelStage("threshold", l), threshold_(t), buffer_(DeviceBuffer::allocate(l.bytes(), "threshold")) {}

  ~CudaThreshold() override { device_.enter_for_teardown(); }

 private:
  void do_run(const Batch& in, Batch& out) override {
    const ScopedDevice on_device = device_.scope();
    upload(in, buffer_, lane_.stream());
    with_pixel_type(layout().format, [&](auto zero) {
      using T = decltype(zero);
      kc::threshold<T>(device_frames<T>(buffer_, layout(), in.frames), device_frames_out<T>(buffer_, layout(), in.frames), threshold_,
                       lane_.stream());
    });
    download(buffer_, in, out, lane_.stream());
    lane_.finish();
  }

  DeviceAffinity device_;  // first: destroyed last (core/cuda/runtime.h)
  std::uint32_t threshold_;
  DeviceBuffer buffer_;
  DeviceLane lane_;
};

class CudaExtract final : public ExtractStage {
 public:
  CudaExtract(const BatchLayout& l, const kernels::ColumnParams& p)
      : ExtractStage(l, p), in_(DeviceBuffer::allocate(l.bytes(), "extract input")), profiles_(l.width, l.frames, p.slots) {}

  ~CudaExtract() override { device_.enter_for_teardown(); }

 private:
  void do_run(const Batch& in, ProfileBatch& out) override {
    const ScopedDevice on_device = device_.scope();
    upload(in, in_, lane_.stream());
    with_pixel_type(layout().format, [&](auto zero) {
      using T = decltype(zero);
      kc::extract<T>(device_frames<T>(in_, layout(), in.frames), nullptr, 0u, params(), profiles_.view(), lane_.stream());
    });
    profiles_.download(out, in.frames, lane_.stream());
    lane_.finish();
  }

  DeviceAffinity device_;  // first: destroyed last (core/cuda/runtime.h)
  DeviceBuffer in_;
  DeviceProfiles profiles_;
  DeviceLane lane_;
};

// ---------------------------------------------------------------------------
// Kernel attributes (the shared memory a block may take) are set per device:
// once for each device a processor is made on. An exception leaves the
// device unmarked, so a later set-up retries.
template <class Configure>
void once_per_device(std::mutex& mutex, std::vector<int>& done, Configure configure) {
  const int device = current_device();
  const std::lock_guard lock(mutex);
  if (std::find(done.begin(), done.end(), device) != done.end()) return;
  configure();
  done.push_back(device);
}

void configure_line_model_once() {
  static std::mutex mutex;
  static std::vector<int> done;
  once_per_device(mutex, done, [] { kc::configure_line_model(max_shared_bytes_per_block()); });
}

void configure_fused_once() {
  static std::mutex mutex;
  static std::vector<int> done;
  once_per_device(mutex, done, [] { kc::configure_fused(max_shared_bytes_per_block()); });
}

// Batches of at most this many frames are the low-latency mode (docs/cuda.md).
constexpr int kLowLatencyFrames = 16;

// The low-latency mode's CUDA graphs: one per (host pixels, host profiles,
// frames, timed or not; each buffer by address and allocation), the pool's
// slots being fixed, captured the first time that slot brings that many
// frames and replayed with one cudaGraphLaunch after: the upload, the
// kernels, the timing events and the download in one call
// instead of five to eight (each costs the host microseconds, which a
// batch of 1 at 20 kHz feels). At most kMostGraphs (a source that swaps
// its own buffers in may bring many addresses); beyond that, or once a
// capture failed (pageable host memory cannot be captured), batches are
// enqueued call by call as before.
class SlotGraphs {
 public:
  explicit SlotGraphs(bool enabled) : enabled_(enabled) { entries_.reserve(kMostGraphs); }

  // The graph of this batch, captured now (capture() -> GraphExec) when new;
  // null when graphs are off for it. A template, so a batch costs no
  // std::function on the hot path.
  template <class Capture>
  const GraphExec* get(const Batch& in, const ProfileBatch& out, bool timed, const Capture& capture) {
    if (!enabled_ || in.frames > kLowLatencyFrames) return nullptr;
    const Key key{in.pixels.data(), in.pixels.id(), out.position, out.storage().id(), in.frames, timed};
    for (const Entry& e : entries_)
      if (e.key == key) return &e.exec;
    if (entries_.size() == kMostGraphs) return nullptr;
    try {
      entries_.push_back({key, capture()});
    } catch (const CudaError& e) {
      enabled_ = false;
      spdlog::warn("CUDA graphs off for this processor, batches enqueued call by call: {}", e.what());
      return nullptr;
    }
    return &entries_.back().exec;
  }
  int size() const { return static_cast<int>(entries_.size()); }

 private:
  // The host buffers by address and by allocation (HostBuffer::id): a graph
  // replayed onto an address that a freed buffer left to a new one would
  // copy to and from the old, unregistered pages (the driver crashed).
  struct Key {
    const void* pixels;
    std::uint64_t pixels_id;
    const void* profiles;
    std::uint64_t profiles_id;
    int frames;
    bool timed;  // with the kernels' timing events (CudaProcessorOptions::time_every)
    bool operator==(const Key&) const = default;
  };
  struct Entry {
    Key key;
    GraphExec exec;
  };
  static constexpr std::size_t kMostGraphs = 128;
  bool enabled_;
  std::vector<Entry> entries_;
};

class CudaProcessorImpl final : public CudaProcessor {
 public:
  CudaProcessorImpl(const BatchLayout& l, const ChainConfig& c, const CudaProcessorOptions& options)
      : CudaProcessor(l, c),
        // Small batches are the low-latency mode: spin on completion rather
        // than sleep (a sleeping thread's wake-up costs tens of microseconds).
        graphs_(c.cuda_graphs),
        lane_(l.frames <= kLowLatencyFrames ? DeviceLane::Wait::Spin : DeviceLane::Wait::Sleep) {
    const kernels::GaussianTaps taps = chain_blur_taps(c);
    chain_.taps = kc::to_blur_taps(taps);
    chain_.zero_below = threshold_stage_level(c, params());
    chain_.column = extraction_params();  // with the line model: its candidates
    const std::size_t shared = kc::fused_shared_bytes(static_cast<int>(bytes_per_pixel(l.format)), l.frame_height, taps.size);
    fused_ = options.allow_fused && shared <= max_shared_bytes_per_block();
    line_model_to_host_ = options.line_model_to_host;
    time_every_ = options.time_every < 1 ? 1 : static_cast<std::uint64_t>(options.time_every);
    time_interval_ = std::chrono::duration<double, std::milli>(options.time_interval_ms > 0 ? options.time_interval_ms : 0.0);
    // A few frames leave the fused kernel's thread per column on a few SMs: a warp per column instead (stripe_kernels.h).
    warp_chain_max_frames_ = fused_ && kc::warp_chain_supports(chain_, l.frame_height)
                                 ? (options.warp_chain_max_frames < 0 ? kc::kWarpChainMaxFrames : options.warp_chain_max_frames)
                                 : 0;
    warp_evaluation_ = options.warp_evaluation;
    live_copy_ahead_ = options.live_copy_ahead;
    persistent_live_ = options.persistent_live && c.persistent_engine;
    in_ = DeviceBuffer::allocate(l.bytes(), "batch pixels");
    profiles_ = std::make_unique<DeviceProfiles>(l.width, l.frames, params().slots, maps_points());
    if (models_line()) {
      candidates_ = std::make_unique<DeviceProfiles>(l.width, l.frames, extraction_params().slots);
      back_ = DeviceBuffer::allocate(kernels::line_model_device_scratch_bytes(line_params().candidates, l.width, l.frames), "line model scratch");
      configure_line_model_once();
      if (options.stage_line_ahead) set_up_staging_ahead(l.width);
    }
    if (checks_neighbours()) isolated_ = DeviceBuffer::allocate(static_cast<std::size_t>(l.width) * l.frames, "neighbour check marks");
    if (fused_)
      configure_fused_once();
    else if (taps.size > 0)
      scratch_ = DeviceBuffer::allocate(l.bytes(), "blurred pixels (per-stage path)");
  }

  ~CudaProcessorImpl() override {
    device_.enter_for_teardown();
    if (held_) held_->release();
    if (live_) live_->pause();  // its kernels would hold the frees of the buffers below
  }

  double compute_only(int frames) override {
    wait();
    const ScopedDevice on_device = device_.scope();
    if (frames < 0 || frames > layout().frames)
      throw RuntimeFailure("compute_only: " + std::to_string(frames) + " frames asked, capacity is " + std::to_string(layout().frames));
    lane_.record_start();
    enqueue_kernels(frames);
    lane_.record_stop();
    lane_.wait_stop();
    return lane_.elapsed();
  }

  double last_compute_ms() const override { return last_ms_; }
  cudaStream_t stream() const override { return lane_.stream(); }
  bool fused() const override { return fused_; }
  int graphs() const override { return graphs_.size(); }
  std::uint64_t live_launches() const override { return live_ != nullptr ? live_->launches() : 0; }
  std::string live_report() const override { return live_ != nullptr ? live_->phase_report() : std::string(); }

 private:
  void enqueue(const Batch& in, ProfileBatch& out) override {
    const ScopedDevice on_device = device_.scope();
    const bool live = goes_live(in, out);
    if (live) {
      live_ticket_ = live_->submit(in.pixels.data(), {out.position, out.intensity, out.stripe_width, out.quality, out.count});
      if (live_ticket_ != 0) return;  // else another lane's batch holds the engine: by the graphs below
    }
    // A frame alone declined does not hold it in turn: with every lane's
    // frame holding it, the holds overlapped and never all ended (the live
    // path stayed on the graphs after its first catch-up, 2 x H200 host).
    if (!live) hold_live_engine();
    timed_ = in.frames > kLowLatencyFrames || time_low_latency_batch();
    const auto calls = [&] { enqueue_calls(in, out); };
    if (const GraphExec* graph = graphs_.get(in, out, timed_, [&] { return lane_.capture(calls); }))
      graph->launch(lane_.stream());
    else
      calls();
  }

  // Whether this low-latency batch records the timing events
  // (CudaProcessorOptions::time_every, time_interval_ms).
  bool time_low_latency_batch() {
    if (low_latency_batches_++ % time_every_ != 0) return false;
    const auto now = std::chrono::steady_clock::now();
    if (timed_once_ && now - last_timed_ < time_interval_) return false;
    timed_once_ = true;
    last_timed_ = now;
    return true;
  }

  // The batch's work, call by call (what a graph records).
  void enqueue_calls(const Batch& in, ProfileBatch& out) {
    ProfileBatch* const to_host = line_model_writes_host(in, out) ? &out : nullptr;
    upload(in, in_, lane_.stream());
    if (timed_) lane_.record_start();
    enqueue_kernels(in.frames, to_host);
    if (timed_) lane_.record_stop();
    if (to_host == nullptr) profiles_->download(out, in.frames, lane_.stream());
    lane_.record_done();
  }

  // CudaProcessorOptions::line_model_to_host: the line model is the last
  // step, the batch a low-latency one and the host profiles pinned (so
  // mapped: the kernel writes them through their own address) and of its
  // layout.
  bool line_model_writes_host(const Batch& in, const ProfileBatch& out) const {
    return line_model_to_host_ && models_line() && !checks_neighbours() && !maps_points() && in.frames <= kLowLatencyFrames &&
           out.storage().pinned() && out.slots == 1 && out.width == layout().width;
  }

  // CudaProcessorOptions::persistent_live: a frame alone, the line model
  // writing the host's profiles, its block kernel after the warp chain; the
  // engine attached at the first such batch (every processor of the run set
  // up by then), none when it cannot run here.
  bool goes_live(const Batch& in, const ProfileBatch& out) {
    if (!persistent_live_ || in.frames != 1 || warp_chain_max_frames_ < 1 || !in.pixels.pinned() || !line_model_writes_host(in, out) ||
        kc::line_kernel_for(line_params(), layout().width) != kc::LineKernel::Block)
      return false;
    if (!live_tried_) {
      live_tried_ = true;
      live_ = LiveEngine::attach({device_.ordinal(), layout().width, layout().frame_height, static_cast<int>(bytes_per_pixel(layout().format)), chain_,
                                  line_params(), warp_evaluation_, live_copy_ahead_});
    }
    return live_ != nullptr;
  }

  // A batch not for the device's persistent engine: its kernels might not
  // find room beside the engine's resident ones and would wait for it to
  // idle, which the other lanes' frames keep it from (6-35 ms stalls,
  // session 17), so the engine is held (its kernels ended) until the batch
  // completes.
  void hold_live_engine() {
    if (held_ != nullptr) return;
    held_ = live_ != nullptr ? live_ : LiveEngine::any_running() ? LiveEngine::running_on(device_.ordinal()) : nullptr;
    if (held_ != nullptr) held_->hold();
  }

  void complete() override {
    if (live_ticket_ != 0) {
      last_ms_ = live_->wait(std::exchange(live_ticket_, 0));
      return;
    }
    lane_.wait();  // event waits and timings need no current device
    if (timed_) last_ms_ = lane_.elapsed();
    if (held_ != nullptr) std::exchange(held_, nullptr)->release();
  }

  // CudaProcessorOptions::stage_line_ahead: where the warp chain runs and
  // the line model's block kernel follows with its link table.
  void set_up_staging_ahead(int width) {
    const kernels::LineModelParams& p = line_params();
    if (warp_chain_max_frames_ == 0 || candidates_->view().slots != p.candidates || kc::line_kernel_for(p, width) != kc::LineKernel::Block) return;
    const kernels::LineStageAhead size = kernels::line_stage_ahead(p, width, nullptr);
    if (size.frame_bytes == 0) return;
    ahead_bytes_ = DeviceBuffer::allocate(size.frame_bytes * static_cast<std::size_t>(warp_chain_max_frames_), "line model staged ahead");
    ahead_ = kernels::line_stage_ahead(p, width, ahead_bytes_.as<unsigned char>());
  }

  // The chain's kernels; the line model's output into `to_host`'s arrays
  // when given (line_model_writes_host), else into profiles_.
  void enqueue_kernels(int frames, ProfileBatch* to_host = nullptr) {
    if (frames <= 0) return;
    const cudaStream_t stream = lane_.stream();
    const kernels::LineStageAhead* ahead = frames <= warp_chain_max_frames_ && ahead_.bytes != nullptr ? &ahead_ : nullptr;
    with_pixel_type(layout().format, [&](auto zero) {
      using T = decltype(zero);
      const auto pixels = device_frames<T>(in_, layout(), frames);
      const kc::ProfileView& extracted = models_line() ? candidates_->view() : profiles_->view();
      if (frames <= warp_chain_max_frames_) {
        kc::warp_chain<T>(pixels, chain_, extracted, stream, warp_evaluation_);
      } else if (fused_) {
        kc::fused_chain<T>(pixels, chain_, extracted, stream);
      } else if (chain_.taps.size > 0) {
        kc::blur<T>(pixels, device_frames_out<T>(scratch_, layout(), frames), chain_.taps, stream);
        kc::extract<T>(device_frames<T>(scratch_, layout(), frames), pixels.data, chain_.zero_below, chain_.column, extracted, stream);
      } else {
        kc::extract<T>(pixels, nullptr, chain_.zero_below, chain_.column, extracted, stream);
      }
    });
    if (models_line()) {  // the line across the columns: candidates in, one slot out, one block per frame
      const kc::ProfileView& c = candidates_->view();
      const kc::ProfileView& p = profiles_->view();
      const kernels::LineModelArrays out = to_host != nullptr
                                               ? kernels::LineModelArrays{to_host->position, to_host->intensity, to_host->stripe_width, to_host->quality, to_host->count}
                                               : kernels::LineModelArrays{p.position, p.intensity, p.stripe_width, p.quality, p.count};
      const kernels::LineModelView view =
          line_view({c.position, c.intensity, c.stripe_width, c.quality, c.count}, out, back_.as<std::uint8_t>(), static_cast<std::size_t>(frames), frames);
      if (ahead != nullptr) kc::launch_line_stage_ahead(view, *ahead, stream);
      kc::launch_line_model(view, line_params(), stream, kc::LineKernel::Auto, ahead);
    }
    if (checks_neighbours()) {
      const kc::ProfileView& p = profiles_->view();
      kc::launch_neighbour_check(neighbour_view(p.position, p.intensity, p.stripe_width, p.quality, p.count, isolated_.as<std::uint8_t>(), frames),
                                 neighbour_params(), stream);
    }
    // Calibrated points straight from the device profiles: no host round trip.
    if (maps_points()) {
      const kc::ProfileView& p = profiles_->view();
      kc::launch_calibrated_points(points_map(), points_view(p.position, p.count, profiles_->points(), frames), stream);
    }
  }

  DeviceAffinity device_;  // declared first: destroyed last, the device current while the members below go
  kc::ChainParams chain_;
  bool fused_ = false;
  int warp_chain_max_frames_ = 0;  // batches of at most this many frames run kc::warp_chain (0: none)
  bool warp_evaluation_ = true;     // CudaProcessorOptions::warp_evaluation
  bool live_copy_ahead_ = true;     // CudaProcessorOptions::live_copy_ahead
  bool persistent_live_ = true;     // CudaProcessorOptions::persistent_live
  bool live_tried_ = false;         // LiveEngine::attach asked (once)
  std::shared_ptr<LiveEngine> live_;  // the device's persistent engine, when it runs this chain
  std::uint64_t live_ticket_ = 0;   // the frame handed to it (0: none)
  std::shared_ptr<LiveEngine> held_;  // the device's engine, held while this processor's batch runs beside it (hold_live_engine)
  bool line_model_to_host_ = true;  // CudaProcessorOptions::line_model_to_host
  DeviceBuffer ahead_bytes_;           // the line model's pass 0 staged ahead (set_up_staging_ahead)
  kernels::LineStageAhead ahead_;      // into ahead_bytes_; bytes null: none
  std::uint64_t time_every_ = 1;           // CudaProcessorOptions::time_every
  std::uint64_t low_latency_batches_ = 0;  // enqueued so far
  std::chrono::duration<double, std::milli> time_interval_{0.0};  // CudaProcessorOptions::time_interval_ms
  std::chrono::steady_clock::time_point last_timed_{};
  bool timed_once_ = false;
  bool timed_ = true;                      // the batch in flight records the timing events
  double last_ms_ = 0.0;
  DeviceBuffer in_, scratch_, isolated_, back_;
  std::unique_ptr<DeviceProfiles> profiles_, candidates_;  // candidates_: the line model's (null when it is off)
  SlotGraphs graphs_;  // before lane_: destroyed after the stream has drained
  DeviceLane lane_;  // declared last: destroyed first, waiting for the stream before the buffers go
};

}  // namespace

std::unique_ptr<CudaProcessor> make_cuda_processor_ex(const BatchLayout& l, const ChainConfig& c, const CudaProcessorOptions& o) {
  return std::make_unique<CudaProcessorImpl>(l, c, o);
}

const BackendFactory& factory() {
  static const BackendFactory f{
      [](const BatchLayout& l, const kernels::GaussianTaps& taps) -> std::unique_ptr<PixelStage> { return std::make_unique<CudaBlur>(l, taps); },
      [](const BatchLayout& l, std::uint32_t t) -> std::unique_ptr<PixelStage> { return std::make_unique<CudaThreshold>(l, t); },
      [](const BatchLayout& l, const kernels::ColumnParams& p) -> std::unique_ptr<ExtractStage> { return std::make_unique<CudaExtract>(l, p); },
      [](const BatchLayout& l, const ChainConfig& c) -> std::unique_ptr<BatchProcessor> { return make_cuda_processor_ex(l, c); },
      [](int w, int h, const std::vector<FilterStep>& steps) -> std::unique_ptr<HeightMapFilter> { return make_heightmap_filter(w, h, steps); },
  };
  return f;
}

}  // namespace stripeline::cuda
