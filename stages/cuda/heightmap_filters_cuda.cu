// CUDA backend of the height-map filters. Set-up allocates the lane (stream
// and events) and every device buffer (input, two ping-pong maps, 8-bit output,
// van Herk scratch for the longest length in the chain); run() only enqueues
// copies and kernels (kernels/cuda/heightmap_kernels.h) and waits on its event.
#include <algorithm>
#include <string>

#include "core/errors.h"
#include "kernels/cuda/heightmap_kernels.h"
#include "core/cuda/device_lane.h"
#include "stages/cuda/heightmap_filters_cuda.h"

namespace stripeline::cuda {

namespace kc = kernels::cuda;

namespace {

class CudaHeightMapFilterImpl final : public CudaHeightMapFilter {
 public:
  CudaHeightMapFilterImpl(int width, int height, std::vector<FilterStep> steps)
      : width_(width), height_(height), steps_(std::move(steps)) {
    require_device();
    const std::size_t px = static_cast<std::size_t>(width) * height;
    std::size_t scratch = 1;
    for (const auto& s : steps_)
      if (s.op == FilterOp::Dilate || s.op == FilterOp::Erode)
        scratch = std::max(scratch, kc::heightmap_morph_scratch(width, height, s.size, s.axis == FilterAxis::Vertical));
    in_ = DeviceBuffer::allocate(px * 2, "height map input");
    a_ = DeviceBuffer::allocate(px * 2, "height map ping");
    b_ = DeviceBuffer::allocate(px * 2, "height map pong");
    out8_ = DeviceBuffer::allocate(px, "height map 8-bit output");
    g_ = DeviceBuffer::allocate(scratch * 2, "van Herk prefix scratch");
    h_ = DeviceBuffer::allocate(scratch * 2, "van Herk suffix scratch");
  }

  Backend backend() const override { return Backend::Cuda; }
  int width() const override { return width_; }
  int height() const override { return height_; }
  bool output_8bit() const override {
    return steps_.back().op == FilterOp::To8 || steps_.back().op == FilterOp::MedianTo8;
  }

  void run(const std::uint16_t* in, void* out) override {
    const std::size_t px = static_cast<std::size_t>(width_) * height_;
    STRIPELINE_CUDA_CHECK(cudaMemcpyAsync(in_.get(), in, px * 2, cudaMemcpyHostToDevice, lane_.stream()));
    const void* result = enqueue_chain();
    STRIPELINE_CUDA_CHECK(cudaMemcpyAsync(out, result, px * (output_8bit() ? 1 : 2), cudaMemcpyDeviceToHost, lane_.stream()));
    lane_.finish();
  }

  double compute_only_ms() override {
    lane_.record_start();
    enqueue_chain();
    lane_.record_stop();
    lane_.wait_stop();
    return lane_.elapsed();
  }

 private:
  // Enqueues every step; returns the device pointer holding the result.
  const void* enqueue_chain() {
    const cudaStream_t stream = lane_.stream();
    const std::uint16_t* src = in_.as<const std::uint16_t>();
    const void* result = src;
    for (const auto& s : steps_) {
      std::uint16_t* dst = src == a_.as<const std::uint16_t>() ? b_.as<std::uint16_t>() : a_.as<std::uint16_t>();
      switch (s.op) {
        case FilterOp::Median:
          kc::launch_heightmap_median(src, width_, height_, s.size, dst, nullptr, 0, 0, stream);
          break;
        case FilterOp::MedianTo8:
          kc::launch_heightmap_median(src, width_, height_, s.size, nullptr, out8_.as<std::uint8_t>(), s.lo, s.hi, stream);
          return out8_.get();
        case FilterOp::To8:
          kc::launch_heightmap_to8(src, width_, height_, s.lo, s.hi, out8_.as<std::uint8_t>(), stream);
          return out8_.get();
        case FilterOp::Dilate:
        case FilterOp::Erode:
          kc::launch_heightmap_morph(src, width_, height_, s.size, s.axis == FilterAxis::Vertical, s.op == FilterOp::Erode,
                                     g_.as<std::uint16_t>(), h_.as<std::uint16_t>(), dst, stream);
          break;
      }
      src = dst;
      result = dst;
    }
    return result;
  }

  int width_, height_;
  std::vector<FilterStep> steps_;
  DeviceBuffer in_, a_, b_, out8_, g_, h_;
  DeviceLane lane_;  // declared last: destroyed first, waiting for the stream before the buffers go
};

}  // namespace

std::unique_ptr<CudaHeightMapFilter> make_heightmap_filter(int width, int height, const std::vector<FilterStep>& steps) {
  validate_filter_steps(steps);
  return std::make_unique<CudaHeightMapFilterImpl>(width, height, steps);
}

}  // namespace stripeline::cuda
