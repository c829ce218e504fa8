#include "io/render_grid.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace stripeline::io {
namespace {

constexpr std::int64_t kMaxCells = std::int64_t{64} << 20;  // 64 Mi cells: 256 MiB a field

struct Extent {
  double x0 = std::numeric_limits<double>::infinity(), x1 = -x0, y0 = x0, y1 = -x0;
};

// Columns and rows of the grid, and the steps between cells.
void choose_grid(const std::vector<const PlyVertex*>& pts, const Extent& e, bool px, int& cols, std::int64_t& rows,
                 double& dx, double& dy) {
  bool integral = px;
  for (const PlyVertex* p : pts) integral = integral && p->x == std::floor(p->x) && p->y == std::floor(p->y);
  if (integral) {
    dx = dy = 1.0;
    cols = static_cast<int>(std::min(e.x1 - e.x0 + 1, 65536.0));
    rows = static_cast<std::int64_t>(e.y1 - e.y0 + 1);
  } else {
    std::vector<double> ys;
    ys.reserve(pts.size());
    for (const PlyVertex* p : pts) ys.push_back(p->y);
    std::sort(ys.begin(), ys.end());
    std::size_t distinct = 0, longest = 0, run = 0;
    for (std::size_t i = 0; i < ys.size(); ++i) {
      run = (i > 0 && ys[i] == ys[i - 1]) ? run + 1 : 1;
      if (run == 1) ++distinct;
      longest = std::max(longest, run);
    }
    if (distinct <= 65536 && longest >= 4) {  // profiles: one row each, as many columns as the fullest
      rows = static_cast<std::int64_t>(distinct);
      cols = static_cast<int>(std::min<std::size_t>(longest, 65536));
    } else {  // scattered: about one cell a point, square cells
      const double wx = std::max(e.x1 - e.x0, 1e-9), wy = std::max(e.y1 - e.y0, 1e-9);
      const double cell = std::sqrt(wx * wy / static_cast<double>(pts.size()));
      cols = static_cast<int>(std::clamp(wx / cell + 1, 1.0, 65536.0));
      rows = static_cast<std::int64_t>(std::clamp(wy / cell + 1, 1.0, 65536.0));
    }
    dx = cols > 1 ? (e.x1 - e.x0) / (cols - 1) : 1.0;
    dy = rows > 1 ? (e.y1 - e.y0) / static_cast<double>(rows - 1) : 1.0;
  }
  while (static_cast<std::int64_t>(cols) * rows > kMaxCells) {  // a very long scan: coarser rows
    rows = (rows + 1) / 2;
    dy = rows > 1 ? (e.y1 - e.y0) / static_cast<double>(rows - 1) : 1.0;
    if (integral) dy = std::ceil(dy);
  }
}

}  // namespace

void grid_points(const std::vector<PlyVertex>& points, bool with_intensity, bool px, ScanFields& s) {
  s.points = points.size();
  std::vector<const PlyVertex*> pts;
  Extent e;
  for (const PlyVertex& p : points) {
    if (p.slot != 0 || !std::isfinite(p.x) || !std::isfinite(p.y) || !std::isfinite(p.z)) continue;
    pts.push_back(&p);
    e.x0 = std::min(e.x0, double{p.x}), e.x1 = std::max(e.x1, double{p.x});
    e.y0 = std::min(e.y0, p.y), e.y1 = std::max(e.y1, p.y);
  }
  if (pts.empty()) return;  // the caller says the file holds no points
  int cols = 1;
  std::int64_t rows = 1;
  double dx = 1, dy = 1;
  choose_grid(pts, e, px, cols, rows, dx, dy);
  const std::size_t n = static_cast<std::size_t>(cols) * static_cast<std::size_t>(rows);
  std::vector<double> z(n, 0.0), in(with_intensity ? n : 0, 0.0);
  std::vector<std::uint32_t> count(n, 0);
  for (const PlyVertex* p : pts) {
    const auto c = static_cast<std::int64_t>(std::lround((p->x - e.x0) / dx));
    const auto r = static_cast<std::int64_t>(std::lround((p->y - e.y0) / dy));
    if (c < 0 || c >= cols || r < 0 || r >= rows) continue;
    const std::size_t i = static_cast<std::size_t>(r) * static_cast<std::size_t>(cols) + static_cast<std::size_t>(c);
    z[i] += p->z, ++count[i];
    if (with_intensity) in[i] += p->intensity;
  }
  const std::string unit = px ? "px" : "mm";
  auto field = [&](const std::vector<double>& sum, const char* name, const std::string& value_unit) {
    Field f;
    f.width = cols, f.height = rows;
    f.x = {"x", unit, e.x0, dx};
    f.y = {"y", px ? "frame" : unit, e.y0, dy};
    f.value_name = name, f.value_unit = value_unit;
    f.values.resize(n);
    for (std::size_t i = 0; i < n; ++i)
      f.values[i] = count[i] ? static_cast<float>(sum[i] / count[i]) : std::numeric_limits<float>::quiet_NaN();
    return f;
  };
  s.height = field(z, "z", unit);
  if (with_intensity) s.intensity = field(in, "intensity", "level");
  s.unit_note = px ? "px: x column, y frame, z row in the frame (no calibration recorded); primary points on a grid"
                   : "mm: calibrated points (x, y, z), primary points on a grid";
}

}  // namespace stripeline::io
