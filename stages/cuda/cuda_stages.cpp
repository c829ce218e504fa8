// CUDA backend: stages and the fused chain. Set-up (constructors) allocates
// the stream, the events and the device buffers; run()/process() enqueue
// copies and kernels on the object's stream and wait on its event.
#include "stages/cuda/cuda_stages.h"

#include <mutex>
#include <string>

#include "core/errors.h"
#include "kernels/cuda/stripe_kernels.h"
#include "stages/cuda/cuda_runtime.h"

namespace stripeline::cuda {

namespace kc = kernels::cuda;

namespace {

template <class F>
void with_pixel_type(PixelFormat format, F&& f) {
  if (format == PixelFormat::Mono8)
    f(std::uint8_t{});
  else
    f(std::uint16_t{});
}

void check_same_layout(const BatchLayout& expected, const BatchLayout& got, const char* what) {
  if (!(expected == got)) throw RuntimeFailure(std::string(what) + ": batch layout differs from the one the stage was set up for");
}

void check_filled(const Batch& b, const char* what) {
  if (b.frames < 0 || b.frames > b.layout.frames)
    throw RuntimeFailure(std::string(what) + ": batch holds " + std::to_string(b.frames) + " frames, capacity is " +
                         std::to_string(b.layout.frames));
  if (b.filled_bytes() > b.pixels.size()) throw RuntimeFailure(std::string(what) + ": batch pixel buffer is smaller than its layout");
}

void check_profiles(const BatchLayout& l, int slots, const Batch& in, const ProfileBatch& out, const char* what) {
  if (out.width != l.width || out.capacity < in.frames || out.slots != slots)
    throw RuntimeFailure(std::string(what) + ": profile batch does not match the stage's layout");
}

template <class T>
kc::FramesView<const T> device_frames(const DeviceBuffer& b, const BatchLayout& l, int frames) {
  return {b.as<const T>(), l.width, l.frame_height, frames};
}
template <class T>
kc::FramesView<T> device_frames_out(const DeviceBuffer& b, const BatchLayout& l, int frames) {
  return {b.as<T>(), l.width, l.frame_height, frames};
}

constexpr std::size_t align_up(std::size_t n) { return (n + 255) / 256 * 256; }

// Profiles on the device, structure-of-arrays as in ProfileBatch, one buffer.
class DeviceProfiles {
 public:
  DeviceProfiles(int width, int capacity, int slots) {
    const std::size_t n = static_cast<std::size_t>(width) * capacity * slots;
    const std::size_t c = static_cast<std::size_t>(width) * capacity;
    const std::size_t intensity_at = align_up(n * 4);
    const std::size_t width_at = intensity_at + align_up(n * 2);
    const std::size_t count_at = width_at + align_up(n * 2);
    buffer_ = DeviceBuffer::allocate(count_at + align_up(c), "profiles");
    view_.position = buffer_.at_byte<std::int32_t>(0);
    view_.intensity = buffer_.at_byte<std::uint16_t>(intensity_at);
    view_.stripe_width = buffer_.at_byte<std::uint16_t>(width_at);
    view_.count = buffer_.at_byte<std::uint8_t>(count_at);
    view_.width = width;
    view_.slots = slots;
  }
  const kc::ProfileView& view() const { return view_; }

  // Enqueue the copy of the first `frames` frames' profiles into out.
  void download(ProfileBatch& out, int frames, cudaStream_t stream) const {
    if (frames <= 0) return;
    const std::size_t n = static_cast<std::size_t>(frames) * view_.slots * view_.width;
    const std::size_t c = static_cast<std::size_t>(frames) * view_.width;
    STRIPELINE_CUDA_CHECK(cudaMemcpyAsync(out.position, view_.position, n * sizeof(std::int32_t), cudaMemcpyDeviceToHost, stream));
    STRIPELINE_CUDA_CHECK(cudaMemcpyAsync(out.intensity, view_.intensity, n * sizeof(std::uint16_t), cudaMemcpyDeviceToHost, stream));
    STRIPELINE_CUDA_CHECK(
        cudaMemcpyAsync(out.stripe_width, view_.stripe_width, n * sizeof(std::uint16_t), cudaMemcpyDeviceToHost, stream));
    STRIPELINE_CUDA_CHECK(cudaMemcpyAsync(out.count, view_.count, c, cudaMemcpyDeviceToHost, stream));
  }

 private:
  DeviceBuffer buffer_;
  kc::ProfileView view_;
};

// What every CUDA stage has: its stream and the event it waits on.
class Lane {
 protected:
  Lane() : stream_(Stream::create()), done_(Event::create_sync()) {}
  ~Lane() { STRIPELINE_CUDA_LOG(cudaStreamSynchronize(stream_)); }

  void upload(const Batch& in, const DeviceBuffer& to) {
    const std::size_t bytes = in.filled_bytes();
    if (bytes > 0) STRIPELINE_CUDA_CHECK(cudaMemcpyAsync(to.data(), in.pixels.data(), bytes, cudaMemcpyHostToDevice, stream_));
  }
  void download(const DeviceBuffer& from, const Batch& in, Batch& out) {
    const std::size_t bytes = in.filled_bytes();
    if (bytes > 0) STRIPELINE_CUDA_CHECK(cudaMemcpyAsync(out.pixels.data(), from.data(), bytes, cudaMemcpyDeviceToHost, stream_));
  }
  // Everything enqueued so far on the stream is done when this returns.
  void finish() {
    STRIPELINE_CUDA_CHECK(cudaEventRecord(done_, stream_));
    STRIPELINE_CUDA_CHECK(cudaEventSynchronize(done_));
  }

  Stream stream_;
  Event done_;
};

void copy_pixels_header(const Batch& in, Batch& out) {
  out.frames = in.frames;
  out.sequence = in.sequence;
  out.first_index = in.first_index;
  out.meta = in.meta;
}

// ---------------------------------------------------------------------------
class CudaBlur final : public BlurStage, Lane {
 public:
  CudaBlur(const BatchLayout& l, const kernels::GaussianTaps& taps)
      : layout_(l),
        taps_(kc::to_blur_taps(taps)),
        in_(DeviceBuffer::allocate(l.bytes(), "blur input")),
        out_(DeviceBuffer::allocate(l.bytes(), "blur output")) {}

  void run(const Batch& in, Batch& out) override {
    check_same_layout(layout_, in.layout, "blur");
    check_same_layout(layout_, out.layout, "blur");
    check_filled(in, "blur");
    upload(in, in_);
    with_pixel_type(layout_.format, [&](auto zero) {
      using T = decltype(zero);
      kc::blur<T>(device_frames<T>(in_, layout_, in.frames), device_frames_out<T>(out_, layout_, in.frames), taps_, stream_);
    });
    download(out_, in, out);
    finish();
    copy_pixels_header(in, out);
  }

 private:
  BatchLayout layout_;
  kc::BlurTaps taps_;
  DeviceBuffer in_, out_;
};

class CudaThreshold final : public ThresholdStage, Lane {
 public:
  CudaThreshold(const BatchLayout& l, std::uint32_t t) : layout_(l), threshold_(t), buffer_(DeviceBuffer::allocate(l.bytes(), "threshold")) {}

  void run(const Batch& in, Batch& out) override {
    check_same_layout(layout_, in.layout, "threshold");
    check_same_layout(layout_, out.layout, "threshold");
    check_filled(in, "threshold");
    upload(in, buffer_);
    with_pixel_type(layout_.format, [&](auto zero) {
      using T = decltype(zero);
      kc::threshold<T>(device_frames<T>(buffer_, layout_, in.frames), device_frames_out<T>(buffer_, layout_, in.frames), threshold_,
                       stream_);
    });
    download(buffer_, in, out);
    finish();
    if (&in != &out) copy_pixels_header(in, out);
  }

 private:
  BatchLayout layout_;
  std::uint32_t threshold_;
  DeviceBuffer buffer_;
};

class CudaExtract final : public ExtractStage, Lane {
 public:
  CudaExtract(const BatchLayout& l, const kernels::ColumnParams& p)
      : layout_(l), params_(p), in_(DeviceBuffer::allocate(l.bytes(), "extract input")), profiles_(l.width, l.frames, p.slots) {}

  void run(const Batch& in, ProfileBatch& out) override {
    check_same_layout(layout_, in.layout, "extract");
    check_filled(in, "extract");
    check_profiles(layout_, params_.slots, in, out, "extract");
    upload(in, in_);
    with_pixel_type(layout_.format, [&](auto zero) {
      using T = decltype(zero);
      kc::extract<T>(device_frames<T>(in_, layout_, in.frames), 0u, params_, profiles_.view(), stream_);
    });
    profiles_.download(out, in.frames, stream_);
    finish();
    copy_batch_header(in, out);
  }

 private:
  BatchLayout layout_;
  kernels::ColumnParams params_;
  DeviceBuffer in_;
  DeviceProfiles profiles_;
};

// ---------------------------------------------------------------------------
void configure_fused_once() {
  static std::once_flag once;  // exceptions leave it unset: a later set-up retries
  std::call_once(once, [] { kc::configure_fused(max_shared_bytes_per_block()); });
}

// Batches of at most this many frames are the low-latency mode (docs/cuda.md).
constexpr int kLowLatencyFrames = 16;

class CudaProcessorImpl final : public CudaProcessor {
 public:
  CudaProcessorImpl(const BatchLayout& l, const ChainConfig& c, const CudaProcessorOptions& options)
      : layout_(l),
        params_(validate_chain(c, l)),
        stream_(Stream::create()),
        // Small batches are the low-latency mode: spin on completion rather
        // than sleep (a sleeping thread's wake-up costs tens of microseconds).
        done_(l.frames <= kLowLatencyFrames ? Event::create_spin() : Event::create_sync()),
        start_(Event::create_timing()),
        stop_(Event::create_timing()) {
    const kernels::GaussianTaps taps = kernels::make_gaussian_taps(c.blur_size, c.blur_sigma);
    chain_.taps = kc::to_blur_taps(taps);
    chain_.zero_below = threshold_stage_level(c, params_);
    chain_.column = params_;
    const std::size_t shared = kc::fused_shared_bytes(static_cast<int>(bytes_per_pixel(l.format)), l.frame_height, taps.size);
    fused_ = options.allow_fused && shared <= max_shared_bytes_per_block();
    in_ = DeviceBuffer::allocate(l.bytes(), "batch pixels");
    profiles_ = std::make_unique<DeviceProfiles>(l.width, l.frames, params_.slots);
    if (fused_)
      configure_fused_once();
    else if (taps.size > 0)
      scratch_ = DeviceBuffer::allocate(l.bytes(), "blurred pixels (per-stage path)");
  }

  ~CudaProcessorImpl() override { STRIPELINE_CUDA_LOG(cudaStreamSynchronize(stream_)); }

  void submit(const Batch& in, ProfileBatch& out) override {
    check_same_layout(layout_, in.layout, "process");
    check_filled(in, "process");
    check_profiles(layout_, params_.slots, in, out, "process");
    if (pending_) throw RuntimeFailure("process: a batch was submitted while the previous one was still pending (call wait() first)");
    const std::size_t bytes = in.filled_bytes();
    if (bytes > 0) STRIPELINE_CUDA_CHECK(cudaMemcpyAsync(in_.data(), in.pixels.data(), bytes, cudaMemcpyHostToDevice, stream_));
    STRIPELINE_CUDA_CHECK(cudaEventRecord(start_, stream_));
    enqueue(in.frames);
    STRIPELINE_CUDA_CHECK(cudaEventRecord(stop_, stream_));
    profiles_->download(out, in.frames, stream_);
    STRIPELINE_CUDA_CHECK(cudaEventRecord(done_, stream_));
    pending_ = true;
    copy_batch_header(in, out);
  }

  void wait() override {
    if (!pending_) return;
    pending_ = false;
    STRIPELINE_CUDA_CHECK(cudaEventSynchronize(done_));
    last_ms_ = elapsed_ms(start_, stop_);
  }

  double compute_only(int frames) override {
    wait();
    if (frames < 0 || frames > layout_.frames)
      throw RuntimeFailure("compute_only: " + std::to_string(frames) + " frames asked, capacity is " + std::to_string(layout_.frames));
    STRIPELINE_CUDA_CHECK(cudaEventRecord(start_, stream_));
    enqueue(frames);
    STRIPELINE_CUDA_CHECK(cudaEventRecord(stop_, stream_));
    STRIPELINE_CUDA_CHECK(cudaEventSynchronize(stop_));
    return elapsed_ms(start_, stop_);
  }

  double last_compute_ms() const override { return last_ms_; }
  cudaStream_t stream() const override { return stream_; }
  bool fused() const override { return fused_; }

 private:
  void enqueue(int frames) {
    if (frames <= 0) return;
    with_pixel_type(layout_.format, [&](auto zero) {
      using T = decltype(zero);
      const auto pixels = device_frames<T>(in_, layout_, frames);
      if (fused_) {
        kc::fused_chain<T>(pixels, chain_, profiles_->view(), stream_);
      } else if (chain_.taps.size > 0) {
        kc::blur<T>(pixels, device_frames_out<T>(scratch_, layout_, frames), chain_.taps, stream_);
        kc::extract<T>(device_frames<T>(scratch_, layout_, frames), chain_.zero_below, chain_.column, profiles_->view(), stream_);
      } else {
        kc::extract<T>(pixels, chain_.zero_below, chain_.column, profiles_->view(), stream_);
      }
    });
  }

  BatchLayout layout_;
  kernels::ColumnParams params_;
  kc::ChainParams chain_;
  bool fused_ = false;
  bool pending_ = false;
  double last_ms_ = 0.0;
  Stream stream_;
  Event done_, start_, stop_;
  DeviceBuffer in_, scratch_;
  std::unique_ptr<DeviceProfiles> profiles_;
};

}  // namespace

std::unique_ptr<BlurStage> make_blur_stage(const BatchLayout& l, const kernels::GaussianTaps& taps) {
  return std::make_unique<CudaBlur>(l, taps);
}
std::unique_ptr<ThresholdStage> make_threshold_stage(const BatchLayout& l, std::uint32_t t) {
  return std::make_unique<CudaThreshold>(l, t);
}
std::unique_ptr<ExtractStage> make_extract_stage(const BatchLayout& l, const kernels::ColumnParams& p) {
  return std::make_unique<CudaExtract>(l, p);
}
std::unique_ptr<CudaProcessor> make_cuda_processor_ex(const BatchLayout& l, const ChainConfig& c, const CudaProcessorOptions& o) {
  return std::make_unique<CudaProcessorImpl>(l, c, o);
}
std::unique_ptr<BatchProcessor> make_cuda_processor(const BatchLayout& l, const ChainConfig& c) {
  return make_cuda_processor_ex(l, c);
}

}  // namespace stripeline::cuda
