#pragma once
// The drawing surface of `stripeline render` and `report` (io/render.h): an
// 8-bit RGB image, rectangles and lines, text in a small bitmap font of our
// own (5x7 glyphs: digits, letters, the punctuation of numbers and units),
// and its encoding as a PNG, in memory (the report inlines it) or as a file
// (atomically). Colours of heights come from io/colour_map.h.
// Thread-safety: a Canvas is used by one thread at a time; the functions are pure.
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "io/colour_map.h"

namespace stripeline::io {

inline constexpr Rgb8 kWhite{255, 255, 255};
inline constexpr Rgb8 kBlack{0, 0, 0};

struct Canvas {
  int width = 0;
  int height = 0;
  std::vector<Rgb8> pixels;  // row-major, width * height

  Canvas() = default;
  Canvas(int w, int h, Rgb8 fill = kWhite);
  Rgb8 at(int x, int y) const { return pixels[static_cast<std::size_t>(y) * static_cast<std::size_t>(width) + static_cast<std::size_t>(x)]; }
  // Outside the canvas: nothing drawn.
  void set(int x, int y, Rgb8 c);
  void fill_rect(int x, int y, int w, int h, Rgb8 c);
  void hline(int x0, int x1, int y, Rgb8 c);
  void vline(int x, int y0, int y1, Rgb8 c);
  void line(int x0, int y0, int x1, int y1, Rgb8 c);  // Bresenham
};

// The font: 5x7 glyphs in 6x9 cells (one column and two rows of spacing) at
// `scale` canvas pixels a font pixel. Characters outside the font draw as a
// hollow box, so a missing glyph shows.
inline constexpr int kGlyphWidth = 5, kGlyphHeight = 7, kCellWidth = 6, kCellHeight = 9;
int text_width(std::string_view text, int scale = 1);
// Top-left corner at (x, y).
void draw_text(Canvas& canvas, int x, int y, std::string_view text, Rgb8 colour, int scale = 1);
// Turned 90 degrees anticlockwise (reads bottom to top: a vertical axis' name);
// (x, y) is the top-left of the turned text's box.
void draw_text_vertical(Canvas& canvas, int x, int y, std::string_view text, Rgb8 colour, int scale = 1);
// True when the font has a glyph for c.
bool font_has(char c);

// An RGB PNG of the canvas (zlib level 6), with a tEXt "Description" when
// description is not empty. RuntimeFailure if libpng fails.
std::string encode_png(const Canvas& canvas, const std::string& description = {});
// encode_png() written atomically as `path` (InputError when the path cannot be written).
void write_png(const std::filesystem::path& path, const Canvas& canvas, const std::string& description = {});

}  // namespace stripeline::io
