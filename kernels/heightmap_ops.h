#pragma once
// Scalar arithmetic of the height-map filters, shared by the CPU and CUDA
// backends so that their results are bit-identical (docs/heightmap-filters.md).
#include <cstdint>

#include "core/fixed_point.h"

namespace stripeline::kernels {

// 16-bit code -> 8-bit over [lo, hi] (lo < hi): 0 stays 0, valid codes map to 1..255.
STRIPELINE_HD std::uint8_t to8(std::uint16_t v, std::uint16_t lo, std::uint16_t hi) {
  if (v == 0) return 0;
  if (v <= lo) return 1;
  if (v >= hi) return 255;
  const std::uint32_t range = static_cast<std::uint32_t>(hi) - lo;
  const std::uint32_t r = 1u + ((static_cast<std::uint32_t>(v) - lo) * 254u + range / 2u) / range;
  return static_cast<std::uint8_t>(r > 255u ? 255u : r);
}

// Erosion is dilation under negation modulo 2^16: neg(0) = 0 and neg reverses
// the order of the valid codes 1..65535, so max over neg() picks the smallest
// valid code and ignores 0 unless the whole window is 0.
STRIPELINE_HD std::uint16_t morph_neg(std::uint16_t v) { return static_cast<std::uint16_t>(0u - v); }

// k-th smallest (0-based) of v[0..n), reordering v (Wirth's selection).
// The value is defined by the multiset alone, whatever the algorithm.
STRIPELINE_HD std::uint16_t select_kth(std::uint16_t* v, int n, int k) {
  int l = 0, m = n - 1;
  while (l < m) {
    const std::uint16_t x = v[k];
    int i = l, j = m;
    do {
      while (v[i] < x) ++i;
      while (x < v[j]) --j;
      if (i <= j) {
        const std::uint16_t t = v[i];
        v[i] = v[j];
        v[j] = t;
        ++i;
        --j;
      }
    } while (i <= j);
    if (j < k) l = i;
    if (k < i) m = j;
  }
  return v[k];
}

}  // namespace stripeline::kernels
