#pragma once
// Rectified range maps (docs/calibration.md): one frame's calibrated points
// resampled onto a uniform X grid. Bin i covers X in
// [x_min + (i - 0.5) dx, x_min + (i + 0.5) dx), i = 0 .. bins-1 (bin centres
// x_min + i dx, bins = round((x_max - x_min) / dx) + 1). Per bin: the largest,
// smallest or mean Z of its points, or the Z of the point nearest its centre.
// Then runs of at most `fill` empty bins between two filled ones are filled
// by linear interpolation. NaN = no data. Host code; the arithmetic is plain
// so that a GPU version can share it.
#include <cmath>
#include <cstdint>
#include <string>

#include "core/errors.h"

namespace stripeline::kernels {

enum class RectifyRule { Max, Min, Mean, Nearest };

inline RectifyRule parse_rectify_rule(const std::string& s) {
  if (s == "max") return RectifyRule::Max;
  if (s == "min") return RectifyRule::Min;
  if (s == "mean") return RectifyRule::Mean;
  if (s == "nearest") return RectifyRule::Nearest;
  throw InputError("range-map rule '" + s + "' is not known (expected max, min, mean or nearest)");
}

// The rule's name, as parse_rectify_rule reads it (metadata, logs).
inline const char* rectify_rule_name(RectifyRule r) {
  switch (r) {
    case RectifyRule::Max: return "max";
    case RectifyRule::Min: return "min";
    case RectifyRule::Mean: return "mean";
    case RectifyRule::Nearest: return "nearest";
  }
  return "?";
}

struct RectifyGrid {
  double x_min = 0, x_max = 0, dx = 0;
  int fill = 0;  // largest gap (bins) filled by interpolation
  RectifyRule rule = RectifyRule::Max;

  int bins() const { return static_cast<int>(std::lround((x_max - x_min) / dx)) + 1; }
  // InputError unless dx > 0, x_max > x_min, at most 1,000,000 bins, fill >= 0.
  void validate() const {
    if (!(dx > 0) || !(x_max > x_min) || !std::isfinite(x_min) || !std::isfinite(x_max) || (x_max - x_min) / dx > 1e6 || fill < 0)
      throw InputError("range-map grid " + std::to_string(x_min) + ":" + std::to_string(x_max) + ":" + std::to_string(dx) +
                       " is not usable (expected X_MIN:X_MAX:DX in mm with X_MAX > X_MIN, DX > 0, at most 10^6 bins; fill >= 0)");
  }
};

// Scratch per bin for one row: accumulate(), then finish_row().
struct RectifyAccumulator {
  float* z;         // [bins] result
  float* key;       // [bins] sum (mean) or distance to the centre (nearest)
  std::uint32_t* n; // [bins] points

  void clear(int bins) const {
    for (int i = 0; i < bins; ++i) z[i] = NAN, key[i] = 0.0f, n[i] = 0;
  }
  // The bin X falls in, or -1 outside the grid.
  static int bin_of(const RectifyGrid& g, int bins, double x) {
    const double t = (x - g.x_min) / g.dx;
    if (!(t > -0.5) || !(t < bins - 0.5)) return -1;
    return static_cast<int>(std::floor(t + 0.5));
  }
  void add(const RectifyGrid& g, int bins, double x, double zv) const {
    const int i = bin_of(g, bins, x);
    if (i < 0) return;
    const double t = (x - g.x_min) / g.dx;
    const float v = static_cast<float>(zv);
    switch (g.rule) {
      case RectifyRule::Max: z[i] = n[i] == 0 || v > z[i] ? v : z[i]; break;
      case RectifyRule::Min: z[i] = n[i] == 0 || v < z[i] ? v : z[i]; break;
      case RectifyRule::Mean: key[i] += v; break;
      case RectifyRule::Nearest: {
        const float d = static_cast<float>(std::abs(t - i));
        if (n[i] == 0 || d < key[i]) z[i] = v, key[i] = d;
        break;
      }
    }
    ++n[i];
  }
  void finish(const RectifyGrid& g, int bins) const {
    if (g.rule == RectifyRule::Mean)
      for (int i = 0; i < bins; ++i) z[i] = n[i] ? key[i] / static_cast<float>(n[i]) : NAN;
    fill_gaps(z, bins, g.fill);
  }
  // Runs of at most `fill` NaN bins between two values, filled by linear interpolation.
  static void fill_gaps(float* z, int bins, int fill) {
    if (fill <= 0) return;
    int last = -1;  // last filled bin
    for (int i = 0; i < bins; ++i) {
      if (std::isnan(z[i])) continue;
      const int gap = i - last - 1;
      if (last >= 0 && gap > 0 && gap <= fill)
        for (int k = last + 1; k < i; ++k) z[k] = z[last] + (z[i] - z[last]) * static_cast<float>(k - last) / static_cast<float>(i - last);
      last = i;
    }
  }
};

// The documented 16-bit code of a Z in mm: 0 = no data, else
// clamp(round((Z - z_offset) / z_scale), 1, 65535); Z = z_offset + code * z_scale.
inline std::uint16_t range_code(float z, double z_offset, double z_scale) {
  if (std::isnan(z)) return 0;
  const double c = std::round((z - z_offset) / z_scale);
  return static_cast<std::uint16_t>(c < 1 ? 1 : c > 65535 ? 65535 : c);
}

}  // namespace stripeline::kernels
