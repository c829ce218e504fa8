#pragma once
// Fixed-point separable Gaussian blur, shared by the CPU and CUDA backends.
//
// Taps are integers summing to exactly 4096 (12 bits), computed once on the
// host. Horizontal pass: t = (sum w*p + 128) >> 8 keeps 4 fractional bits
// (t <= 65535*16 fits 20 bits). Vertical pass: out = (sum w*t + 32768) >> 16.
// Every sum fits in uint32 for 8- and 16-bit pixels (max 4096*1048560+32768 <
// 2^32), so the result is the same on every backend, whatever the order.
//
// Borders replicate each *frame's* edges: a batch is many frames stacked, and
// a row of frame n must never be blurred with rows of frame n+1.
#include <array>
#include <cstdint>

#include "core/fixed_point.h"

namespace stripeline::kernels {

inline constexpr int kMaxBlurSize = 15;
inline constexpr int kBlurWeightBits = 12;
inline constexpr std::uint32_t kBlurWeightSum = 1u << kBlurWeightBits;
inline constexpr int kBlurMidShift = 8;    // horizontal pass keeps 12-8 = 4 fractional bits
inline constexpr int kBlurFinalShift = 16; // vertical pass removes 12+4

struct GaussianTaps {
  int size = 0;                                // odd, 3..15; 0 = no blur
  std::array<std::uint32_t, kMaxBlurSize> w{};  // w[0..size-1], sum == 4096
  // false: the blur runs along the columns only (the horizontal pass is the
  // identity, blur_h_none): a column never takes light from its neighbours,
  // so a stripe does not bleed into an occluded column beside it.
  bool across = true;
  int radius() const { return size / 2; }
};

// Quantised Gaussian taps for an odd `size` (3..15) and `sigma` (> 0; 0 picks
// sigma from the size as OpenCV does). Throws ConfigError on bad values.
GaussianTaps make_gaussian_taps(int size, double sigma);

STRIPELINE_HD int clamp_index(int i, int n) { return i < 0 ? 0 : (i >= n ? n - 1 : i); }

// Horizontal pass at (x) of one row; `row(x)` returns the pixel.
template <class Row>
STRIPELINE_HD std::uint32_t blur_h(const Row& row, int x, int width, const std::uint32_t* w, int size) {
  const int r = size / 2;
  std::uint32_t acc = 0;
  for (int k = 0; k < size; ++k) acc += w[k] * static_cast<std::uint32_t>(row(clamp_index(x + k - r, width)));
  return (acc + (1u << (kBlurMidShift - 1))) >> kBlurMidShift;
}

// The horizontal pass of a blur along the columns only: the pixel with the
// pass's 4 fractional bits, exactly blur_h with the single tap 4096.
STRIPELINE_HD std::uint32_t blur_h_none(std::uint32_t pixel) { return pixel << (kBlurWeightBits - kBlurMidShift); }

// Vertical pass at row y of a frame of `height` rows; `mid(y)` returns the
// horizontal-pass value of that frame row.
template <class Mid>
STRIPELINE_HD std::uint32_t blur_v(const Mid& mid, int y, int height, const std::uint32_t* w, int size) {
  const int r = size / 2;
  std::uint32_t acc = 0;
  for (int k = 0; k < size; ++k) acc += w[k] * mid(clamp_index(y + k - r, height));
  return (acc + (1u << (kBlurFinalShift - 1))) >> kBlurFinalShift;
}

STRIPELINE_HD std::uint32_t apply_threshold(std::uint32_t v, std::uint32_t threshold) { return v < threshold ? 0u : v; }

}  // namespace stripeline::kernels
