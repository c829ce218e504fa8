#pragma once
// Pixel-level rendering shared by simulated sources: counter-based random
// numbers (every value a pure function of its inputs, so frames render
// identically in any order or thread), a pixel-integrated Gaussian beam along
// a column, quantisation to Mono8/Mono16, and the parallel fill() loop with
// each frame's metadata. Used by SyntheticScanner and TriangulationScanner.
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "core/batch.h"
#include "core/types.h"

namespace stripeline::render {

inline constexpr std::uint64_t kGolden = 0x9e3779b97f4a7c15ull;

// splitmix64 finaliser.
inline std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

inline std::uint64_t hash(std::uint64_t seed, std::uint64_t salt, std::uint64_t a, std::uint64_t b = 0) {
  std::uint64_t h = mix64(seed + kGolden * (salt + 1));
  h = mix64(h + kGolden * (a + 1));
  return mix64(h + kGolden * (b + 1));
}

// Uniform in [0, 1) from the top 53 bits.
inline double unit(std::uint64_t h) { return static_cast<double>(h >> 11) * 0x1.0p-53; }

// Approximately standard normal (Irwin-Hall of four 16-bit uniforms), bounded at +-3.46.
inline float normal_approx(std::uint64_t h) {
  const std::uint32_t s = static_cast<std::uint32_t>(h & 0xffff) + static_cast<std::uint32_t>((h >> 16) & 0xffff) +
                          static_cast<std::uint32_t>((h >> 32) & 0xffff) + static_cast<std::uint32_t>(h >> 48);
  constexpr float kScale = 1.7320508075688772f / 65536.0f;
  return (static_cast<float>(s) - 131070.0f) * kScale;
}

// erf (Abramowitz & Stegun 7.1.28): absolute error below 3e-7; moves a
// stripe's pixel-integrated centre of gravity by < 1e-5 px.
inline double fast_erf(double x) {
  const double a = std::abs(x);
  double p = 1.0 + a * (0.0705230784 + a * (0.0422820123 + a * (0.0092705272 + a * (0.0001520143 + a * (0.0002765672 + a * 0.0000430638)))));
  p *= p;
  p *= p;
  p *= p;
  p *= p;
  const double e = 1.0 - 1.0 / p;
  return x < 0 ? -e : e;
}

// Background plus Gaussian sensor noise, for a frame of n pixels.
inline void fill_background(float* buf, std::size_t n, float background, float noise, std::uint64_t key) {
  if (noise > 0.0f) {
    for (std::size_t i = 0; i < n; ++i) buf[i] = background + noise * normal_approx(mix64(key + kGolden * i));
  } else {
    std::fill(buf, buf + n, background);
  }
}

// Adds to column x of a width x height frame a Gaussian beam of peak
// `amplitude` centred at row `centre` (0 = centre of the top row), sigma
// rows, integrated over each pixel, within +-5 sigma. speckle: multiplicative
// uniform noise of that relative amplitude, keyed per pixel.
inline void add_beam(float* buf, int width, int height, int x, double centre, double sigma, double amplitude, double speckle,
                     std::uint64_t speckle_key) {
  const double half_window = 5.0 * sigma;
  const int y0 = std::max(0, static_cast<int>(std::floor(centre - half_window)));
  const int y1 = std::min(height - 1, static_cast<int>(std::ceil(centre + half_window)));
  if (y1 < y0) return;
  constexpr double kSqrt2Pi = 2.5066282746310002;
  const double inv = 1.0 / (1.4142135623730951 * sigma);
  const double scale = amplitude * kSqrt2Pi * sigma * 0.5;
  double lower = fast_erf((y0 - 0.5 - centre) * inv);
  for (int y = y0; y <= y1; ++y) {
    const double upper = fast_erf((y + 0.5 - centre) * inv);
    double v = scale * (upper - lower);
    lower = upper;
    const std::size_t idx = static_cast<std::size_t>(y) * width + x;
    if (speckle > 0.0) v *= 1.0 + speckle * (2.0 * unit(mix64(speckle_key + kGolden * idx)) - 1.0);
    buf[idx] += static_cast<float>(v);
  }
}

// Rounds and clamps to the pixel format (Mono16 is the 8-bit scale times 256).
inline void quantise(const float* buf, std::size_t n, PixelFormat format, std::byte* dst) {
  if (format == PixelFormat::Mono8) {
    auto* out = reinterpret_cast<std::uint8_t*>(dst);
    for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<std::uint8_t>(static_cast<int>(std::clamp(buf[i], 0.0f, 255.0f) + 0.5f));
  } else {
    auto* out = reinterpret_cast<std::uint16_t*>(dst);
    for (std::size_t i = 0; i < n; ++i)
      out[i] = static_cast<std::uint16_t>(static_cast<int>(std::clamp(buf[i] * 256.0f, 0.0f, 65535.0f) + 0.5f));
  }
}

// A simulated sensor's fill(): the next frames (at most `total` in all, 0 =
// endless) rendered in parallel by render_frame(index, pixels), with each
// frame's id, timestamp (frame_rate) and encoder count (encoder_step per
// frame, 0 = none). `next` advances. False when nothing is left.
template <class RenderFrame>
bool fill_frames(Batch& batch, std::uint64_t& next, std::uint64_t total, double frame_rate, std::int64_t encoder_step,
                 const RenderFrame& render_frame) {
  std::uint64_t n = static_cast<std::uint64_t>(batch.layout.frames);
  if (total != 0) n = std::min(n, total > next ? total - next : 0);
  batch.frames = static_cast<int>(n);
  if (n == 0) return false;
  const std::uint64_t first = next;
  const double ns_per_frame = 1e9 / frame_rate;
  tbb::parallel_for(tbb::blocked_range<int>(0, static_cast<int>(n)), [&](const tbb::blocked_range<int>& r) {
    for (int i = r.begin(); i != r.end(); ++i) {
      const std::uint64_t index = first + static_cast<std::uint64_t>(i);
      render_frame(index, batch.frame_data(i));
      FrameMeta& m = batch.meta[static_cast<std::size_t>(i)];
      m.frame_id = index;
      m.timestamp_ns = std::llround(static_cast<double>(index) * ns_per_frame);
      m.encoder = static_cast<std::int64_t>(index) * encoder_step;
      m.has_encoder = encoder_step != 0;
      m.missing = false;
    }
  });
  next += n;
  return true;
}

}  // namespace stripeline::render
