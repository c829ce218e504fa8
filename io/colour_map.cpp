#include "io/colour_map.h"

#include <cmath>

namespace stripeline::io {

namespace {

struct Anchor {
  double t;
  double r, g, b;
};
// Five colours of viridis at 0, 1/4, 1/2, 3/4 and 1.
constexpr Anchor kAnchors[] = {
    {0.00, 68, 1, 84}, {0.25, 59, 82, 139}, {0.50, 33, 145, 140}, {0.75, 94, 201, 98}, {1.00, 253, 231, 37},
};

std::uint8_t channel(double a, double b, double f) { return static_cast<std::uint8_t>(std::lround(a + (b - a) * f)); }

std::array<Rgb8, 256> make_table() {
  std::array<Rgb8, 256> table{};
  for (int i = 0; i < 256; ++i) {
    const double t = i / 255.0;
    int k = 0;
    while (k + 2 < static_cast<int>(std::size(kAnchors)) && t > kAnchors[k + 1].t) ++k;
    const Anchor& lo = kAnchors[k];
    const Anchor& hi = kAnchors[k + 1];
    const double f = (t - lo.t) / (hi.t - lo.t);
    table[static_cast<std::size_t>(i)] = Rgb8{channel(lo.r, hi.r, f), channel(lo.g, hi.g, f), channel(lo.b, hi.b, f)};
  }
  return table;
}

}  // namespace

const std::array<Rgb8, 256>& height_colour_map() {
  static const std::array<Rgb8, 256> table = make_table();
  return table;
}

Rgb8 height_colour(double t) {
  if (std::isnan(t)) return kNoDataColour;
  const double clamped = t < 0 ? 0 : (t > 1 ? 1 : t);
  return height_colour_map()[static_cast<std::size_t>(std::lround(clamped * 255.0))];
}

std::string height_colour_map_json() {
  std::string json = "[";
  for (const Rgb8& c : height_colour_map()) {
    if (json.size() > 1) json += ",";
    json += "[" + std::to_string(c.r) + "," + std::to_string(c.g) + "," + std::to_string(c.b) + "]";
  }
  return json + "]";
}

}  // namespace stripeline::io
