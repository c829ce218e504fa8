#pragma once
// Device-side pieces shared by the per-stage extraction kernel and the fused
// kernel (internal to kernels/cuda/).
#include <cstddef>
#include <cstdint>

#include "core/fixed_point.h"
#include "kernels/column_extract.h"
#include "kernels/cuda/stripe_kernels.h"

namespace stripeline::kernels::cuda::detail {

// Element (frame, slot, x) of the profile arrays.
__device__ __forceinline__ std::size_t slot_index(const ProfileView& out, int frame, int x, int slot) {
  const std::size_t width = static_cast<std::size_t>(out.width);
  return (static_cast<std::size_t>(frame) * static_cast<std::size_t>(out.slots) + static_cast<std::size_t>(slot)) * width + static_cast<std::size_t>(x);
}

// Slot `slot` of (frame, x) empty.
__device__ __forceinline__ void clear_slot(const ProfileView& out, int frame, int x, int slot) {
  const std::size_t i = slot_index(out, frame, x, slot);
  out.position[i] = kNoPeak;
  out.intensity[i] = 0;
  out.stripe_width[i] = 0;
  out.quality[i] = 0;
}

// Stores one column's extraction: `extract(emit)` runs it (emit(slot,
// position, value, run, contrast) per point) and returns the points found.
// Every slot of (frame, x) is written exactly once (kNoPeak/0/0 for the
// empty ones), then count = min(found, 255). Slot 0 is held in registers
// until the end; slots 1.. are set empty first and overwritten by the emits.
// `cleared`: the caller has emptied slots 1.. already (the warp chain, a lane
// a slot, ordered before the emits by __syncwarp).
template <class Extract>
__device__ __forceinline__ void store_column(const Extract& extract, const ProfileView& out, int frame, int x, bool cleared = false) {
  const std::size_t width = static_cast<std::size_t>(out.width);
  const std::size_t base = slot_index(out, frame, x, 0);
  if (!cleared)
    for (int s = 1; s < out.slots; ++s) clear_slot(out, frame, x, s);
  std::int32_t position0 = kNoPeak;
  std::uint32_t value0 = 0, width0 = 0, quality0 = 0;
  auto emit = [&](int slot, std::int32_t position, std::uint32_t value, std::uint32_t run, std::uint32_t contrast) {
    const std::uint32_t q = contrast > 65535u ? 65535u : contrast;
    if (slot == 0) {
      position0 = position;
      value0 = value;
      width0 = run;
      quality0 = q;
    } else {
      const std::size_t i = base + static_cast<std::size_t>(slot) * width;
      out.position[i] = position;
      out.intensity[i] = static_cast<std::uint16_t>(value);
      out.stripe_width[i] = static_cast<std::uint16_t>(run);
      out.quality[i] = static_cast<std::uint16_t>(q);
    }
  };
  const int found = extract(emit);
  out.position[base] = position0;
  out.intensity[base] = static_cast<std::uint16_t>(value0);
  out.stripe_width[base] = static_cast<std::uint16_t>(width0);
  out.quality[base] = static_cast<std::uint16_t>(quality0);
  out.count[static_cast<std::size_t>(frame) * width + static_cast<std::size_t>(x)] =
      static_cast<std::uint8_t>(found > 255 ? 255 : found);
}

// Runs kernels::extract_column on one column and stores the result (store_column).
template <class Column, class Raw>
__device__ __forceinline__ void extract_and_store(const Column& column, const Raw& raw, int height, const ColumnParams& params,
                                                  const ProfileView& out, int frame, int x) {
  store_column([&](const auto& emit) { return kernels::extract_column(column, raw, height, params, emit); }, out, frame, x);
}

}  // namespace stripeline::kernels::cuda::detail
