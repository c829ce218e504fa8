// Drawing a field (io/render.h): the plot, its axes, the colour scale bar.
#include "io/render.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace stripeline::io {
namespace {

constexpr Rgb8 kAxis{40, 40, 40};
constexpr Rgb8 kPointColour{236, 236, 236};  // the mask's "a point was found"

// 1, 2 or 5 x 10^k: about `count` steps over `range`.
double nice_step(double range, double count) {
  if (!(range > 0) || !(count > 0)) return 1.0;
  const double raw = range / count;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  const double m = raw / p;
  return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

// A tick label: as many decimals as the step needs.
std::string label(double v, double step) {
  const int decimals = step >= 1 ? 0 : std::min(6, static_cast<int>(std::ceil(-std::log10(step) - 1e-9)));
  if (std::fabs(v) < step * 1e-6) v = 0;  // no "-0"
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string axis_title(const std::string& name, const std::string& unit) { return name == unit ? name : name + " [" + unit + "]"; }

// f(value, label) at each tick of a..b over `pixels`: one about every `spacing` pixels.
template <class F>
void each_tick(double a, double b, double pixels, double spacing, F f) {
  for (const Tick& t : axis_ticks(a, b, std::max(1.0, pixels / spacing))) f(t.value, t.label);
}

struct Frame {
  int s = 1;  // font scale
  RenderLayout l;
};

void draw_plot(Canvas& c, const Field& f, const RenderOptions& o, const RenderLayout& l) {
  const int pw = (f.width + l.cells_x - 1) / l.cells_x;
  const std::int64_t ph = (f.height + l.cells_y - 1) / l.cells_y;
  for (std::int64_t py = 0; py < ph; ++py) {
    for (int px = 0; px < pw; ++px) {
      double sum = 0;
      int n = 0;
      for (std::int64_t r = py * l.cells_y; r < std::min<std::int64_t>((py + 1) * l.cells_y, f.height); ++r)
        for (int col = px * l.cells_x; col < std::min((px + 1) * l.cells_x, f.width); ++col) {
          const float v = f.at(col, r);
          if (std::isfinite(v)) sum += v, ++n;
        }
      const double v = n ? sum / n : std::numeric_limits<double>::quiet_NaN();
      c.fill_rect(l.plot_x + px * l.zoom, l.plot_y + static_cast<int>(py) * l.zoom, l.zoom, l.zoom,
                  value_colour(v, l.lo, l.hi, o.palette));
    }
  }
}

void draw_axes(Canvas& c, const Field& f, const Frame& fr) {
  const RenderLayout& l = fr.l;
  const int s = fr.s;
  c.hline(l.plot_x - 1, l.plot_x + l.plot_width, l.plot_y - 1, kAxis);
  c.hline(l.plot_x - 1, l.plot_x + l.plot_width, l.plot_y + l.plot_height, kAxis);
  c.vline(l.plot_x - 1, l.plot_y - 1, l.plot_y + l.plot_height, kAxis);
  c.vline(l.plot_x + l.plot_width, l.plot_y - 1, l.plot_y + l.plot_height, kAxis);
  const double px_per_cell_x = static_cast<double>(l.zoom) / l.cells_x, px_per_cell_y = static_cast<double>(l.zoom) / l.cells_y;
  const int below = l.plot_y + l.plot_height;
  each_tick(f.x.at(0), f.x.at(f.width - 1), l.plot_width, 90.0 * s, [&](double v, const std::string& t) {
    const int x = l.plot_x + static_cast<int>(std::floor(((v - f.x.origin) / f.x.step + 0.5) * px_per_cell_x));
    c.vline(x, below, below + 4 * s, kAxis);
    draw_text(c, x - text_width(t, s) / 2, below + 6 * s, t, kAxis, s);
  });
  const std::string xt = axis_title(f.x.name, f.x.unit);
  draw_text(c, l.plot_x + l.plot_width / 2 - text_width(xt, s) / 2, below + 18 * s, xt, kAxis, s);
  each_tick(f.y.at(0), f.y.at(static_cast<double>(f.height - 1)), l.plot_height, 40.0 * s, [&](double v, const std::string& t) {
    const int y = l.plot_y + static_cast<int>(std::floor(((v - f.y.origin) / f.y.step + 0.5) * px_per_cell_y));
    c.hline(l.plot_x - 1 - 4 * s, l.plot_x - 1, y, kAxis);
    draw_text(c, l.plot_x - 6 * s - text_width(t, s), y - 3 * s, t, kAxis, s);
  });
  const std::string yt = axis_title(f.y.name, f.y.unit);
  draw_text_vertical(c, 3 * s, l.plot_y + l.plot_height / 2 - text_width(yt, s) / 2, yt, kAxis, s);
}

void draw_bar(Canvas& c, const Field& f, const RenderOptions& o, const Frame& fr) {
  const RenderLayout& l = fr.l;
  const int s = fr.s, w = 14 * s;
  const int legend_y = l.bar_y + l.bar_height + 8 * s;
  if (o.palette == Palette::Mask) {
    c.fill_rect(l.bar_x, l.plot_y, w, w, kPointColour);
    c.fill_rect(l.bar_x, l.plot_y + w + 6 * s, w, w, kNoDataColour);
    draw_text(c, l.bar_x + w + 4 * s, l.plot_y + 4 * s, "point", kAxis, s);
    draw_text(c, l.bar_x + w + 4 * s, l.plot_y + w + 10 * s, "none", kAxis, s);
    return;
  }
  for (int r = 0; r < l.bar_height; ++r) {
    const double t = l.bar_height > 1 ? 1.0 - static_cast<double>(r) / (l.bar_height - 1) : 0.5;
    c.hline(l.bar_x, l.bar_x + w - 1, l.bar_y + r, value_colour(l.lo + t * (l.hi - l.lo), l.lo, l.hi, o.palette));
  }
  if (l.hi > l.lo) {
    each_tick(l.lo, l.hi, l.bar_height, 30.0 * s, [&](double v, const std::string& t) {
      const int y = l.bar_y + static_cast<int>(std::lround((l.hi - v) / (l.hi - l.lo) * (l.bar_height - 1)));
      c.hline(l.bar_x + w, l.bar_x + w + 3 * s, y, kAxis);
      draw_text(c, l.bar_x + w + 5 * s, y - 3 * s, t, kAxis, s);
    });
  } else {
    draw_text(c, l.bar_x + w + 5 * s, l.bar_y + l.bar_height / 2 - 3 * s, label(l.lo, 1e-3), kAxis, s);
  }
  const std::string vt = axis_title(f.value_name, f.value_unit);
  draw_text(c, l.bar_x, l.bar_y - 12 * s, vt, kAxis, s);
  c.fill_rect(l.bar_x, legend_y, w, w, kNoDataColour);
  draw_text(c, l.bar_x + w + 4 * s, legend_y + 4 * s, "no point", kAxis, s);
}

}  // namespace

std::vector<Tick> axis_ticks(double a, double b, double count) {
  const double lo = std::min(a, b), hi = std::max(a, b);
  if (!std::isfinite(lo) || !std::isfinite(hi)) return {};
  if (hi == lo) return {Tick{lo, label(lo, 1e-3)}};
  const double step = nice_step(hi - lo, std::max(1.0, count));
  std::vector<Tick> ticks;
  for (double k = std::ceil(lo / step - 1e-9); k * step <= hi + step * 1e-9; k += 1) ticks.push_back(Tick{k * step, label(k * step, step)});
  return ticks;
}

Rgb8 value_colour(double value, double lo, double hi, Palette palette) {
  if (std::isnan(value)) return kNoDataColour;
  if (palette == Palette::Mask) return kPointColour;
  const double t = hi > lo ? (value - lo) / (hi - lo) : 0.5;
  if (palette == Palette::Height) return height_colour(t);
  const auto g = static_cast<std::uint8_t>(std::lround(std::clamp(t, 0.0, 1.0) * 255.0));
  return Rgb8{g, g, g};
}

void value_range(const Field& field, double& lo, double& hi) {
  std::vector<float> v;
  const std::size_t stride = std::max<std::size_t>(1, field.values.size() / (std::size_t{1} << 22));
  for (std::size_t i = 0; i < field.values.size(); i += stride)
    if (std::isfinite(field.values[i])) v.push_back(field.values[i]);
  lo = hi = std::numeric_limits<double>::quiet_NaN();
  if (v.empty()) return;
  auto pick = [&](double q) {
    const auto k = static_cast<std::size_t>(std::floor(q * static_cast<double>(v.size() - 1)));
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
    return static_cast<double>(v[k]);
  };
  lo = pick(0.005);
  hi = pick(0.995);
  if (hi < lo) std::swap(lo, hi);
}

Canvas render_field(const Field& f, const RenderOptions& o, RenderLayout* layout_out) {
  Frame fr;
  RenderLayout& l = fr.l;
  l.lo = o.lo, l.hi = o.hi;
  if (std::isnan(l.lo) || std::isnan(l.hi)) {
    double lo, hi;
    value_range(f, lo, hi);
    if (std::isnan(l.lo)) l.lo = std::isnan(lo) ? 0.0 : lo;
    if (std::isnan(l.hi)) l.hi = std::isnan(hi) ? 1.0 : hi;
  }
  l.cells_x = std::max(1, (f.width + o.max_width - 1) / std::max(1, o.max_width));
  l.cells_y = static_cast<int>(std::max<std::int64_t>(1, (f.height + o.max_height - 1) / std::max(1, o.max_height)));
  if (l.cells_x == 1 && l.cells_y == 1 && f.width < 400 && f.height < 400)
    l.zoom = std::clamp(static_cast<int>(std::min<std::int64_t>(400 / f.width, 400 / f.height)), 1, 16);
  l.plot_width = (f.width + l.cells_x - 1) / l.cells_x * l.zoom;
  l.plot_height = static_cast<int>((f.height + l.cells_y - 1) / l.cells_y) * l.zoom;
  const int s = fr.s = l.plot_width >= 1200 ? 2 : 1;
  l.plot_x = 80 * s;
  l.plot_y = 30 * s;
  l.bar_x = l.plot_x + l.plot_width + 16 * s;
  l.bar_y = l.plot_y;
  l.bar_height = std::max(l.plot_height, 120 * s);
  if (o.palette == Palette::Mask) l.bar_height = 0;
  const std::string value_title = f.value_name == f.value_unit ? f.value_name : f.value_name + " [" + f.value_unit + "]";
  const int width = std::max({l.bar_x + 100 * s, l.bar_x + text_width(value_title, s) + 8 * s, text_width(o.title, s) + 12 * s});
  const int height = l.plot_y + std::max(l.plot_height, l.bar_height + 24 * s) + 34 * s;
  Canvas c(width, height, kWhite);
  draw_text(c, 6 * s, 8 * s, o.title, kBlack, s);
  draw_plot(c, f, o, l);
  draw_axes(c, f, fr);
  draw_bar(c, f, o, fr);
  if (layout_out) *layout_out = l;
  return c;
}

std::string render_description(const std::filesystem::path& source, const std::string& kind, const Field& f,
                               const RenderLayout& l) {
  metadata::Json d = metadata::document("render");
  d["source"] = source.filename().string();
  d["kind"] = kind;
  d["values"] = {{"name", f.value_name}, {"unit", f.value_unit}, {"lo", l.lo}, {"hi", l.hi}};
  d["x"] = {{"name", f.x.name}, {"unit", f.x.unit}, {"origin", f.x.origin}, {"step", f.x.step}, {"cells", f.width}};
  d["y"] = {{"name", f.y.name}, {"unit", f.y.unit}, {"origin", f.y.origin}, {"step", f.y.step}, {"cells", f.height}};
  d["plot"] = {{"x", l.plot_x}, {"y", l.plot_y}, {"width", l.plot_width}, {"height", l.plot_height},
               {"cells_x", l.cells_x}, {"cells_y", l.cells_y}, {"zoom", l.zoom}};
  return metadata::text(d);
}

std::vector<std::uint64_t> histogram(const Field& field, double lo, double hi, int bins) {
  std::vector<std::uint64_t> h(static_cast<std::size_t>(std::max(1, bins)), 0);
  const double span = hi > lo ? hi - lo : 1.0;
  for (const float v : field.values) {
    if (!std::isfinite(v)) continue;
    const auto k = static_cast<std::int64_t>(std::floor((v - lo) / span * static_cast<double>(h.size())));
    ++h[static_cast<std::size_t>(std::clamp<std::int64_t>(k, 0, static_cast<std::int64_t>(h.size()) - 1))];
  }
  return h;
}

std::uint64_t missing_cells(const Field& field) {
  return static_cast<std::uint64_t>(std::count_if(field.values.begin(), field.values.end(), [](float v) { return !std::isfinite(v); }));
}

}  // namespace stripeline::io
