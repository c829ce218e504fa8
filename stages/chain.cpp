#include "stages/chain.h"

#include <string>

#include "core/errors.h"
#include "core/fixed_point.h"
#include "stages/factory.h"

namespace stripeline {

const char* to_string(ColumnMethod m) {
  switch (m) {
    case ColumnMethod::Cog: return "cog";
    case ColumnMethod::Max: return "max";
    case ColumnMethod::Window: return "window";
    case ColumnMethod::LocalMax: return "local-max";
    case ColumnMethod::All: return "all";
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
  for (auto m : {ColumnMethod::Cog, ColumnMethod::Max, ColumnMethod::Window, ColumnMethod::LocalMax, ColumnMethod::All})
    if (text == to_string(m)) return m;
  throw ConfigError("method '" + text + "' is not known (expected cog, max, window, local-max or all)");
}

SpotSelection parse_selection(const std::string& text) {
  for (auto s : {SpotSelection::Strongest, SpotSelection::Top, SpotSelection::Bottom, SpotSelection::All})
    if (text == to_string(s)) return s;
  throw ConfigError("selection '" + text + "' is not known (expected strongest, top, bottom or all)");
}

int output_slots(const ChainConfig& c, int frame_height) {
  switch (c.column.method) {
    case ColumnMethod::LocalMax: return c.column.selection == SpotSelection::All ? c.max_peaks : 1;
    case ColumnMethod::All: return c.max_points > 0 ? (c.max_points < frame_height ? c.max_points : frame_height) : frame_height;
    default: return 1;
  }
}

namespace {
[[noreturn]] void bad(const std::string& key, long long value, const std::string& expected) {
  throw ConfigError(key + " = " + std::to_string(value) + " is out of range (expected " + expected + ")");
}
}  // namespace

kernels::ColumnParams validate_chain(const ChainConfig& c, const BatchLayout& layout) {
  if (layout.width < 1 || layout.width > kMaxWidth) bad("width", layout.width, "1.." + std::to_string(kMaxWidth));
  if (layout.frame_height < 1 || layout.frame_height > kMaxFrameHeight)
    bad("frame_height", layout.frame_height, "1.." + std::to_string(kMaxFrameHeight));
  if (layout.frames < 1 || layout.frames > kMaxBatchFrames) bad("batch_frames", layout.frames, "1.." + std::to_string(kMaxBatchFrames));
  kernels::make_gaussian_taps(c.blur_size, c.blur_sigma);  // validates size and sigma
  const std::uint32_t max_value = layout.format == PixelFormat::Mono8 ? 255u : 65535u;
  kernels::ColumnParams p = c.column;
  if (p.threshold < 1 || p.threshold > max_value) bad("threshold", p.threshold, "1.." + std::to_string(max_value) + " for " + to_string(layout.format));
  if (p.min_peak > max_value) bad("min_peak", p.min_peak, "0.." + std::to_string(max_value));
  // Parameters are checked for range whatever the method; relations to the
  // frame geometry only where the method uses them.
  if (p.min_width < 1 || p.min_width > kMaxFrameHeight) bad("min_width", p.min_width, "1..4096");
  if (p.max_width < 0 || (p.max_width > 0 && p.max_width < p.min_width)) bad("max_width", p.max_width, "0 (no limit) or >= min_width");
  if (p.method == ColumnMethod::Cog && p.min_width > layout.frame_height)
    bad("min_width", p.min_width, "at most the frame height " + std::to_string(layout.frame_height));
  if (p.window < 1 || p.window > kMaxFrameHeight) bad("window", p.window, "1..4096 (larger than the frame means the whole frame)");
  if (p.neighbours < 1 || p.neighbours > 64) bad("neighbours", p.neighbours, "1..64");
  if (c.max_peaks < 1 || c.max_peaks > 64) bad("max_peaks", c.max_peaks, "1..64");
  if (c.max_points < 0 || c.max_points > kMaxFrameHeight) bad("max_points", c.max_points, "0 (frame height)..4096");
  p.slots = output_slots(c, layout.frame_height);
  return p;
}

std::unique_ptr<BatchProcessor> make_processor(Backend backend, const BatchLayout& layout, const ChainConfig& config) {
  return backend_factory(backend).processor(layout, config);
}

}  // namespace stripeline
