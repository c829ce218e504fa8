// Tracing a frame's stripe into pieces and corners. See stripe_trace.h.
#include "calibration/stripe_trace.h"

#include <algorithm>
#include <cmath>

namespace stripeline::fit_detail {

namespace {

constexpr double kPi = 3.14159265358979323846;

ImageLine fit_line(const std::vector<double>& u, const std::vector<double>& v, std::size_t first, std::size_t last) {
  ImageLine l;
  l.first = first;
  l.last = last;
  // Leave out the points next to the corners: the blur rounds them.
  std::size_t a = first, b = last;
  if (last - first + 1 >= 16) {
    a += 3;
    b -= 3;
  }
  const double n = static_cast<double>(b - a + 1);
  double mu = 0, mv = 0;
  for (std::size_t i = a; i <= b; ++i) {
    mu += u[i];
    mv += v[i];
  }
  mu /= n;
  mv /= n;
  double suu = 0, suv = 0, svv = 0;
  for (std::size_t i = a; i <= b; ++i) {
    suu += (u[i] - mu) * (u[i] - mu);
    suv += (u[i] - mu) * (v[i] - mv);
    svv += (v[i] - mv) * (v[i] - mv);
  }
  const double angle = 0.5 * std::atan2(2.0 * suv, suu - svv);  // principal direction
  l.cu = mu;
  l.cv = mv;
  l.du = std::cos(angle);
  l.dv = std::sin(angle);
  if (l.du < 0) {
    l.du = -l.du;
    l.dv = -l.dv;
  }
  return l;
}

void douglas_peucker(const std::vector<double>& u, const std::vector<double>& v, std::size_t i0, std::size_t i1, double tol,
                     std::vector<std::size_t>& breaks) {
  if (i1 <= i0 + 1) return;
  const double du = u[i1] - u[i0], dv = v[i1] - v[i0], len = std::hypot(du, dv);
  double worst = 0;
  std::size_t at = i0;
  for (std::size_t i = i0 + 1; i < i1; ++i) {
    const double d = std::abs((u[i] - u[i0]) * dv - (v[i] - v[i0]) * du) / len;
    if (d > worst) {
      worst = d;
      at = i;
    }
  }
  if (worst <= tol) return;
  douglas_peucker(u, v, i0, at, tol, breaks);
  breaks.push_back(at);
  douglas_peucker(u, v, at, i1, tol, breaks);
}

double line_angle_deg(const ImageLine& a, const ImageLine& b) {
  const double c = std::clamp(a.du * b.du + a.dv * b.dv, -1.0, 1.0);
  return std::acos(c) * 180.0 / kPi;
}

}  // namespace

Trace trace_frame(const std::vector<double>& u, const std::vector<double>& v, const SensorRoi& roi, double edge_margin) {
  constexpr double kMaxGapColumns = 6.0, kMaxJumpPx = 6.0, kTolerancePx = 1.5, kMergeDeg = 4.0;
  constexpr std::size_t kMinRun = 20, kMinPiece = 16;  // shorter pieces are a rounded corner, not a segment
  Trace tr;
  std::size_t start = 0, longest = 0;
  std::size_t best_first = 0, best_last = 0;
  for (std::size_t i = 1; i <= u.size(); ++i) {
    const bool cut = i == u.size() || u[i] - u[i - 1] > kMaxGapColumns || std::abs(v[i] - v[i - 1]) > kMaxJumpPx;
    if (!cut) continue;
    const std::size_t first = start, last = i - 1;
    start = i;
    if (last + 1 - first < kMinRun) continue;
    ++tr.runs;
    if (last + 1 - first > longest) {
      longest = last + 1 - first;
      best_first = first;
      best_last = last;
    }
    std::vector<std::size_t> bp{first};
    douglas_peucker(u, v, first, last, kTolerancePx, bp);
    bp.push_back(last);
    std::vector<ImageLine> lines;
    for (std::size_t k = 0; k + 1 < bp.size(); ++k)
      if (bp[k + 1] - bp[k] + 1 >= kMinPiece) lines.push_back(fit_line(u, v, bp[k], bp[k + 1]));
    for (bool merged = true; merged;) {  // collinear neighbours are one piece
      merged = false;
      for (std::size_t k = 0; k + 1 < lines.size(); ++k)
        if (line_angle_deg(lines[k], lines[k + 1]) < kMergeDeg) {
          lines[k] = fit_line(u, v, lines[k].first, lines[k + 1].last);
          lines.erase(lines.begin() + static_cast<std::ptrdiff_t>(k) + 1);
          merged = true;
          break;
        }
    }
    for (std::size_t k = 0; k + 1 < lines.size(); ++k) {
      const ImageLine &a = lines[k], &b = lines[k + 1];
      const double cross = a.du * b.dv - a.dv * b.du;
      if (std::abs(cross) < 1e-6) continue;
      // a.c + s a.d = b.c + t b.d
      const double s = ((b.cu - a.cu) * b.dv - (b.cv - a.cv) * b.du) / cross;
      const double cu = a.cu + s * a.du, cv = a.cv + s * a.dv;
      if (cu < u[a.last] - 15.0 || cu > u[b.first] + 15.0) continue;  // not where the pieces meet
      tr.corners.push_back({cu, cv, cross, a, b});
    }
  }
  if (longest > 0) {
    tr.u_first = u[best_first];
    tr.v_first = v[best_first];
    tr.u_last = u[best_last];
    tr.v_last = v[best_last];
    const double m = 3.0 * edge_margin;
    bool rows_inside = true;
    for (std::size_t i = best_first; i <= best_last; ++i) rows_inside = rows_inside && v[i] > roi.y + m && v[i] < roi.y + roi.height - 1 - m;
    tr.whole = tr.runs == 1 && tr.u_first > roi.x + m && tr.u_last < roi.x + roi.width - 1 - m && rows_inside;
  }
  return tr;
}

}  // namespace stripeline::fit_detail
