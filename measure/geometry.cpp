#include "measure/geometry.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace stripeline::measure {

void PlaneFit::add(double x, double y, double z) {
  if (n_ == 0) x0_ = x, y0_ = y;
  const double v[3] = {1.0, x - x0_, y - y0_};
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) s_[i][j] += v[i] * v[j];
    t_[i] += v[i] * z;
  }
  ++n_;
}

bool PlaneFit::solve() {
  ok_ = false;
  if (n_ == 0) return false;
  c0_ = t_[0] / s_[0][0];
  c1_ = c2_ = 0.0;
  if (n_ < 3) return false;
  // Gaussian elimination with partial pivoting on the 3x3 normal equations.
  double a[3][4];
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) a[i][j] = s_[i][j];
    a[i][3] = t_[i];
  }
  for (int c = 0; c < 3; ++c) {
    int p = c;
    for (int r = c + 1; r < 3; ++r)
      if (std::abs(a[r][c]) > std::abs(a[p][c])) p = r;
    if (!(std::abs(a[p][c]) > 1e-12 * (s_[0][0] + s_[1][1] + s_[2][2]))) {
      // Degenerate in Y (one row) or X: fit Z = c0 + c1 (X - x0) alone if possible.
      const double det = s_[0][0] * s_[1][1] - s_[0][1] * s_[0][1];
      if (std::abs(det) > 1e-12 * s_[0][0] * s_[1][1]) {
        c0_ = (t_[0] * s_[1][1] - t_[1] * s_[0][1]) / det;
        c1_ = (s_[0][0] * t_[1] - s_[0][1] * t_[0]) / det;
      }
      return false;
    }
    for (int j = 0; j < 4; ++j) std::swap(a[c][j], a[p][j]);
    for (int r = 0; r < 3; ++r) {
      if (r == c) continue;
      const double f = a[r][c] / a[c][c];
      for (int j = c; j < 4; ++j) a[r][j] -= f * a[c][j];
    }
  }
  c0_ = a[0][3] / a[0][0];
  c1_ = a[1][3] / a[1][1];
  c2_ = a[2][3] / a[2][2];
  ok_ = true;
  return true;
}

double mean_spacing(const float* x, long begin, long end) { return kernels::mean_spacing(x, begin, end); }

double first_crossing(const float* x, const double* h, long begin, long end, long step, double level, bool rising, const Joining& jn) {
  for (long i = begin; i != end && i + step != end; i += step) {
    const long j = i + step;
    const double dx = std::abs(static_cast<double>(x[j]) - x[i]);
    if (dx > jn.max_spacing) continue;
    const bool below_i = h[i] < level, below_j = h[j] < level;
    if (!(rising ? (below_i && !below_j) : (!below_i && below_j))) continue;
    if (jn.hole(dx)) {  // a step half a spacing from the higher point, toward the lower one
      const long hi = h[i] >= h[j] ? i : j, lo = hi == i ? j : i;
      return x[hi] + (x[lo] > x[hi] ? 0.5 : -0.5) * jn.spacing;
    }
    const double t = (level - h[i]) / (h[j] - h[i]);
    return x[i] + t * (static_cast<double>(x[j]) - x[i]);
  }
  return std::numeric_limits<double>::quiet_NaN();
}

double ramp_slope(const float* x, const double* h, long begin, long end, long i) {
  return kernels::ramp_slope(x, [h](long k) { return h[k]; }, begin, end, i);
}

double positive_area(double f0, double f1, double dx, const Joining& j, double ramp) { return kernels::positive_area(f0, f1, dx, j, ramp); }

double positive_length(double f0, double f1, double dx, const Joining& j, double ramp) { return kernels::positive_length(f0, f1, dx, j, ramp); }

}  // namespace stripeline::measure
