#pragma once
// The volume and area of a row above a reference (docs/measure.md, `volume`
// and "Holes in a row"), one segment at a time, shared by the CPU tool
// (measure/tools.cpp) and the CUDA kernel (kernels/cuda/volume_kernels.cu):
// +, -, *, / in double only (the .cu is built with -fmad=false) and each
// segment's area rounded to fixed point (2^-32 mm^2) before it is summed, so
// that the sums do not depend on their order: both backends give the same bits.
#include <cmath>
#include <cstdint>
#include <limits>

#include "core/fixed_point.h"  // STRIPELINE_HD

namespace stripeline::kernels {

// How consecutive points of a row are joined: up to 1.5 x the row's mean
// spacing linearly; a wider hole, up to max_spacing, as a step (or, on a
// slope, the parabola of positive_area); farther apart not at all.
struct Joining {
  double spacing = 0.05;     // the row's mean point spacing
  double max_spacing = 2.0;
  STRIPELINE_HD bool hole(double dx) const { return dx > 1.5 * spacing; }
};

namespace volume_detail {
STRIPELINE_HD double max(double a, double b) { return a < b ? b : a; }
STRIPELINE_HD double min(double a, double b) { return b < a ? b : a; }
STRIPELINE_HD double abs(double a) { return a < 0 ? -a : a; }
STRIPELINE_HD double nan() { return std::numeric_limits<double>::quiet_NaN(); }
STRIPELINE_HD bool is_nan(double a) { return a != a; }

STRIPELINE_HD double linear_positive_area(double f0, double f1, double dx) {
  if (f0 >= 0 && f1 >= 0) return 0.5 * (f0 + f1) * dx;
  if (f0 <= 0 && f1 <= 0) return 0.0;
  const double pos = max(f0, f1);
  return 0.5 * pos * dx * pos / (abs(f0) + abs(f1));
}

STRIPELINE_HD double linear_positive_length(double f0, double f1, double dx) {
  if (f0 > 0 && f1 > 0) return dx;
  if (f0 <= 0 && f1 <= 0) return 0.0;
  return dx * max(f0, f1) / (abs(f0) + abs(f1));
}
}  // namespace volume_detail

// The mean spacing of x[begin, end) (0 with fewer than 2 points).
STRIPELINE_HD double mean_spacing(const float* x, long begin, long end) {
  if (end - begin < 2) return 0.0;
  return (static_cast<double>(x[end - 1]) - x[begin]) / static_cast<double>(end - begin - 1);
}

// The slope of the higher side of the hole between points i and i + 1 when
// that side slopes down into the hole (measure/geometry.h ramp_slope), NaN
// otherwise. h(k): the height of point k, for k in [begin, end).
template <class H>
STRIPELINE_HD double ramp_slope(const float* x, const H& h, long begin, long end, long i) {
  using namespace volume_detail;
  const long j = i + 1;
  if (j >= end || i < begin) return nan();
  const double dx = static_cast<double>(x[j]) - x[i];
  if (!(dx > 0)) return nan();
  const double hi_ = h(i), hj = h(j);
  const double chord = (hj - hi_) / dx;
  const bool left_high = hi_ >= hj;
  const long a = left_high ? i - 2 : j, b = left_high ? i : j + 2;  // the higher side's two points beyond the hole
  if (a < begin || b >= end) return nan();
  const double run = static_cast<double>(x[b]) - x[a];
  if (!(run > 0)) return nan();
  const double side = (h(b) - h(a)) / run;
  return side * chord > 0 && abs(side) >= 0.25 * abs(chord) ? abs(side) : nan();
}

// The integral over [0, dx] of max(f, 0), f the profile between f0 and f1
// (measure/geometry.h positive_area).
STRIPELINE_HD double positive_area(double f0, double f1, double dx, const Joining& j, double ramp) {
  using namespace volume_detail;
  if (!is_nan(ramp)) {
    const double hi = max(f0, f1), lo = min(f0, f1);
    const double parabola = dx * (2 * hi + lo) / 3 - ramp * dx * dx / 6;
    return lo >= 0 && parabola >= 0 ? parabola : linear_positive_area(f0, f1, dx);
  }
  if (!j.hole(dx)) return linear_positive_area(f0, f1, dx);
  const double hi = max(f0, f1), lo = min(f0, f1), reach = min(0.5 * j.spacing, dx);
  return max(hi, 0.0) * reach + max(lo, 0.0) * (dx - reach);
}

// The length over [0, dx] where f > 0 (measure/geometry.h positive_length).
STRIPELINE_HD double positive_length(double f0, double f1, double dx, const Joining& j, double ramp) {
  using namespace volume_detail;
  if (!is_nan(ramp) || !j.hole(dx)) return linear_positive_length(f0, f1, dx);
  const double hi = max(f0, f1), lo = min(f0, f1), reach = min(0.5 * j.spacing, dx);
  return (hi > 0 ? reach : 0.0) + (lo > 0 ? dx - reach : 0.0);
}

// One fixed-point unit of the sums: 2^-32 mm^2 (or px^2).
inline constexpr double kVolumeUnit = 4294967296.0;

STRIPELINE_HD std::int64_t to_volume_fixed(double a) { return llrint(a * kVolumeUnit); }

// The heights of a row's points above the reference Z = ref_a + ref_b X,
// sign -1 for below: h(k) = sign (z[k] - (ref_a + ref_b x[k])).
struct RowHeights {
  const float* x;
  const float* z;
  double ref_a, ref_b, sign;
  STRIPELINE_HD double operator()(long k) const { return sign * (static_cast<double>(z[k]) - (ref_a + ref_b * static_cast<double>(x[k]))); }
};

// The volume and area (both fixed point) of the segment between points i and
// i + 1 of a row whose region holds the points [begin, end): nothing when the
// points are more than max_spacing apart. `level`: the area's height.
STRIPELINE_HD void volume_segment(const float* x, const RowHeights& h, long begin, long end, long i, const Joining& j, double level,
                                  std::int64_t& volume, std::int64_t& area) {
  const double dx = static_cast<double>(x[i + 1]) - x[i];
  if (!(dx <= j.max_spacing)) return;
  const double h0 = h(i), h1 = h(i + 1);
  const double ramp = j.hole(dx) ? ramp_slope(x, h, begin, end, i) : volume_detail::nan();
  volume += to_volume_fixed(positive_area(h0, h1, dx, j, ramp));
  area += to_volume_fixed(positive_length(h0 - level, h1 - level, dx, j, ramp));
}

// What the volume tool sums, and where: the rows with Y in [y0, y1], their
// points with X in [x0, x1], heights sign (Z - (ref_a + ref_b X)), the area
// where the height exceeds `level`; max_spacing as the tool's.
struct VolumeQuery {
  double x0 = 0, x1 = 0, y0 = 0, y1 = 0;
  double ref_a = 0, ref_b = 0, sign = 1, level = 0, max_spacing = 2.0;
  bool valid() const { return x1 > x0 && y1 >= y0; }
};

// The sums before scaling (volume_value): volume and area in 2^-32 mm^2
// units (two's complement in uint64, as the device's atomics add), points.
struct VolumeSums {
  unsigned long long volume = 0, area = 0, points = 0;
  bool operator==(const VolumeSums&) const = default;
};

// The sums' values: volume (mm^3) and area (mm^2) over rows `row_pitch` apart.
inline double volume_value(unsigned long long sum, double row_pitch) {
  return static_cast<double>(static_cast<std::int64_t>(sum)) / kVolumeUnit * row_pitch;
}

}  // namespace stripeline::kernels
