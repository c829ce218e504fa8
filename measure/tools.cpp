#include "measure/tools.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "measure/geometry.h"

namespace stripeline::measure {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// A region resolved on the part: absolute X and Y ranges.
struct Area {
  double x0 = kNaN, x1 = kNaN, y0 = -kInf, y1 = kInf;
  bool valid() const { return x1 > x0 && y1 >= y0; }
};

Area resolve(const Region& r, const Part& p, const std::vector<ToolResult>& done) {
  Area a;
  if (!r.given) {  // the whole part
    a.x0 = p.box.x_min, a.x1 = p.box.x_max;
    return a;
  }
  double ox = 0.0, oy = p.y_start();
  if (r.anchor == "part") {
    ox = p.box.x_min;
  } else if (r.anchor == "scan") {
    oy = 0.0;
  } else {
    ox = kNaN;
    for (const auto& t : done)
      if (t.name == r.anchor) ox = t.value("x");
  }
  a.x0 = ox + r.x0, a.x1 = ox + r.x1;
  a.y0 = oy + r.y0, a.y1 = oy + r.y1;
  return a;
}

// The range [begin, end) of a row's points with X in [x0, x1].
std::pair<long, long> span(const MeasureRow& row, double x0, double x1) {
  const auto b = std::lower_bound(row.x.begin(), row.x.end(), x0, [](float v, double x) { return v < x; });
  const auto e = std::upper_bound(b, row.x.end(), x1, [](double x, float v) { return x < v; });
  return {static_cast<long>(b - row.x.begin()), static_cast<long>(e - row.x.begin())};
}

Joining joining(const ToolSpec& t, const MeasureRow& row, long b, long e) {
  Joining j;
  j.spacing = mean_spacing(row.x.data(), b, e);
  j.max_spacing = t.max_spacing;
  return j;
}

template <typename F>
void for_rows(const Part& p, const Area& a, F&& f) {
  if (!a.valid()) return;
  for (const auto& row : p.rows)
    if (row.y >= a.y0 && row.y <= a.y1) {
      const auto [b, e] = span(row, a.x0, a.x1);
      f(row, b, e);
    }
}

template <typename F>
void for_points(const Part& p, const Area& a, F&& f) {
  for_rows(p, a, [&](const MeasureRow& row, long b, long e) {
    for (long i = b; i < e; ++i) f(static_cast<double>(row.x[i]), row.y, static_cast<double>(row.z[i]));
  });
}

PlaneFit fit(const Part& p, const Area& a) {
  PlaneFit f;
  for_points(p, a, [&](double x, double y, double z) { f.add(x, y, z); });
  f.solve();
  return f;
}

struct Stats {
  double sum = 0, min = kInf, max = -kInf;
  std::uint64_t n = 0;
  void add(double v) {
    if (!std::isfinite(v)) return;
    sum += v, ++n;
    min = std::min(min, v), max = std::max(max, v);
  }
  double mean() const { return n ? sum / static_cast<double>(n) : kNaN; }
  double lo() const { return n ? min : kNaN; }
  double hi() const { return n ? max : kNaN; }
};

// Mean over b's points of Z minus a's fitted plane (step, flush).
double mean_above_plane(const Part& p, const PlaneFit& plane, const Area& b, std::uint64_t& n) {
  Stats s;
  if (plane.count() > 0) for_points(p, b, [&](double x, double y, double z) { s.add(z - plane.z_at(x, y)); });
  n += s.n;
  return s.mean();
}

// Heights of a row's points [b, e) above a level function, into h (indexed like the row).
template <typename L>
void heights(const MeasureRow& row, long b, long e, std::vector<double>& h, L&& level) {
  h.resize(row.x.size());
  for (long i = b; i < e; ++i) h[i] = row.z[i] - level(static_cast<double>(row.x[i]), row.y);
}

void gap_flush(const ToolSpec& t, const Part& p, const std::vector<ToolResult>& done, ToolResult& r) {
  const Area w = resolve(t.region, p, done), a = resolve(t.a, p, done), b = resolve(t.b, p, done);
  const PlaneFit pa = fit(p, a), pb = fit(p, b);
  Stats gap;
  std::vector<double> ha, hb;
  if (pa.count() && pb.count())
    for_rows(p, w, [&](const MeasureRow& row, long s, long e) {
      heights(row, s, e, ha, [&](double x, double y) { return pa.z_at(x, y); });
      heights(row, s, e, hb, [&](double x, double y) { return pb.z_at(x, y); });
      const Joining jn = joining(t, row, s, e);
      const double left = first_crossing(row.x.data(), ha.data(), s, e, 1, -t.edge_depth, false, jn);
      const double right = first_crossing(row.x.data(), hb.data(), e - 1, s - 1, -1, -t.edge_depth, false, jn);
      if (std::isfinite(left) && std::isfinite(right) && right > left) gap.add(right - left);
    });
  r.points = gap.n;
  r.values = {{"gap", gap.mean()}, {"flush", mean_above_plane(p, pa, b, r.points)}};
}

void edge_or_groove(const ToolSpec& t, const Part& p, const std::vector<ToolResult>& done, ToolResult& r) {
  const Area a = resolve(t.region, p, done);
  Stats x, width, top, bottom;
  std::vector<double> h;
  for_rows(p, a, [&](const MeasureRow& row, long s, long e) {
    heights(row, s, e, h, [&](double xx, double) { return p.reference.at(xx); });
    const Joining jn = joining(t, row, s, e);
    if (t.kind == ToolKind::Edge) {
      x.add(first_crossing(row.x.data(), h.data(), s, e, 1, t.level, t.rising, jn));
      return;
    }
    const double left = first_crossing(row.x.data(), h.data(), s, e, 1, t.level, false, jn);
    if (!std::isfinite(left)) return;
    const long from = span(row, left, kInf).first;
    const double right = first_crossing(row.x.data(), h.data(), std::max(from - 1, s), e, 1, t.level, true, jn);
    if (!std::isfinite(right)) return;
    x.add(0.5 * (left + right));
    width.add(right - left);
    const double q = 0.25 * (right - left);
    for (long i = s; i < e; ++i) {
      if (row.x[i] > left + q && row.x[i] < right - q) bottom.add(h[i]);
      else if (h[i] >= t.level) top.add(h[i]);
    }
  });
  r.points = x.n;
  if (t.kind == ToolKind::Edge) r.values = {{"x", x.mean()}};
  else r.values = {{"width", width.mean()}, {"x", x.mean()}, {"depth", top.mean() - bottom.mean()}};
}

void volume(const ToolSpec& t, const Part& p, const std::vector<ToolResult>& done, ToolResult& r, const VolumeSummer& on) {
  const kernels::VolumeQuery q = volume_query(t, p, done);
  const kernels::VolumeSums v = on ? on(p, q) : volume_sums(p, q);
  r.points = v.points;
  r.values = {{"volume", v.points ? kernels::volume_value(v.volume, p.row_pitch) : kNaN},
              {"area", v.points ? kernels::volume_value(v.area, p.row_pitch) : kNaN}};
}

void flatness(const ToolSpec& t, const Part& p, const std::vector<ToolResult>& done, ToolResult& r) {
  const Area a = resolve(t.region, p, done);
  const PlaneFit f = fit(p, a);
  double ss = 0, mx = 0;
  const double norm = std::sqrt(1.0 + f.slope_x() * f.slope_x() + f.slope_y() * f.slope_y());
  for_points(p, a, [&](double x, double y, double z) {
    const double d = (z - f.z_at(x, y)) / norm;
    ss += d * d;
    mx = std::max(mx, std::abs(d));
  });
  r.points = f.count();
  const bool ok = f.count() >= 3;
  r.values = {{"rms", ok ? std::sqrt(ss / static_cast<double>(f.count())) : kNaN}, {"max", ok ? mx : kNaN}};
}

void row_tools(const ToolSpec& t, const Part& p, const std::vector<ToolResult>& done, ToolResult& r) {
  Stats per_row;
  std::vector<double> h;
  if (t.kind == ToolKind::RowWidth) {
    const Area a = resolve(t.region, p, done);
    for_rows(p, a, [&](const MeasureRow& row, long s, long e) {
      heights(row, s, e, h, [&](double x, double) { return p.reference.at(x); });
      const Joining jn = joining(t, row, s, e);
      const double left = first_crossing(row.x.data(), h.data(), s, e, 1, t.level, true, jn);
      const double right = first_crossing(row.x.data(), h.data(), e - 1, s - 1, -1, t.level, true, jn);
      if (std::isfinite(left) && std::isfinite(right) && right > left) per_row.add(right - left);
    });
  } else {
    const Area a = resolve(t.a, p, done), b = resolve(t.b, p, done);
    for (const auto& row : p.rows) {
      if (!(row.y >= std::max(a.y0, b.y0) && row.y <= std::min(a.y1, b.y1)) || !a.valid() || !b.valid()) continue;
      Stats sa, sb;
      const auto [a0, a1] = span(row, a.x0, a.x1);
      const auto [b0, b1] = span(row, b.x0, b.x1);
      for (long i = a0; i < a1; ++i) sa.add(row.z[i] - p.reference.at(row.x[i]));
      for (long i = b0; i < b1; ++i) sb.add(row.z[i] - p.reference.at(row.x[i]));
      if (sa.n && sb.n) per_row.add(sb.mean() - sa.mean());
    }
  }
  r.points = per_row.n;
  r.values = {{"mean", per_row.mean()}, {"min", per_row.lo()}, {"max", per_row.hi()}};
}

ToolResult run_tool(const ToolSpec& t, const Part& p, const std::vector<ToolResult>& done, const VolumeSummer& on) {
  ToolResult r;
  r.name = t.name;
  r.kind = t.kind;
  switch (t.kind) {
    case ToolKind::Height: {
      Stats s;
      const Area a = resolve(t.region, p, done);
      for_points(p, a, [&](double x, double, double z) { s.add(z - p.reference.at(x)); });
      r.points = s.n;
      r.values = {{"mean", s.mean()}, {"min", s.lo()}, {"max", s.hi()}};
      break;
    }
    case ToolKind::Step: {
      const PlaneFit pa = fit(p, resolve(t.a, p, done));
      r.points = pa.count();
      r.values = {{"step", mean_above_plane(p, pa, resolve(t.b, p, done), r.points)}};
      break;
    }
    case ToolKind::GapFlush: gap_flush(t, p, done, r); break;
    case ToolKind::Edge:
    case ToolKind::Groove: edge_or_groove(t, p, done, r); break;
    case ToolKind::Volume: volume(t, p, done, r, on); break;
    case ToolKind::Flatness: flatness(t, p, done, r); break;
    case ToolKind::RowStep:
    case ToolKind::RowWidth: row_tools(t, p, done, r); break;
  }
  bool any = false, fail = false;
  for (const auto& [name, v] : r.values) {
    const auto it = t.limits.find(name);
    Decision d = Decision::None;
    if (it != t.limits.end()) {
      d = (v >= it->second.first && v <= it->second.second) ? Decision::Pass : Decision::Fail;  // NaN fails
      any = true;
      fail = fail || d == Decision::Fail;
    }
    r.value_decisions.push_back(d);
  }
  r.decision = fail ? Decision::Fail : any ? Decision::Pass : Decision::None;
  return r;
}

}  // namespace

kernels::VolumeQuery volume_query(const ToolSpec& t, const Part& p, const std::vector<ToolResult>& done) {
  const Area a = resolve(t.region, p, done);
  kernels::VolumeQuery q;
  q.x0 = a.x0, q.x1 = a.x1, q.y0 = a.y0, q.y1 = a.y1;
  q.ref_a = p.reference.a, q.ref_b = p.reference.b;
  q.sign = t.below ? -1.0 : 1.0;
  q.level = t.level;
  q.max_spacing = t.max_spacing;
  return q;
}

kernels::VolumeSums volume_sums(const Part& p, const kernels::VolumeQuery& q) {
  Area a;
  a.x0 = q.x0, a.x1 = q.x1, a.y0 = q.y0, a.y1 = q.y1;
  std::int64_t vol = 0, area = 0;
  std::uint64_t n = 0;
  for_rows(p, a, [&](const MeasureRow& row, long s, long e) {
    n += static_cast<std::uint64_t>(e - s);
    Joining jn;
    jn.spacing = mean_spacing(row.x.data(), s, e);
    jn.max_spacing = q.max_spacing;
    const kernels::RowHeights h{row.x.data(), row.z.data(), q.ref_a, q.ref_b, q.sign};
    for (long i = s; i + 1 < e; ++i) kernels::volume_segment(row.x.data(), h, s, e, i, jn, q.level, vol, area);
  });
  return {static_cast<unsigned long long>(vol), static_cast<unsigned long long>(area), n};
}

const char* to_string(Decision d) {
  switch (d) {
    case Decision::None: return "none";
    case Decision::Pass: return "pass";
    case Decision::Fail: return "fail";
  }
  return "?";
}

double ToolResult::value(const std::string& n) const {
  for (const auto& [k, v] : values)
    if (k == n) return v;
  return kNaN;
}

PartResult measure_part(const Job& job, const Part& part, const VolumeSummer& volume) {
  PartResult r;
  r.part = part.id;
  r.job = job.name;
  if (!part.rows.empty()) {
    const MeasureRow &f = part.rows.front(), &l = part.rows.back();
    r.frame_first = f.frame, r.frame_last = l.frame;
    r.y_first = f.y, r.y_last = l.y;
    r.has_encoder = f.has_encoder && l.has_encoder;
    r.encoder_first = f.encoder, r.encoder_last = l.encoder;
    r.timestamp_first_ns = f.timestamp_ns, r.timestamp_last_ns = l.timestamp_ns;
  }
  r.length = part.length();
  r.box = part.box;
  r.reference = part.reference;
  r.units = part.units;
  r.rows = part.rows.size();
  for (const auto& row : part.rows) r.points += row.x.size();
  r.cut = part.cut;
  bool any = false, fail = false;
  for (const auto& t : job.tools) {
    r.tools.push_back(run_tool(t, part, r.tools, volume));
    any = any || r.tools.back().decision != Decision::None;
    fail = fail || r.tools.back().decision == Decision::Fail;
  }
  r.decision = fail ? Decision::Fail : any ? Decision::Pass : Decision::None;
  return r;
}

}  // namespace stripeline::measure
