// A simulated laser line scanner with known truth. See synthetic_scanner.h.
//
// The surface (in units of the usable row range, 0 = top of it, 1 = bottom)
// is a sum of parts that vary along the columns and along the frames, and
// repeats every kSurfacePeriod frames:
//   - a flat base with a gentle tilt across the columns,
//   - a ramp along the columns whose height breathes along the frames, ending
//     in a sharp step down,
//   - a raised block with sharp edges along the columns AND along the frames,
//   - two Gaussian domes and one Gaussian dent,
//   - a cylinder lying along the scan direction,
//   - an oblique step whose edge wanders across the columns from frame to frame.
// Occlusions and secondary reflections are contiguous stretches of columns
// placed by a hash of (seed, frame region, column cell), so they move from one
// region of frames to the next.
//
// Rendering: background + noise per pixel (row-wise, cheap counter-based
// hash), then per column the pixel-integrated Gaussian beam near its centre,
// then rounding and clamping. Every random number is a pure function of
// (seed, frame, column, row), so rendering frames in parallel, in any order or
// batch size, gives identical pixels.
#include "acquisition/synthetic_scanner.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <vector>


#include "acquisition/stripe_render.h"
#include "core/errors.h"

namespace stripeline {

namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
using render::kGolden;

// The surface repeats every kSurfacePeriod frames (an endless scanner scans
// the same object over and over).
constexpr std::uint64_t kSurfacePeriod = 600;
// Occlusion and reflection patterns change every this many frames.
constexpr std::uint64_t kOcclusionRegionFrames = 37;
constexpr std::uint64_t kReflectionRegionFrames = 53;
// The stripe is evaluated within +-kWindowSigmas of its centre (the mass
// outside is below 6e-7 of the total).
constexpr double kWindowSigmas = 5.0;

// Salts that keep the random streams apart.
enum Salt : std::uint64_t {
  kSaltNoise = 1,
  kSaltSpeckle = 2,
  kSaltOcclusion = 3,
  kSaltReflection = 4,
  kSaltGain = 5,
  kSaltDim = 6,
  kSaltSecond = 7,
  kSaltTexture = 8,
  kSaltHard = 9,
};

// Hard-case patterns change every this many frames.
constexpr std::uint64_t kDimRegionFrames = 29;
constexpr std::uint64_t kSecondRegionFrames = 41;
// Texture cell size, pixels, and how fast the surface slides along the rows
// from frame to frame.
constexpr double kTextureCell = 4.0;
constexpr double kTextureRowsPerFrame = 0.7;

// The hashing, noise and erf every simulated sensor shares (acquisition/stripe_render.h).
using render::fast_erf;
using render::mix64;
using render::normal_approx;
using render::unit;
inline std::uint64_t hash3(std::uint64_t seed, std::uint64_t salt, std::uint64_t a, std::uint64_t b = 0) { return render::hash(seed, salt, a, b); }

inline double box(double v, double a, double b) { return (v >= a && v < b) ? 1.0 : 0.0; }

inline double gauss2(double du, double su, double dp, double sp) {
  const double q = 0.5 * ((du * du) / (su * su) + (dp * dp) / (sp * sp));
  return q > 40.0 ? 0.0 : std::exp(-q);  // exp(-40) = 4e-18: below the precision of the sum
}

// Cyclic distance along the (periodic) scan coordinate p in [0, 1).
inline double dp_cyclic(double p, double c) {
  double d = p - c;
  if (d > 0.5) d -= 1.0;
  if (d < -0.5) d += 1.0;
  return d;
}

// Smooth value noise in [-1, 1]: hashed lattice values, smoothstep-blended.
double value_noise(std::uint64_t seed, std::uint64_t salt, double a, double b) {
  const double fa = std::floor(a), fb = std::floor(b);
  const double ta = a - fa, tb = b - fb;
  const double sa = ta * ta * (3.0 - 2.0 * ta), sb = tb * tb * (3.0 - 2.0 * tb);
  auto lattice = [&](double i, double j) {
    const auto ui = static_cast<std::uint64_t>(static_cast<std::int64_t>(i) + (std::int64_t{1} << 40));
    const auto uj = static_cast<std::uint64_t>(static_cast<std::int64_t>(j) + (std::int64_t{1} << 40));
    return 2.0 * unit(hash3(seed, salt, ui, uj)) - 1.0;
  };
  const double v00 = lattice(fa, fb), v10 = lattice(fa + 1, fb), v01 = lattice(fa, fb + 1), v11 = lattice(fa + 1, fb + 1);
  return (v00 * (1 - sa) + v10 * sa) * (1 - sb) + (v01 * (1 - sa) + v11 * sa) * sb;
}

// Surface albedo in the laser's channel at image column x, row y, frame f:
// 1 +- texture, fixed to the surface (it slides along the rows as the part moves).
double albedo(const SyntheticConfig& c, int x, double y, std::uint64_t frame) {
  const double scan = static_cast<double>(frame % kSurfacePeriod) * kTextureRowsPerFrame;
  return 1.0 + c.texture * value_noise(c.seed, kSaltTexture, x / kTextureCell, (y + scan) / kTextureCell);
}

// Uneven ambient light in [0, 1] at column x, row y, frame f: two broad waves
// drifting over the columns, rows and frames.
double ambient_shape(const SyntheticConfig& c, int x, int y, std::uint64_t frame) {
  const double u = (x + 0.5) / c.width, r = (y + 0.5) / c.frame_height, f = static_cast<double>(frame % kSurfacePeriod);
  const double ph = unit(hash3(c.seed, kSaltHard, 1));
  return 0.5 + 0.25 * std::sin(2.0 * kPi * (1.3 * u + 0.9 * r + f / 311.0)) + 0.25 * std::cos(2.0 * kPi * (0.6 * u - 0.45 * r + f / 173.0 + ph));
}

// Surface height in [0, 1] at column coordinate u in (0, 1) and scan
// coordinate p in [0, 1).
double surface(double u, double p) {
  double h = 0.18 + 0.08 * u;  // flat base, gentle tilt

  // Ramp along the columns (slope), height breathing along the frames, then a
  // sharp step down at u = 0.25.
  const double ramp_height = 0.30 * (0.65 + 0.35 * std::sin(2.0 * kPi * p));
  if (u >= 0.05 && u < 0.20) h += ramp_height * (u - 0.05) / 0.15;
  if (u >= 0.20 && u < 0.25) h += ramp_height;

  // Raised block: sharp edges along the columns and along the frames.
  h += 0.28 * box(u, 0.32, 0.45) * box(p, 0.10, 0.45);

  // Smooth bumps: two domes and a dent.
  h += 0.42 * gauss2(u - 0.55, 0.035, dp_cyclic(p, 0.30), 0.07);
  h += 0.30 * gauss2(u - 0.63, 0.020, dp_cyclic(p, 0.72), 0.05);
  h -= 0.12 * gauss2(u - 0.12, 0.030, dp_cyclic(p, 0.78), 0.06);

  // Cylinder lying along the scan direction.
  const double cu = (u - 0.80) / 0.07;
  if (cu > -1.0 && cu < 1.0) h += 0.38 * std::sqrt(1.0 - cu * cu);

  // Oblique step: its edge wanders across the columns along the frames.
  const double edge = 0.935 + 0.035 * std::sin(2.0 * kPi * p);
  if (u >= edge) h += 0.22;

  return std::clamp(h, 0.0, 1.0);
}

// Is column x inside a hashed stretch of fraction `fraction` of the columns?
// Columns are cut in cells; in each cell (for each region of frames) one
// contiguous stretch of about fraction * cell columns is marked, at a hashed
// offset. The stretch length is rounded up or down at random so the expected
// fraction is exact. Returns the cell's hash (nonzero) when marked, else 0.
std::uint64_t in_stretch(std::uint64_t seed, std::uint64_t salt, std::uint64_t region, int cell, double fraction, int x) {
  if (fraction <= 0.0) return 0;
  const int c = x / cell;
  const std::uint64_t h = hash3(seed, salt, region, static_cast<std::uint64_t>(c));
  const double len = fraction * cell;
  int n = static_cast<int>(std::floor(len));
  if (unit(h) < len - n) ++n;
  if (n <= 0) return 0;
  const int offset = static_cast<int>(mix64(h) % static_cast<std::uint64_t>(cell - n + 1));
  const int pos = x - c * cell - offset;
  return (pos >= 0 && pos < n) ? (h | 1) : 0;
}

int cell_size(int width, int lo, int hi, int divisor) { return std::clamp(width / divisor, lo, hi); }

std::string num(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

[[noreturn]] void out_of_range(const char* key, const std::string& value, const std::string& expected) {
  throw ConfigError(std::string("synthetic.") + key + " = " + value + " is out of range (expected " + expected + ")");
}

void check_range(const char* key, double v, double lo, double hi, const char* expected) {
  if (!(v >= lo && v <= hi)) out_of_range(key, num(v), expected);
}

// True stripe centre (NaN = occluded); see SyntheticScanner::truth.
double truth_of(const SyntheticConfig& c, std::uint64_t frame, int column) {
  if (column < 0 || column >= c.width) return kNaN;

  // Occluded stretches.
  const int occ_cell = cell_size(c.width, 16, 512, 4);
  if (in_stretch(c.seed, kSaltOcclusion, frame / kOcclusionRegionFrames, occ_cell, c.occlusion, column)) return kNaN;

  const double margin = 4.0 * c.beam_sigma + 2.0;
  const double lo = margin;
  const double hi = (c.frame_height - 1) - margin;
  if (hi <= lo) return 0.5 * (c.frame_height - 1);  // tiny frame: the middle

  const double u = (column + 0.5) / c.width;
  const double p = static_cast<double>(frame % kSurfacePeriod) / static_cast<double>(kSurfacePeriod);
  return lo + (hi - lo) * surface(u, p);
}

// Centre of the secondary reflection given the stripe centre t (NaN = none).
double reflection_of(const SyntheticConfig& c, std::uint64_t frame, int column, double t) {
  if (c.reflection <= 0.0 || c.reflection_strength <= 0.0) return kNaN;
  if (std::isnan(t)) return kNaN;  // no stripe, nothing to reflect
  const int cell = cell_size(c.width, 16, 512, 6);
  const std::uint64_t h =
      in_stretch(c.seed, kSaltReflection, frame / kReflectionRegionFrames, cell, c.reflection, column);
  if (!h) return kNaN;

  // 6..9 beam widths away, on a hashed side; the other side when it does not fit.
  const std::uint64_t g = mix64(h ^ 0x5bd1e995ull);
  const double d = c.beam_sigma * (6.0 + 3.0 * unit(g));
  const double margin = 3.0 * c.beam_sigma + 1.0;
  const double lo = margin, hi = (c.frame_height - 1) - margin;
  const bool below_first = (g & 1) != 0;
  for (int k = 0; k < 2; ++k) {
    const bool below = (k == 0) == below_first;
    const double r = below ? t + d : t - d;
    if (r >= lo && r <= hi) return r;
  }
  return kNaN;
}

// Centre of the second stripe given the stripe centre t (NaN = none): at the
// configured distance, on a hashed side; the other side when it does not fit.
double second_of(const SyntheticConfig& c, std::uint64_t frame, int column, double t) {
  if (c.second_stripe <= 0.0 || c.second_stripe_strength <= 0.0) return kNaN;
  if (std::isnan(t)) return kNaN;
  const int cell = cell_size(c.width, 16, 512, 5);
  const std::uint64_t h = in_stretch(c.seed, kSaltSecond, frame / kSecondRegionFrames, cell, c.second_stripe, column);
  if (!h) return kNaN;
  const double margin = 3.0 * c.beam_sigma + 1.0;
  const double lo = margin, hi = (c.frame_height - 1) - margin;
  const bool below_first = (mix64(h) & 1) != 0;
  for (int k = 0; k < 2; ++k) {
    const bool below = (k == 0) == below_first;
    const double r = below ? t + c.second_stripe_distance : t - c.second_stripe_distance;
    if (r >= lo && r <= hi) return r;
  }
  return kNaN;
}

}  // namespace

// ---------------------------------------------------------------------------

void SyntheticConfig::validate() const {
  if (width < 1 || width > kMaxWidth) out_of_range("width", std::to_string(width), "1.." + std::to_string(kMaxWidth));
  if (frame_height < 8 || frame_height > kMaxFrameHeight)
    out_of_range("frame_height", std::to_string(frame_height), "8.." + std::to_string(kMaxFrameHeight));
  if (format != PixelFormat::Mono8 && format != PixelFormat::Mono16)
    out_of_range("format", std::to_string(static_cast<int>(format)), "Mono8 or Mono16");
  check_range("beam_sigma", beam_sigma, 0.3, 20.0, "0.3..20");
  if (!(peak > 0.0 && peak <= 1000.0)) out_of_range("peak", num(peak), "more than 0 and at most 1000, on the 8-bit scale");
  check_range("peak_variation", peak_variation, 0.0, 0.9, "0..0.9");
  check_range("background", background, 0.0, 255.0, "0..255, on the 8-bit scale");
  const double brightest = background + peak * (1.0 + peak_variation);
  if (brightest > 1020.0)
    throw ConfigError("synthetic.peak = " + num(peak) + " is out of range: background + peak * (1 + peak_variation) = " +
                      num(brightest) + " (expected at most 1020, 4x the 8-bit full scale)");
  check_range("noise", noise, 0.0, 100.0, "0..100, on the 8-bit scale");
  check_range("speckle", speckle, 0.0, 1.0, "0..1");
  if (!(occlusion >= 0.0 && occlusion < 1.0)) out_of_range("occlusion", num(occlusion), "0 <= fraction < 1");
  if (!(reflection >= 0.0 && reflection < 1.0)) out_of_range("reflection", num(reflection), "0 <= fraction < 1");
  check_range("reflection_strength", reflection_strength, 0.0, 2.0, "0..2");
  if (!(frame_rate > 0.0 && frame_rate <= 1e7)) out_of_range("frame_rate", num(frame_rate), "more than 0 and at most 1e7 frames per second");
  if (bits != 0 && !(format == PixelFormat::Mono8 ? bits == 8 : (bits >= 9 && bits <= 16)))
    out_of_range("bits", std::to_string(bits), format == PixelFormat::Mono8 ? "0 or 8 for 8-bit output" : "0 or 9..16 for 16-bit output");
  check_range("ambient", ambient, 0.0, 255.0, "0..255, on the 8-bit scale");
  check_range("texture", texture, 0.0, 0.9, "0..0.9");
  check_range("glow", glow, 0.0, 2.0, "0..2");
  check_range("glow_width", glow_width, 0.5, 20.0, "0.5..20 pixels");
  if (!(second_stripe >= 0.0 && second_stripe < 1.0)) out_of_range("second_stripe", num(second_stripe), "0 <= fraction < 1");
  check_range("second_stripe_distance", second_stripe_distance, 2.0, 200.0, "2..200 pixels");
  check_range("second_stripe_strength", second_stripe_strength, 0.0, 2.0, "0..2");
  if (!(dim_segments >= 0.0 && dim_segments < 1.0)) out_of_range("dim_segments", num(dim_segments), "0 <= fraction < 1");
  check_range("dim_factor", dim_factor, 0.0, 1.0, "0..1");
  check_range("beam_sigma_variation", beam_sigma_variation, 0.0, 0.8, "0..0.8");
  constexpr std::int64_t kMaxStep = std::int64_t{1} << 40;
  if (encoder_step < -kMaxStep || encoder_step > kMaxStep)
    out_of_range("encoder_step", std::to_string(encoder_step), "-2^40..2^40 counts per frame");
  if (cached_frames < 0 || cached_frames > 100000) out_of_range("cached_frames", std::to_string(cached_frames), "0..100000");
}

double synthetic_truth(const SyntheticConfig& c, std::uint64_t frame, int column) { return truth_of(c, frame, column); }

double synthetic_reflection_row(const SyntheticConfig& c, std::uint64_t frame, int column) {
  return reflection_of(c, frame, column, truth_of(c, frame, column));
}

double synthetic_second_row(const SyntheticConfig& c, std::uint64_t frame, int column) {
  return second_of(c, frame, column, truth_of(c, frame, column));
}

void render_synthetic_frame(const SyntheticConfig& c, std::uint64_t frame, std::byte* dst) {
  const int W = c.width;
  const int H = c.frame_height;
  const std::size_t n = static_cast<std::size_t>(W) * H;
  std::vector<float> buf(n);

  // 1. Background and sensor noise, row-wise (sequential memory).
  const std::uint64_t noise_key = hash3(c.seed, kSaltNoise, frame);
  const float bg = static_cast<float>(c.background);
  if (c.noise > 0.0) {
    const float sigma = static_cast<float>(c.noise);
    for (std::size_t i = 0; i < n; ++i) buf[i] = bg + sigma * normal_approx(mix64(noise_key + kGolden * i));
  } else {
    std::fill(buf.begin(), buf.end(), bg);
  }
  if (c.ambient > 0.0) {
    for (int y = 0; y < H; ++y)
      for (int x = 0; x < W; ++x) {
        double a = c.ambient * ambient_shape(c, x, y, frame);
        if (c.texture > 0.0) a *= albedo(c, x, y, frame);
        buf[static_cast<std::size_t>(y) * W + x] += static_cast<float>(a);
      }
  }

  // 2. The stripe (and its reflection), column by column, near the centre only.
  const std::uint64_t speckle_key = hash3(c.seed, kSaltSpeckle, frame);
  const std::uint64_t gain_key = hash3(c.seed, kSaltGain, 0);
  const double ph1 = unit(gain_key), ph2 = unit(mix64(gain_key));
  const double sigma = c.beam_sigma;
  const double inv = 1.0 / (std::sqrt(2.0) * sigma);
  const double area = std::sqrt(2.0 * kPi) * sigma;  // a unit-peak Gaussian's integral
  const double half_window = kWindowSigmas * sigma;
  std::vector<double> cdf(static_cast<std::size_t>(H) + 1);  // edges of the window's pixels

  // A beam of any width: b_inv = 1 / (sqrt(2) sigma), b_area = sqrt(2 pi) sigma, b_half = the window half-width.
  auto add_beam_sigma = [&](int x, double centre, double amplitude, double b_inv, double b_area, double b_half) {
    const int y0 = std::max(0, static_cast<int>(std::floor(centre - b_half)));
    const int y1 = std::min(H - 1, static_cast<int>(std::ceil(centre + b_half)));
    if (y1 < y0) return;
    // Edges y - 0.5 for y = y0 .. y1 + 1; integral over [y-0.5, y+0.5] of
    // exp(-(r - centre)^2 / (2 sigma^2)) = area * (Phi(b) - Phi(a)).
    for (int y = y0; y <= y1 + 1; ++y) cdf[y - y0] = 0.5 * fast_erf((y - 0.5 - centre) * b_inv);
    const double scale = amplitude * b_area;
    for (int y = y0; y <= y1; ++y) {
      double v = scale * (cdf[y - y0 + 1] - cdf[y - y0]);
      const std::size_t idx = static_cast<std::size_t>(y) * W + x;
      if (c.speckle > 0.0) v *= 1.0 + c.speckle * (2.0 * unit(mix64(speckle_key + kGolden * idx)) - 1.0);
      buf[idx] += static_cast<float>(v);
    }
  };
  auto add_beam = [&](int x, double centre, double amplitude) { add_beam_sigma(x, centre, amplitude, inv, area, half_window); };
  // Glow: exponential tails around the stripe, full strength below it, 35 % above.
  auto add_glow = [&](int x, double centre, double amplitude) {
    const double reach = 8.0 * c.glow_width;
    const int y0 = std::max(0, static_cast<int>(std::floor(centre - reach)));
    const int y1 = std::min(H - 1, static_cast<int>(std::ceil(centre + reach)));
    for (int y = y0; y <= y1; ++y) {
      const double d = y - centre;
      const double side = d >= 0.0 ? 1.0 : 0.35;
      buf[static_cast<std::size_t>(y) * W + x] += static_cast<float>(c.glow * amplitude * side * std::exp(-std::abs(d) / c.glow_width));
    }
  };
  const double ph3 = unit(hash3(c.seed, kSaltHard, 2));
  const int dim_cell = cell_size(W, 16, 512, 7);

  for (int x = 0; x < W; ++x) {
    const double t = truth_of(c, frame, x);
    if (std::isnan(t)) continue;
    // Smooth power variation along the line, in [1 - v, 1 + v].
    const double u = (x + 0.5) / W;
    const double g = 0.6 * std::sin(2.0 * kPi * (1.3 * u + ph1)) + 0.4 * std::sin(2.0 * kPi * (3.7 * u + ph2));
    double amplitude = c.peak * (1.0 + c.peak_variation * g);
    if (c.dim_segments > 0.0 && in_stretch(c.seed, kSaltDim, frame / kDimRegionFrames, dim_cell, c.dim_segments, x))
      amplitude *= c.dim_factor;
    if (c.texture > 0.0) amplitude *= albedo(c, x, t, frame);
    if (c.beam_sigma_variation > 0.0) {
      const double s = sigma * (1.0 + c.beam_sigma_variation * std::sin(2.0 * kPi * (2.1 * u + static_cast<double>(frame % kSurfacePeriod) / 257.0 + ph3)));
      add_beam_sigma(x, t, amplitude, 1.0 / (std::sqrt(2.0) * s), std::sqrt(2.0 * kPi) * s, kWindowSigmas * s);
    } else {
      add_beam(x, t, amplitude);
    }
    if (c.glow > 0.0) add_glow(x, t, amplitude);
    const double r = reflection_of(c, frame, x, t);
    if (!std::isnan(r)) add_beam(x, r, amplitude * c.reflection_strength);
    const double s2 = second_of(c, frame, x, t);
    if (!std::isnan(s2)) add_beam(x, s2, amplitude * c.second_stripe_strength);
  }

  // 3. Quantise.
  if (c.format == PixelFormat::Mono8) {
    auto* out = reinterpret_cast<std::uint8_t*>(dst);
    for (std::size_t i = 0; i < n; ++i) {
      const float v = std::clamp(buf[i], 0.0f, 255.0f);
      out[i] = static_cast<std::uint8_t>(static_cast<int>(v + 0.5f));
    }
  } else if (c.bits != 0 && c.bits != 16) {  // 9..15 significant bits: the 8-bit scale times 2^(bits - 8)
    auto* out = reinterpret_cast<std::uint16_t*>(dst);
    const float scale = static_cast<float>(1u << (c.bits - 8)), top = static_cast<float>((1u << c.bits) - 1u);
    for (std::size_t i = 0; i < n; ++i) {
      const float v = std::clamp(buf[i] * scale, 0.0f, top);
      out[i] = static_cast<std::uint16_t>(static_cast<int>(v + 0.5f));
    }
  } else {
    auto* out = reinterpret_cast<std::uint16_t*>(dst);
    for (std::size_t i = 0; i < n; ++i) {
      const float v = std::clamp(buf[i] * 256.0f, 0.0f, 65535.0f);
      out[i] = static_cast<std::uint16_t>(static_cast<int>(v + 0.5f));
    }
  }
}

}  // namespace stripeline
