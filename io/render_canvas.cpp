#include "io/render_canvas.h"

#include <png.h>

#include <algorithm>
#include <cstdlib>

#include "core/errors.h"
#include "io/atomic_file.h"
#include "io/png_errors.h"

namespace stripeline::io {

Canvas::Canvas(int w, int h, Rgb8 fill)
    : width(w), height(h), pixels(static_cast<std::size_t>(w) * static_cast<std::size_t>(h), fill) {}

void Canvas::set(int x, int y, Rgb8 c) {
  if (x < 0 || y < 0 || x >= width || y >= height) return;
  pixels[static_cast<std::size_t>(y) * static_cast<std::size_t>(width) + static_cast<std::size_t>(x)] = c;
}

void Canvas::fill_rect(int x, int y, int w, int h, Rgb8 c) {
  const int x0 = std::max(x, 0), y0 = std::max(y, 0);
  const int x1 = std::min(x + w, width), y1 = std::min(y + h, height);
  for (int yy = y0; yy < y1; ++yy)
    std::fill_n(pixels.begin() + static_cast<std::ptrdiff_t>(yy) * width + x0, std::max(0, x1 - x0), c);
}

void Canvas::hline(int x0, int x1, int y, Rgb8 c) { fill_rect(std::min(x0, x1), y, std::abs(x1 - x0) + 1, 1, c); }
void Canvas::vline(int x, int y0, int y1, Rgb8 c) { fill_rect(x, std::min(y0, y1), 1, std::abs(y1 - y0) + 1, c); }

void Canvas::line(int x0, int y0, int x1, int y1, Rgb8 c) {
  const int dx = std::abs(x1 - x0), sx = x0 < x1 ? 1 : -1;
  const int dy = -std::abs(y1 - y0), sy = y0 < y1 ? 1 : -1;
  int err = dx + dy;
  for (;;) {
    set(x0, y0, c);
    if (x0 == x1 && y0 == y1) return;
    const int e2 = 2 * err;
    if (e2 >= dy) err += dy, x0 += sx;
    if (e2 <= dx) err += dx, y0 += sy;
  }
}

namespace {

// libpng may longjmp only out of png_c_encode, which holds no object with a
// destructor (as in image_writer.cpp); the bytes go to a std::string through
// the callback, which never longjmps itself.
struct PngMemoryState : PngErrorState {
  std::string* out = nullptr;
};

void png_memory_cb(png_structp png, png_bytep data, size_t length) {
  static_cast<PngMemoryState*>(png_get_io_ptr(png))->out->append(reinterpret_cast<const char*>(data), length);
}
void png_no_flush(png_structp) {}

int png_c_encode(png_structp png, png_infop info, const Rgb8* pixels, png_uint_32 width, png_uint_32 height,
                 const char* description) {
  if (setjmp(png_jmpbuf(png))) return 1;
  png_set_IHDR(png, info, width, height, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  png_set_compression_level(png, 6);
  if (description != nullptr) {
    png_text text{};
    text.compression = PNG_TEXT_COMPRESSION_NONE;
    text.key = const_cast<char*>("Description");
    text.text = const_cast<char*>(description);
    png_set_text(png, info, &text, 1);
  }
  png_write_info(png, info);
  static_assert(sizeof(Rgb8) == 3, "Rgb8 rows are PNG RGB rows");
  for (png_uint_32 y = 0; y < height; ++y)
    png_write_row(png, reinterpret_cast<png_const_bytep>(pixels + static_cast<std::size_t>(y) * width));
  png_write_end(png, info);
  return 0;
}

}  // namespace

std::string encode_png(const Canvas& canvas, const std::string& description) {
  if (canvas.width <= 0 || canvas.height <= 0) throw RuntimeFailure("encode_png: empty canvas");
  std::string out;
  PngMemoryState state;
  state.out = &out;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, static_cast<PngErrorState*>(&state), png_error_cb, png_warning_cb);
  if (png == nullptr) throw RuntimeFailure("encode_png: cannot create a libpng writer");
  png_infop info = png_create_info_struct(png);
  if (info == nullptr) {
    png_destroy_write_struct(&png, nullptr);
    throw RuntimeFailure("encode_png: cannot create a libpng info struct");
  }
  png_set_write_fn(png, &state, png_memory_cb, png_no_flush);
  const int failed = png_c_encode(png, info, canvas.pixels.data(), static_cast<png_uint_32>(canvas.width),
                                  static_cast<png_uint_32>(canvas.height), description.empty() ? nullptr : description.c_str());
  png_destroy_write_struct(&png, &info);
  if (failed != 0) throw RuntimeFailure(std::string("encode_png: libpng failed: ") + state.message);
  return out;
}

void write_png(const std::filesystem::path& path, const Canvas& canvas, const std::string& description) {
  write_file_atomically(path, encode_png(canvas, description));
}

}  // namespace stripeline::io
