#pragma once
// CPU loops over the shared integer kernels (kernels/gaussian.h,
// kernels/column_extract.h). A "tile" is one frame's columns [x0, x1): the
// unit the CPU backend parallelises over, small enough to stay in cache.
#include <cstdint>

#include "core/fixed_point.h"
#include "core/profile.h"
#include "kernels/column_extract.h"
#include "kernels/gaussian.h"

namespace stripeline::cpu {

// Blur columns [x0, x1) of one frame (width x height, row stride `stride`)
// into `out` (height rows of x1-x0 pixels). `mid` is scratch of
// height*(x1-x0) values. With taps.size == 0 it copies.
template <class T>
void blur_tile(const T* frame, int width, int height, std::ptrdiff_t stride, int x0, int x1,
               const kernels::GaussianTaps& taps, std::uint32_t* mid, T* out) {
  const int tw = x1 - x0;
  if (taps.size == 0) {
    for (int y = 0; y < height; ++y)
      for (int x = x0; x < x1; ++x) out[y * tw + (x - x0)] = frame[y * stride + x];
    return;
  }
  for (int y = 0; y < height; ++y) {
    const T* row = frame + y * stride;
    auto pixel = [row](int x) { return row[x]; };
    for (int x = x0; x < x1; ++x) mid[y * tw + (x - x0)] = kernels::blur_h(pixel, x, width, taps.w.data(), taps.size);
  }
  for (int c = 0; c < tw; ++c) {
    auto m = [mid, tw, c](int y) { return mid[y * tw + c]; };
    for (int y = 0; y < height; ++y)
      out[y * tw + c] = static_cast<T>(kernels::blur_v(m, y, height, taps.w.data(), taps.size));
  }
}

// Extract columns [x0, x1) of frame `f` from pixels addressed by `pixel(x, y)`
// into the profile batch.
template <class Pixel>
void extract_tile(const Pixel& pixel, int height, int x0, int x1, int f, const kernels::ColumnParams& p, ProfileBatch& out) {
  for (int x = x0; x < x1; ++x) {
    for (int s = 0; s < out.slots; ++s) {
      const std::size_t i = out.slot_index(f, s, x);
      out.position[i] = kNoPeak;
      out.intensity[i] = 0;
      out.stripe_width[i] = 0;
    }
    auto column = [&pixel, x](int y) -> std::uint32_t { return pixel(x, y); };
    auto emit = [&out, f, x](int slot, std::int32_t pos, std::uint32_t value, std::uint32_t width) {
      const std::size_t i = out.slot_index(f, slot, x);
      out.position[i] = pos;
      out.intensity[i] = static_cast<std::uint16_t>(value);
      out.stripe_width[i] = static_cast<std::uint16_t>(width);
    };
    const int found = kernels::extract_column(column, height, p, emit);
    out.count[static_cast<std::size_t>(f) * out.width + x] = static_cast<std::uint8_t>(found > 255 ? 255 : found);
  }
}

}  // namespace stripeline::cpu
