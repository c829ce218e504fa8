#pragma once
// Plane fits and crossings for the measurement tools (docs/measure.md,
// "Definitions"). Host code, double precision.
#include <cstddef>
#include <limits>

#include "kernels/volume_ops.h"

namespace stripeline::measure {

// Least squares Z = c0 + c1 (X - x0) + c2 (Y - y0) over the points added
// (vertical residuals; centred at the first point for conditioning).
class PlaneFit {
 public:
  void add(double x, double y, double z);
  std::size_t count() const { return n_; }
  // Solves; false with fewer than 3 points or points on one line (then only
  // the mean Z, flat, is available: z_at returns it and ok() is false).
  bool solve();
  bool ok() const { return ok_; }
  double z_at(double x, double y) const { return c0_ + c1_ * (x - x0_) + c2_ * (y - y0_); }
  double slope_x() const { return c1_; }
  double slope_y() const { return c2_; }

 private:
  double x0_ = 0, y0_ = 0;
  double s_[3][3] = {{0, 0, 0}, {0, 0, 0}, {0, 0, 0}};
  double t_[3] = {0, 0, 0};
  std::size_t n_ = 0;
  double c0_ = 0, c1_ = 0, c2_ = 0;
  bool ok_ = false;
};

// The profile between two consecutive points (docs/measure.md, "Holes"):
// points up to 1.5 x the row's mean spacing apart are joined linearly; a
// wider hole (a laser shadow beside a step, a dropout) is a step: the higher
// point's height reaches `spacing` / 2 into the hole, the lower one's fills
// the rest (a shadow falls on the lower surface); points farther apart than
// max_spacing are not joined at all. Shared with the CUDA volume kernel
// (kernels/volume_ops.h).
using Joining = kernels::Joining;

// The mean spacing of x[begin, end) (0 with fewer than 2 points).
double mean_spacing(const float* x, long begin, long end);

// Where the profile (x[i], h[i]), i in [begin, end), first crosses `level`
// in the direction asked, scanning from begin toward end (step +1 or -1):
// rising = from below to at-or-above. NaN when none.
double first_crossing(const float* x, const double* h, long begin, long end, long step, double level, bool rising, const Joining& j);

// The integral over [0, dx] of max(f, 0) and the length where f > 0, f
// being the profile between f0 (at 0) and f1 (at dx).
// `ramp`: the slope of the higher side of a hole on a slope (ramp_slope),
// NaN for any other hole. Such a hole is filled by the parabola through its
// two sides that leaves the higher one with that side's slope: the area is
// dx (2 hi + lo) / 3 - ramp dx^2 / 6 (when hi, lo >= 0; else the chord's);
// its length above 0 is the chord's.
double positive_area(double f0, double f1, double dx, const Joining& j, double ramp = std::numeric_limits<double>::quiet_NaN());
double positive_length(double f0, double f1, double dx, const Joining& j, double ramp = std::numeric_limits<double>::quiet_NaN());

// A hole between points i and i + 1 of the heights h[begin, end) whose
// higher side is itself a slope going down into the hole (the slope over that
// side's two points beyond it has the chord's sign and at least a quarter of
// its size): the unseen stretch of a curved or slanted surface (a ball's far
// slope facing away from the camera), not a shadow beside a step (whose
// higher side is a flat top). Returns that side's slope's magnitude, NaN for
// any other hole (docs/measure.md, "Holes in a row").
double ramp_slope(const float* x, const double* h, long begin, long end, long i);

}  // namespace stripeline::measure
