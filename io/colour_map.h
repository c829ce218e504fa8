#pragma once
// The one colour map of every picture stripeline makes of heights: the PNGs
// of `stripeline render` and `report`, and the live viewer's waterfalls (its
// page is sent the same table, so a height has one colour everywhere).
//
// 256 entries, dark (low) to light (high), ordered in lightness so that grey
// prints and colour-blind readers still see the order: piecewise linear in RGB
// through five colours of matplotlib's viridis (CC0; the five anchor values
// are facts of that map, the interpolation is ours).
#include <array>
#include <cstdint>
#include <string>

namespace stripeline::io {

struct Rgb8 {
  std::uint8_t r = 0, g = 0, b = 0;
  friend bool operator==(const Rgb8&, const Rgb8&) = default;
};

// The table: entry 0 is the lowest value, 255 the highest.
const std::array<Rgb8, 256>& height_colour_map();

// The colour of t in [0, 1] (clamped; NaN gives the "no data" colour).
Rgb8 height_colour(double t);

// Where no point was found: a neutral grey no entry of the map is close to.
inline constexpr Rgb8 kNoDataColour{96, 96, 96};

// The table as JSON, [[r,g,b], ...] 256 entries: what the viewer's page is sent.
std::string height_colour_map_json();

}  // namespace stripeline::io
