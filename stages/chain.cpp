#include "stages/chain.h"

#include "kernels/cuda/warp_chain_limits.h"
#include "kernels/line_model_lanes.h"
#include "stages/cpu/cpu_kernels.h"

#include <tbb/task_arena.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "core/errors.h"
#include "core/fixed_point.h"
#include "stages/chain_keys.h"
#include "stages/factory.h"

namespace stripeline {

const char* to_string(ColumnMethod m) {
  switch (m) {
    case ColumnMethod::Cog: return "cog";
    case ColumnMethod::Max: return "max";
    case ColumnMethod::Window: return "window";
    case ColumnMethod::LocalMax: return "local-max";
    case ColumnMethod::All: return "all";
    case ColumnMethod::Adaptive: return "adaptive";
  }
  return "?";
}

const char* to_string(SubpixelEstimator e) {
  switch (e) {
    case SubpixelEstimator::Centroid: return "centroid";
    case SubpixelEstimator::Gauss: return "gauss";
    case SubpixelEstimator::Parabola: return "parabola";
    case SubpixelEstimator::Steger: return "steger";
  }
  return "?";
}

const char* to_string(SpotSelection s) {
  switch (s) {
    case SpotSelection::Strongest: return "strongest";
    case SpotSelection::Top: return "top";
    case SpotSelection::Bottom: return "bottom";
    case SpotSelection::All: return "all";
  }
  return "?";
}

ColumnMethod parse_method(const std::string& text) {
  for (auto m : {ColumnMethod::Cog, ColumnMethod::Max, ColumnMethod::Window, ColumnMethod::LocalMax, ColumnMethod::All, ColumnMethod::Adaptive})
    if (text == to_string(m)) return m;
  throw ConfigError(std::string(chain_keys::method) + " '" + text + "' is not known (expected adaptive, cog, max, window, local-max or all)");
}

SubpixelEstimator parse_estimator(const std::string& text) {
  for (auto e : {SubpixelEstimator::Centroid, SubpixelEstimator::Gauss, SubpixelEstimator::Parabola, SubpixelEstimator::Steger})
    if (text == to_string(e)) return e;
  throw ConfigError(std::string(chain_keys::estimator) + " '" + text + "' is not known (expected centroid, gauss, parabola or steger)");
}

SpotSelection parse_selection(const std::string& text) {
  for (auto s : {SpotSelection::Strongest, SpotSelection::Top, SpotSelection::Bottom, SpotSelection::All})
    if (text == to_string(s)) return s;
  throw ConfigError(std::string(chain_keys::selection) + " '" + text + "' is not known (expected strongest, top, bottom or all)");
}

kernels::GaussianTaps chain_blur_taps(const ChainConfig& c) {
  kernels::GaussianTaps taps = kernels::make_gaussian_taps(c.blur_size, c.blur_sigma);
  taps.across = c.blur_across;
  return taps;
}

bool line_model_runs(const ChainConfig& c) {
  return c.line_model.enabled && c.column.method == ColumnMethod::Adaptive && c.column.selection == SpotSelection::Strongest;
}

int output_slots(const ChainConfig& c, int frame_height) {
  if (line_model_runs(c)) return 1;  // the chosen candidate
  switch (c.column.method) {
    case ColumnMethod::LocalMax:
    case ColumnMethod::Adaptive: return c.column.selection == SpotSelection::All ? c.max_peaks : 1;
    case ColumnMethod::All: return c.max_points > 0 ? (c.max_points < frame_height ? c.max_points : frame_height) : frame_height;
    default: return 1;
  }
}

std::uint32_t threshold_stage_level(const ChainConfig& c, const kernels::ColumnParams& p) {
  return c.threshold_stage && p.method != ColumnMethod::Adaptive ? p.threshold : 0u;
}

namespace {
[[noreturn]] void bad(const std::string& key, long long value, const std::string& expected) {
  throw ConfigError(key + " = " + std::to_string(value) + " is out of range (expected " + expected + ")");
}

[[noreturn]] void bad_number(const std::string& key, double value, const std::string& expected) {
  std::string text = std::to_string(value);
  while (text.find('.') != std::string::npos && (text.back() == '0' || text.back() == '.')) {
    const bool dot = text.back() == '.';
    text.pop_back();
    if (dot) break;
  }
  throw ConfigError(key + " = " + text + " is out of range (expected " + expected + ")");
}

// Derivative-of-Gaussian taps for the steger estimator: dog[j] ~ j exp(-j^2 / 2 sigma^2),
// j = 1..ceil(3 sigma) (at most 7), scaled so that a ramp of slope 1 answers 1
// after the kernel's >> 12 (2 sum j dog[j] = 4096).
void set_derivative_taps(double sigma, kernels::ColumnParams& p) {
  int radius = static_cast<int>(std::ceil(3.0 * sigma));
  if (radius > kernels::kMaxDerivativeRadius) radius = kernels::kMaxDerivativeRadius;
  double norm = 0.0;
  for (int j = 1; j <= radius; ++j) norm += 2.0 * j * j * std::exp(-0.5 * j * j / (sigma * sigma));
  p.dog_radius = radius;
  for (int j = 0; j <= kernels::kMaxDerivativeRadius; ++j)
    p.dog[j] = j >= 1 && j <= radius ? static_cast<std::int32_t>(std::lround(4096.0 * j * std::exp(-0.5 * j * j / (sigma * sigma)) / norm)) : 0;
}
}  // namespace

kernels::ColumnParams validate_chain(const ChainConfig& c, const BatchLayout& layout) {
  if (layout.width < 1 || layout.width > kMaxWidth) bad("width", layout.width, "1.." + std::to_string(kMaxWidth));
  if (layout.frame_height < 1 || layout.frame_height > kMaxFrameHeight)
    bad("frame_height", layout.frame_height, "1.." + std::to_string(kMaxFrameHeight));
  if (layout.frames < 1 || layout.frames > kMaxBatchFrames) bad(chain_keys::batch_frames, layout.frames, "1.." + std::to_string(kMaxBatchFrames));
  chain_blur_taps(c);  // validates size and sigma
  const std::uint32_t max_value = layout.format == PixelFormat::Mono8 ? 255u : 65535u;
  kernels::ColumnParams p = c.column;
  if (p.threshold < 1 || p.threshold > max_value) bad(chain_keys::threshold, p.threshold, "1.." + std::to_string(max_value) + " for " + to_string(layout.format));
  if (p.min_peak > max_value) bad(chain_keys::min_peak, p.min_peak, "0.." + std::to_string(max_value));
  // Parameters are checked for range whatever the method; relations to the
  // frame geometry only where the method uses them.
  if (p.min_width < 1 || p.min_width > kMaxFrameHeight) bad(chain_keys::min_width, p.min_width, "1..4096");
  if (p.max_width < 0 || (p.max_width > 0 && p.max_width < p.min_width)) bad(chain_keys::max_width, p.max_width, "0 (no limit) or >= min_width");
  if (p.method == ColumnMethod::Cog && p.min_width > layout.frame_height)
    bad(chain_keys::min_width, p.min_width, "at most the frame height " + std::to_string(layout.frame_height));
  if (p.window < 1 || p.window > kMaxFrameHeight) bad(chain_keys::window, p.window, "1..4096 (larger than the frame means the whole frame)");
  if (p.neighbours < 1 || p.neighbours > 64) bad(chain_keys::neighbours, p.neighbours, "1..64");
  if (c.max_peaks < 1 || c.max_peaks > 64) bad(chain_keys::max_peaks, c.max_peaks, "1..64");
  if (p.method == ColumnMethod::Adaptive && p.selection == SpotSelection::All && c.max_peaks > kernels::kMaxAdaptivePeaks)
    bad(chain_keys::max_peaks, c.max_peaks, "1..16 with method adaptive and selection all");
  if (c.max_points < 0 || c.max_points > kMaxFrameHeight) bad(chain_keys::max_points, c.max_points, "0 (frame height)..4096");

  // adaptive
  const AdaptiveConfig& a = c.adaptive;
  const int format_bits = layout.format == PixelFormat::Mono8 ? 8 : 16;
  const int bits = a.pixel_bits == 0 ? format_bits : a.pixel_bits;
  if (a.pixel_bits != 0 && (a.pixel_bits < 8 || a.pixel_bits > format_bits || (format_bits == 8 && a.pixel_bits != 8)))
    bad(chain_keys::pixel_bits, a.pixel_bits, format_bits == 8 ? "0 or 8 for Mono8" : "0 (from the camera, the file or the data) or 8..16 for Mono16");
  if (!(a.min_contrast >= 0.0 && a.min_contrast <= 255.0)) bad_number(chain_keys::min_contrast, a.min_contrast, "0..255, in 8-bit units");
  if (!(a.level > 0.0 && a.level < 1.0)) bad_number(chain_keys::contrast_level, a.level, "more than 0 and less than 1");
  if (!(a.centroid_level >= 0.0 && a.centroid_level < 1.0)) bad_number(chain_keys::centroid_level, a.centroid_level, "0 or more and less than 1");
  if (!(a.noise_factor >= 0.0 && a.noise_factor <= 64.0)) bad_number(chain_keys::noise_factor, a.noise_factor, "0 (off)..64");
  if (a.max_width < 1 || a.max_width > 256) bad(chain_keys::stripe_max_width, a.max_width, "1..256 pixels");
  if (!(a.steger_sigma >= 0.5 && a.steger_sigma <= 2.3)) bad_number(chain_keys::steger_sigma, a.steger_sigma, "0.5..2.3 pixels");
  p.estimator = a.estimator;
  const double scale = std::ldexp(1.0, bits - 8);
  p.min_contrast = static_cast<std::uint32_t>(std::llround(a.min_contrast * scale));
  if (p.min_contrast < 1) p.min_contrast = 1;
  p.level_q8 = static_cast<std::uint32_t>(std::lround(a.level * 256.0));
  if (p.level_q8 < 1) p.level_q8 = 1;
  if (p.level_q8 > 255) p.level_q8 = 255;
  p.centroid_level_q8 = static_cast<std::uint32_t>(std::lround(a.centroid_level * 256.0));
  if (p.centroid_level_q8 > 255) p.centroid_level_q8 = 255;
  p.noise_q4 = static_cast<std::uint32_t>(std::lround(a.noise_factor * 16.0));
  p.stripe_max_width = a.max_width;
  p.saturation = (1u << bits) - 1u;
  set_derivative_taps(a.steger_sigma, p);

  p.slots = output_slots(c, layout.frame_height);
  validate_line_model(c, p);  // its keys too, before any frame is read
  return p;
}

kernels::LineModelParams validate_line_model(const ChainConfig& c, const kernels::ColumnParams& p) {
  const LineModelConfig& m = c.line_model;
  namespace k = chain_keys;
  if (m.candidates < 2 || m.candidates > kernels::kMaxLineCandidates)
    bad(k::line_candidates, m.candidates, "2.." + std::to_string(kernels::kMaxLineCandidates));
  if (!(m.step >= 0.0 && m.step <= 64.0)) bad_number(k::line_step, m.step, "0..64 rows per column");
  if (!(m.jump_cost >= 0.0 && m.jump_cost <= 255.0)) bad_number(k::line_jump_cost, m.jump_cost, "0..255 levels per row");
  if (!(m.width_cost >= 0.0 && m.width_cost <= 255.0)) bad_number(k::line_width_cost, m.width_cost, "0..255 levels per pixel");
  if (!(m.intensity_cost >= 0.0 && m.intensity_cost <= 16.0)) bad_number(k::line_intensity_cost, m.intensity_cost, "0..16 levels per level");
  if (!(m.segment_cost >= 0.0 && m.segment_cost <= 65535.0)) bad_number(k::line_segment_cost, m.segment_cost, "0..65535 levels");
  if (m.min_length < 1 || m.min_length > kMaxFrameHeight) bad(k::line_min_length, m.min_length, "1..4096 columns");
  if (m.line_width < 1 || m.line_width > 256) bad(k::line_width, m.line_width, "1..256 pixels");
  kernels::LineModelParams l;
  if (!line_model_runs(c)) return l;  // candidates 0: off (or another method or selection)
  int bits = 8;
  while (bits < 16 && (p.saturation >> bits) != 0) ++bits;  // saturation = 2^bits - 1
  l.candidates = m.candidates;
  l.strength_shift = bits - 8;
  l.line_width = m.line_width;
  l.step_q8 = static_cast<std::int32_t>(std::lround(m.step * kPositionOne));
  l.jump_cost_q8 = static_cast<std::int32_t>(std::lround(m.jump_cost * 256.0));
  l.width_cost_q8 = static_cast<std::int32_t>(std::lround(m.width_cost * 256.0));
  l.intensity_cost_q8 = static_cast<std::int32_t>(std::lround(m.intensity_cost * 256.0));
  l.segment_cost_q8 = static_cast<std::int32_t>(std::lround(m.segment_cost * 256.0));
  l.min_length = m.min_length;
  return l;
}

kernels::ColumnParams extraction_params(const kernels::ColumnParams& params, const kernels::LineModelParams& line) {
  kernels::ColumnParams e = params;
  if (line.candidates > 0) {
    e.selection = SpotSelection::All;
    e.slots = line.candidates;
  }
  return e;
}

kernels::NeighbourCheckParams validate_neighbour_check(const ChainConfig& c, const kernels::ColumnParams& p) {
  const NeighbourCheckConfig& n = c.neighbour_check;
  if (n.columns < 0 || n.columns > kernels::kMaxNeighbourColumns)
    bad(chain_keys::neighbour_columns, n.columns, "0 (off).." + std::to_string(kernels::kMaxNeighbourColumns));
  if (!(n.step > 0.0 && n.step <= 64.0)) bad_number(chain_keys::neighbour_step, n.step, "more than 0 and at most 64 rows per column");
  if (n.columns > 0 && p.slots != 1)
    bad(chain_keys::neighbour_columns, n.columns, "0 with " + std::to_string(p.slots) + " slots per column (the check needs single-peak profiles: not selection or method all)");
  kernels::NeighbourCheckParams k;
  k.columns = n.columns;
  k.step_q8 = static_cast<std::int32_t>(std::lround(n.step * kPositionOne));
  if (k.step_q8 < 1) k.step_q8 = 1;
  return k;
}

std::unique_ptr<BatchProcessor> make_processor(Backend backend, const BatchLayout& layout, const ChainConfig& config) {
  return backend_factory(backend).processor(layout, config);
}

LaneMemory lane_memory(Backend backend, const BatchLayout& l, const ChainConfig& config) {
  const kernels::ColumnParams p = validate_chain(config, l);
  const kernels::LineModelParams line = validate_line_model(config, p);
  const int k = line.candidates;  // 0: the line model is off
  const bool xyz = config.calibration != nullptr;
  LaneMemory m;
  if (backend == Backend::Cuda) {  // stages/cuda/cuda_stages.cpp, CudaProcessorImpl's constructor
    m.device = l.bytes() + ProfileLayout::make(l.width, l.frames, p.slots, xyz).bytes + l.bytes();  // pixels, profiles, per-stage scratch
    if (k > 0) m.device += ProfileLayout::make(l.width, l.frames, k).bytes + kernels::line_model_device_scratch_bytes(k, l.width, l.frames);
    // The staging ahead: the warp chain's frames.
    if (k > 0)
      m.device += kernels::line_stage_ahead(line, l.width, nullptr).frame_bytes * static_cast<std::size_t>(std::min(l.frames, kernels::cuda::kWarpChainMaxFrames));
    if (config.neighbour_check.columns > 0) m.device += static_cast<std::size_t>(l.width) * l.frames;
    return m;
  }
  // stages/cpu/cpu_stages.cpp: the candidates, and each worker thread's
  // scratch (as that file sizes it).
  const std::size_t per_thread = cpu::thread_scratch_bytes(l, k);
  if (k > 0) m.host += ProfileLayout::make(l.width, l.frames, k).bytes;
  m.host += per_thread * static_cast<std::size_t>(tbb::this_task_arena::max_concurrency());
  return m;
}

}  // namespace stripeline
