#pragma once
// Stripe positions are fixed-point integers so that every backend computes
// the very same bits. Two formats:
//
//  * Internal position: int32, 1/256 pixel (8 fractional bits), measured from
//    the centre of the frame's top row (row 0 -> 0, row 1 -> 256).
//    kNoPeak marks a slot without a detection.
//  * Height-map code: uint16 with `bits` fractional bits (default 6 = 1/64 px,
//    as AT and Photonfocus sensors publish), measured from the top *edge* of
//    the frame, so that every detection encodes to >= 1 and 0 can mean
//    "no detection":   code = round((row + 0.5) * 2^bits),  row = code / 2^bits - 0.5
//
// Both are documented in docs/data-model.md.
#include <cmath>
#include <cstdint>
#include <limits>

#if defined(__CUDACC__)
#define STRIPELINE_HD __host__ __device__ __forceinline__
#else
#define STRIPELINE_HD inline
#endif

namespace stripeline {

inline constexpr int kPositionFracBits = 8;
inline constexpr std::int32_t kPositionOne = 1 << kPositionFracBits;
inline constexpr std::int32_t kNoPeak = std::numeric_limits<std::int32_t>::min();
inline constexpr int kDefaultHeightCodeBits = 6;

// Internal position -> row in pixels (float is exact for these values). NaN when no peak.
inline float position_to_row(std::int32_t p) {
  return p == kNoPeak ? std::numeric_limits<float>::quiet_NaN() : static_cast<float>(p) / kPositionOne;
}

// Internal position -> 16-bit height code with `bits` fractional bits (0..8).
// The caller has checked that (frame_height - 0.5) * 2^bits fits in 16 bits.
STRIPELINE_HD std::uint16_t encode_height(std::int32_t p, int bits) {
  if (p == kNoPeak) return 0;
  const int shift = kPositionFracBits - bits;
  const std::int32_t half_pixel = kPositionOne / 2;
  const std::int32_t round = shift > 0 ? (1 << (shift - 1)) : 0;
  return static_cast<std::uint16_t>((p + half_pixel + round) >> shift);
}

// 16-bit height code -> row in pixels (NaN for 0).
inline float decode_height(std::uint16_t code, int bits) {
  if (code == 0) return std::numeric_limits<float>::quiet_NaN();
  return static_cast<float>(code) / static_cast<float>(1 << bits) - 0.5f;
}

// Largest frame height whose rows all fit the 16-bit code with `bits` fractional bits.
inline constexpr int max_frame_height_for_code(int bits) { return (65535 >> bits); }

}  // namespace stripeline
