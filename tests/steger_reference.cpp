// Steger's ridge detector in double precision: the tests' independent
// reference for real images (see steger_reference.h).
#include "steger_reference.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace stripeline::test {

namespace {

constexpr double kPi = 3.14159265358979323846;

// Pixel-integrated Gaussian kernels at scale sigma, taps j = -r..r, applied as
// out(y) = sum_j k[j] in(y - j):
//   smooth: the Gaussian's integral over [j - 1/2, j + 1/2]
//   first:  phi(j + 1/2) - phi(j - 1/2)     (derivative of the smoothed signal)
//   second: phi'(j + 1/2) - phi'(j - 1/2)
struct Kernels {
  int radius = 0;
  std::vector<double> smooth, first, second;  // index j + radius
};

Kernels make_kernels(double sigma) {
  Kernels k;
  k.radius = static_cast<int>(std::ceil(4.0 * sigma)) + 1;
  const int n = 2 * k.radius + 1;
  k.smooth.resize(n);
  k.first.resize(n);
  k.second.resize(n);
  auto phi = [sigma](double x) { return std::exp(-0.5 * x * x / (sigma * sigma)) / (std::sqrt(2.0 * kPi) * sigma); };
  auto dphi = [sigma, phi](double x) { return -x / (sigma * sigma) * phi(x); };
  auto cdf = [sigma](double x) { return 0.5 * (1.0 + std::erf(x / (std::sqrt(2.0) * sigma))); };
  for (int j = -k.radius; j <= k.radius; ++j) {
    k.smooth[j + k.radius] = cdf(j + 0.5) - cdf(j - 0.5);
    k.first[j + k.radius] = phi(j + 0.5) - phi(j - 0.5);
    k.second[j + k.radius] = dphi(j + 0.5) - dphi(j - 0.5);
  }
  return k;
}

// Separable convolution with replicated borders: kx along rows, ky along columns.
std::vector<double> convolve(const std::vector<double>& in, int w, int h, const std::vector<double>& kx, const std::vector<double>& ky,
                             int r) {
  std::vector<double> mid(in.size()), out(in.size());
  auto clampi = [](int i, int n) { return i < 0 ? 0 : (i >= n ? n - 1 : i); };
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      double a = 0.0;
      for (int j = -r; j <= r; ++j) a += kx[j + r] * in[static_cast<std::size_t>(y) * w + clampi(x - j, w)];
      mid[static_cast<std::size_t>(y) * w + x] = a;
    }
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      double a = 0.0;
      for (int j = -r; j <= r; ++j) a += ky[j + r] * mid[static_cast<std::size_t>(clampi(y - j, h)) * w + x];
      out[static_cast<std::size_t>(y) * w + x] = a;
    }
  return out;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  const std::size_t m = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(m), v.end());
  const double hi = v[m];
  if (v.size() % 2) return hi;
  const double lo = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(m));
  return 0.5 * (lo + hi);
}

}  // namespace

std::vector<double> steger_centres(const std::vector<double>& img, int w, int h, const StegerOptions& o) {
  const Kernels k = make_kernels(o.sigma);
  const int r = k.radius;
  // Partial derivatives of the smoothed image (x along a row, y down a column).
  const auto rx = convolve(img, w, h, k.first, k.smooth, r);
  const auto ry = convolve(img, w, h, k.smooth, k.first, r);
  const auto rxx = convolve(img, w, h, k.second, k.smooth, r);
  const auto ryy = convolve(img, w, h, k.smooth, k.second, r);
  const auto rxy = convolve(img, w, h, k.first, k.first, r);

  std::vector<double> centre(static_cast<std::size_t>(w), std::numeric_limits<double>::quiet_NaN());
  std::vector<double> column(static_cast<std::size_t>(h));
  struct RidgePoint {
    double row, strength;
  };
  std::vector<std::vector<RidgePoint>> weak(static_cast<std::size_t>(w));  // per column: points between the thresholds
  for (int x = 0; x < w; ++x) {
    std::vector<RidgePoint> points;
    double best_strength = 0.0, best_row = std::numeric_limits<double>::quiet_NaN();
    for (int y = 0; y < h; ++y) {
      const std::size_t i = static_cast<std::size_t>(y) * w + x;
      column[static_cast<std::size_t>(y)] = -ryy[i];
      // Hessian eigen-decomposition: the most negative eigenvalue and its direction.
      const double a = rxx[i], b = rxy[i], c = ryy[i];
      const double mean = 0.5 * (a + c), root = std::sqrt(0.25 * (a - c) * (a - c) + b * b);
      const double lambda = mean - root, other = mean + root;
      if (!(lambda < 0.0) || std::abs(lambda) < std::abs(other)) continue;
      double nx, ny;
      if (std::abs(b) > 1e-12) {
        nx = b;
        ny = lambda - a;
      } else if (a < c) {  // diagonal Hessian: the smaller entry's axis
        nx = 1.0;
        ny = 0.0;
      } else {
        nx = 0.0;
        ny = 1.0;
      }
      const double norm = std::hypot(nx, ny);
      nx /= norm;
      ny /= norm;
      const double t = -(rx[i] * nx + ry[i] * ny) / lambda;
      if (std::abs(t * nx) > 0.5 || std::abs(t * ny) > 0.5) continue;
      if (std::abs(ny) < 0.5) continue;  // steeper than 60 degrees: no centre on this column
      const double strength = -lambda;
      points.push_back({y + t / ny, strength});
      if (strength > best_strength) {
        best_strength = strength;
        best_row = y + t / ny;
      }
    }
    // The column's noise of -r_yy, robustly.
    const double med = median(column);
    std::vector<double> dev(column.size());
    for (std::size_t j = 0; j < column.size(); ++j) dev[j] = std::abs(column[j] - med);
    const double noise = 1.4826 * median(dev);
    if (!std::isnan(best_row) && best_strength >= o.min_strength && best_strength >= o.min_strength_noise * noise) {
      centre[static_cast<std::size_t>(x)] = best_row;  // above the upper threshold: a line point by itself
      continue;
    }
    for (const RidgePoint& p : points)  // below it: line points only if linked
      if (p.strength >= o.min_strength && p.strength >= o.link_strength_noise * noise) weak[static_cast<std::size_t>(x)].push_back(p);
  }
  // Hysteresis with linking, as in Steger's detector: a column without a line
  // point takes its strongest weak point within link_rows of a neighbour
  // column's line point; grown until stable.
  for (bool grew = true; grew;) {
    grew = false;
    for (int x = 0; x < w; ++x) {
      const auto i = static_cast<std::size_t>(x);
      if (!std::isnan(centre[i])) continue;
      double best = 0.0, row = std::numeric_limits<double>::quiet_NaN();
      for (int dx : {-1, 1}) {
        const int n = x + dx;
        if (n < 0 || n >= w || std::isnan(centre[static_cast<std::size_t>(n)])) continue;
        for (const RidgePoint& p : weak[i])
          if (std::abs(centre[static_cast<std::size_t>(n)] - p.row) <= o.link_rows && p.strength > best) {
            best = p.strength;
            row = p.row;
          }
      }
      if (!std::isnan(row)) {
        centre[i] = row;
        grew = true;
      }
    }
  }
  return centre;
}

ReferenceScore score_against_reference(const std::vector<double>& got, const std::vector<double>& ref) {
  ReferenceScore s;
  s.columns = static_cast<int>(std::min(got.size(), ref.size()));
  std::vector<double> distances;
  for (int x = 0; x < s.columns; ++x) {
    const bool g = !std::isnan(got[x]), r = !std::isnan(ref[x]);
    s.reference += r;
    s.detected += g;
    if (g && !r) ++s.extra;
    if (!(g && r)) continue;
    ++s.both;
    const double d = std::abs(got[x] - ref[x]);
    distances.push_back(d);
    s.over_3px += d > 3.0;
  }
  s.median = median(distances);
  return s;
}

}  // namespace stripeline::test
