#pragma once
// Profiles on the device for the CUDA processor and the live engine
// (stages/cuda/cuda_stages.cpp, live_engine.cpp).
#include <cstdint>

#include <cuda_runtime_api.h>

#include "core/cuda/check.h"
#include "core/cuda/runtime.h"
#include "core/profile.h"
#include "core/profile_layout.h"
#include "kernels/cuda/stripe_kernels.h"

namespace stripeline::cuda {

// Profiles on the device: the host ProfileBatch's layout (core/profile_layout.h)
// in one device buffer, so each array comes down with one copy.
class DeviceProfiles {
 public:
  DeviceProfiles(int width, int capacity, int slots, bool points = false)
      : layout_(ProfileLayout::make(width, capacity, slots, points)), buffer_(DeviceBuffer::allocate(layout_.bytes, "profiles")) {
    view_.position = buffer_.at_byte<std::int32_t>(layout_.position_offset);
    view_.intensity = buffer_.at_byte<std::uint16_t>(layout_.intensity_offset);
    view_.stripe_width = buffer_.at_byte<std::uint16_t>(layout_.width_offset);
    view_.quality = buffer_.at_byte<std::uint16_t>(layout_.quality_offset);
    view_.count = buffer_.at_byte<std::uint8_t>(layout_.count_offset);
    view_.width = width;
    view_.slots = slots;
    if (points) points_ = buffer_.at_byte<float>(layout_.xyz_offset);
  }
  const kernels::cuda::ProfileView& view() const { return view_; }
  float* points() const { return points_; }  // null unless made with points

  // Enqueue the copy of the first `frames` frames' profiles into out. A full
  // batch into a host batch of the same layout comes down in one copy (each
  // copy costs the host microseconds: the batch-of-1 live path feels them).
  void download(ProfileBatch& out, int frames, cudaStream_t stream) const {
    if (frames <= 0) return;
    if (frames == layout_.capacity && same_layout(out.layout())) {
      STRIPELINE_CUDA_CHECK(cudaMemcpyAsync(out.position, buffer_.data(), layout_.bytes, cudaMemcpyDeviceToHost, stream));
      return;
    }
    const std::size_t n = layout_.slot_values(frames), c = layout_.count_values(frames);
    STRIPELINE_CUDA_CHECK(cudaMemcpyAsync(out.position, view_.position, n * sizeof(std::int32_t), cudaMemcpyDeviceToHost, stream));
    STRIPELINE_CUDA_CHECK(cudaMemcpyAsync(out.intensity, view_.intensity, n * sizeof(std::uint16_t), cudaMemcpyDeviceToHost, stream));
    STRIPELINE_CUDA_CHECK(
        cudaMemcpyAsync(out.stripe_width, view_.stripe_width, n * sizeof(std::uint16_t), cudaMemcpyDeviceToHost, stream));
    STRIPELINE_CUDA_CHECK(cudaMemcpyAsync(out.quality, view_.quality, n * sizeof(std::uint16_t), cudaMemcpyDeviceToHost, stream));
    STRIPELINE_CUDA_CHECK(cudaMemcpyAsync(out.count, view_.count, c, cudaMemcpyDeviceToHost, stream));
    if (points_ != nullptr)
      STRIPELINE_CUDA_CHECK(cudaMemcpyAsync(out.xyz, points_, 3 * n * sizeof(float), cudaMemcpyDeviceToHost, stream));
  }

 private:
  bool same_layout(const ProfileLayout& l) const {
    return l.width == layout_.width && l.capacity == layout_.capacity && l.slots == layout_.slots && l.xyz == layout_.xyz && l.bytes == layout_.bytes &&
           l.position_offset == 0;
  }

  ProfileLayout layout_;
  DeviceBuffer buffer_;
  kernels::cuda::ProfileView view_;
  float* points_ = nullptr;
};

}  // namespace stripeline::cuda
