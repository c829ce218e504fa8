// Streaming image readers. Each reader keeps one open file and decodes rows in
// order straight into the caller's buffer; memory use is a few rows (or, for a
// tiled TIFF, one row of tiles), whatever the height of the image.
//
//  - TIFF (libtiff): 8/16-bit unsigned, 1 sample per pixel, min-is-black (or no
//    photometric tag), any compression libtiff was built with. Strip-based
//    files are read with TIFFReadScanline; tiled files one row of tiles at a
//    time. Only the first image of a multi-page file is read. libtiff messages
//    never reach stderr: they go into the InputError.
//  - PNG (libpng): 8/16-bit grayscale, not interlaced (Adam7 cannot be
//    streamed). Palette, RGB and alpha images are rejected. libpng errors
//    longjmp into small functions that own no C++ objects and become
//    InputError in the caller.
//  - PGM: binary P5 with comments; maxval <= 255 is Mono8, else Mono16
//    (big-endian on disk).
//  - raw: headerless rows; 16-bit is little-endian.
//
// format_from_path() returns Auto for an extension it does not know;
// open_image() then looks at the first bytes (TIFF, PNG, P5 signatures), and
// falls back to raw when the caller gave a RawGeometry.
#include "io/image_reader.h"

#include <png.h>
#include <tiffio.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cerrno>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "core/errors.h"
#include "io/tiff_support.h"

namespace stripeline::io {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void input_error(const fs::path& path, const std::string& message) {
  throw InputError(path.string() + ": " + message);
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// A readable, non-empty regular file; returns its size.
std::uintmax_t check_input_file(const fs::path& path) {
  std::error_code ec;
  const auto st = fs::status(path, ec);
  if (!fs::exists(st)) input_error(path, "file not found (expected an existing image file)");
  if (fs::is_directory(st)) input_error(path, "is a directory (expected an image file)");
  if (!fs::is_regular_file(st)) input_error(path, "not a regular file (expected an image file)");
  const std::uintmax_t size = fs::file_size(path, ec);
  if (ec) input_error(path, "cannot read the file size: " + ec.message());
  if (size == 0) input_error(path, "file is empty (0 bytes; expected an image)");
  return size;
}

void check_dimensions(const fs::path& path, std::int64_t width, std::int64_t height) {
  if (width <= 0 || width > kMaxWidth) {
    input_error(path, "image width " + std::to_string(width) + " is out of range (expected 1.." +
                          std::to_string(kMaxWidth) + ")");
  }
  if (height <= 0) input_error(path, "image height " + std::to_string(height) + " is out of range (expected >= 1)");
}

void swap16(std::byte* data, std::size_t count) {
  auto* p = reinterpret_cast<unsigned char*>(data);
  for (std::size_t i = 0; i < count; ++i, p += 2) std::swap(p[0], p[1]);
}

struct FileCloser {
  void operator()(std::FILE* f) const noexcept {
    if (f != nullptr) std::fclose(f);
  }
};
using FilePtr = std::unique_ptr<std::FILE, FileCloser>;

FilePtr open_for_reading(const fs::path& path) {
  FilePtr f(std::fopen(path.c_str(), "rbe"));
  if (!f) {
    const int err = errno;
    input_error(path, std::string("cannot open: ") + std::strerror(err));
  }
  return f;
}

// ---------------------------------------------------------------------------
// Common bookkeeping: position, bounds, "failed" state.
class ReaderBase : public ImageReader {
 public:
  explicit ReaderBase(fs::path path) : path_(std::move(path)) {}
  const ImageInfo& info() const final { return info_; }
  std::int64_t rows_left() const final { return info_.height - next_row_; }

  void read_rows(std::byte* dst, std::int64_t rows) final {
    if (rows < 0) throw RuntimeFailure("ImageReader::read_rows: negative row count");
    if (failed_) input_error(path_, "an earlier read failed (rewind() to start again)");
    if (rows == 0) return;
    if (rows > rows_left()) {
      input_error(path_, "file ends at row " + std::to_string(info_.height) + ", expected " +
                             std::to_string(next_row_ + rows) + " rows");
    }
    failed_ = true;  // until the read completes
    do_read(dst, rows);
    next_row_ += rows;
    failed_ = false;
  }

  void rewind() final {
    failed_ = true;
    next_row_ = 0;
    do_rewind();
    failed_ = false;
  }

 protected:
  std::size_t row_bytes() const { return static_cast<std::size_t>(info_.width) * bytes_per_pixel(info_.format); }
  // Throw if a reopened file does not describe the same image any more.
  void check_same(const ImageInfo& now) const {
    if (now.width != info_.width || now.height != info_.height || now.format != info_.format) {
      input_error(path_, "the file changed since it was opened (expected the same " + std::to_string(info_.width) +
                             "x" + std::to_string(info_.height) + " " + to_string(info_.format) + " image)");
    }
  }
  // Read exactly `rows` rows from next_row_ (already bounds-checked).
  virtual void do_read(std::byte* dst, std::int64_t rows) = 0;
  virtual void do_rewind() = 0;

  fs::path path_;
  ImageInfo info_;
  std::int64_t next_row_ = 0;
  bool failed_ = false;
};

// ---------------------------------------------------------------------------
// Raw and PGM: rows stored back to back after a header of `offset` bytes.
class PlainReader final : public ReaderBase {
 public:
  PlainReader(fs::path path, ImageInfo info, long offset, bool big_endian_data)
      : ReaderBase(std::move(path)), offset_(offset) {
    info_ = info;
    constexpr bool native_big = std::endian::native == std::endian::big;
    swap_ = info_.format == PixelFormat::Mono16 && big_endian_data != native_big;
    open();
  }

 private:
  void open() {
    file_ = open_for_reading(path_);
    std::setvbuf(file_.get(), nullptr, _IOFBF, std::size_t{1} << 20);
    if (std::fseek(file_.get(), offset_, SEEK_SET) != 0) input_error(path_, "cannot seek to the pixel data");
  }
  void do_read(std::byte* dst, std::int64_t rows) override {
    const std::size_t rb = row_bytes();
    const std::size_t got = std::fread(dst, rb, static_cast<std::size_t>(rows), file_.get());
    if (got != static_cast<std::size_t>(rows)) {
      const bool error = std::ferror(file_.get()) != 0;
      const int err = errno;
      if (error) {
        input_error(path_, "read error at row " + std::to_string(next_row_ + static_cast<std::int64_t>(got)) + ": " +
                               std::strerror(err));
      }
      input_error(path_, "file ends at row " + std::to_string(next_row_ + static_cast<std::int64_t>(got)) +
                             ", expected " + std::to_string(info_.height) + " rows (truncated?)");
    }
    if (swap_) swap16(dst, static_cast<std::size_t>(rows) * static_cast<std::size_t>(info_.width));
  }
  void do_rewind() override {
    std::clearerr(file_.get());
    if (std::fseek(file_.get(), offset_, SEEK_SET) != 0) open();
  }

  long offset_ = 0;
  bool swap_ = false;
  FilePtr file_;
};

std::string describe_bytes(std::uintmax_t n) { return std::to_string(n) + " bytes"; }

std::unique_ptr<ImageReader> open_raw(const fs::path& path, const std::optional<RawGeometry>& raw) {
  if (!raw) {
    input_error(path, "a raw image has no header (expected its width and pixel depth to be given with the file)");
  }
  const std::uintmax_t size = check_input_file(path);
  if (raw->format != PixelFormat::Mono8 && raw->format != PixelFormat::Mono16) {
    input_error(path, "raw pixel depth " + std::to_string(static_cast<int>(raw->format)) + " (expected 8 or 16)");
  }
  if (raw->width <= 0 || raw->width > kMaxWidth) {
    input_error(path, "raw image width " + std::to_string(raw->width) + " is out of range (expected 1.." +
                          std::to_string(kMaxWidth) + ")");
  }
  if (raw->height < 0) input_error(path, "raw image height " + std::to_string(raw->height) + " (expected >= 0)");
  const std::uintmax_t row = static_cast<std::uintmax_t>(raw->width) * bytes_per_pixel(raw->format);
  ImageInfo info{raw->width, raw->height, raw->format};
  if (raw->height == 0) {
    if (size % row != 0) {
      input_error(path, "file size " + describe_bytes(size) + " is not a multiple of the row size " +
                            describe_bytes(row) + " (width " + std::to_string(raw->width) + ", " +
                            to_string(raw->format) + ")");
    }
    info.height = static_cast<std::int64_t>(size / row);
  } else {
    const std::uintmax_t expected = row * static_cast<std::uintmax_t>(raw->height);
    if (size != expected) {
      input_error(path, "file size " + describe_bytes(size) + " does not match a " + std::to_string(raw->width) +
                            "x" + std::to_string(raw->height) + " " + to_string(raw->format) + " image (expected " +
                            describe_bytes(expected) + ")");
    }
  }
  check_dimensions(path, info.width, info.height);
  return std::make_unique<PlainReader>(path, info, 0L, /*big_endian_data=*/false);
}

// ---------------------------------------------------------------------------
// PGM P5 header: "P5" ws width ws height ws maxval single-ws data, with
// '#' comments up to the end of a line allowed between the fields.
std::unique_ptr<ImageReader> open_pgm(const fs::path& path) {
  const std::uintmax_t size = check_input_file(path);
  FilePtr file = open_for_reading(path);
  std::FILE* f = file.get();
  const int m0 = std::getc(f);
  const int m1 = std::getc(f);
  if (m0 != 'P' || m1 < '1' || m1 > '7') input_error(path, "not a PGM file (expected the magic number P5)");
  if (m1 != '5') {
    input_error(path, std::string("unsupported Netpbm type P") + static_cast<char>(m1) +
                          (m1 == '2' ? " (ASCII PGM)" : "") + " (expected binary PGM, P5)");
  }
  auto read_field = [&](const char* name) -> std::uint64_t {
    int c = std::getc(f);
    bool separated = false;
    for (;;) {
      if (c == '#') {
        while (c != '\n' && c != '\r' && c != EOF) c = std::getc(f);
        separated = true;
      } else if (c != EOF && std::isspace(c)) {
        separated = true;
        c = std::getc(f);
      } else {
        break;
      }
    }
    if (!separated || c == EOF || !std::isdigit(c)) {
      input_error(path, std::string("bad PGM header: ") + (c == EOF ? "file ends" : "unexpected character") +
                            " where the " + name + " should be (expected a decimal number)");
    }
    std::uint64_t value = 0;
    while (c != EOF && std::isdigit(c)) {
      if (value < (std::uint64_t{1} << 40)) value = value * 10 + static_cast<unsigned>(c - '0');
      c = std::getc(f);
    }
    if (c == EOF) input_error(path, std::string("bad PGM header: file ends after the ") + name);
    if (!std::isspace(c) && c != '#') {
      input_error(path, std::string("bad PGM header: unexpected character after the ") + name +
                            " (expected white space)");
    }
    std::ungetc(c, f);
    return value;
  };
  const std::uint64_t width = read_field("width");
  const std::uint64_t height = read_field("height");
  const std::uint64_t maxval = read_field("maxval");
  // Exactly one white-space character ends the header (a comment is not
  // allowed here: the next byte may be a pixel that looks like '#').
  const int sep = std::getc(f);
  if (sep == EOF || !std::isspace(sep)) {
    input_error(path, "bad PGM header: expected a single white-space character after the maxval");
  }
  if (maxval == 0 || maxval > 65535) {
    input_error(path, "unsupported PGM maxval " + std::to_string(maxval) + " (expected 1..65535)");
  }
  check_dimensions(path, static_cast<std::int64_t>(std::min<std::uint64_t>(width, std::uint64_t{1} << 40)),
                   static_cast<std::int64_t>(std::min<std::uint64_t>(height, std::uint64_t{1} << 40)));
  const long offset = std::ftell(f);
  if (offset < 0) input_error(path, "cannot tell the position of the pixel data");
  ImageInfo info{static_cast<int>(width), static_cast<std::int64_t>(height),
                 maxval <= 255 ? PixelFormat::Mono8 : PixelFormat::Mono16};
  const std::uintmax_t row = width * bytes_per_pixel(info.format);
  const std::uintmax_t data = size - static_cast<std::uintmax_t>(offset);
  if (data / row < height) {
    input_error(path, "file ends at row " + std::to_string(data / row) + ", expected " + std::to_string(height) +
                          " rows (truncated PGM: " + describe_bytes(data) + " of pixel data, expected " +
                          describe_bytes(row * height) + ")");
  }
  file.reset();
  return std::make_unique<PlainReader>(path, info, offset, /*big_endian_data=*/true);
}

// ---------------------------------------------------------------------------
// PNG. Everything libpng may longjmp out of is called from the png_c_*
// functions below, which hold no object with a destructor: a longjmp only
// unwinds plain C frames. Their callers turn a failure into an exception.
struct PngState {
  std::FILE* file = nullptr;
  char message[256] = {};
  bool eof = false;
  bool io_error = false;
};

struct PngHeader {
  png_uint_32 width = 0, height = 0;
  int bit_depth = 0, color_type = 0, interlace = 0;
};

void png_error_cb(png_structp png, png_const_charp message) {
  auto* state = static_cast<PngState*>(png_get_error_ptr(png));
  if (state != nullptr && state->message[0] == '\0') std::snprintf(state->message, sizeof state->message, "%s", message);
  png_longjmp(png, 1);
}

void png_warning_cb(png_structp, png_const_charp) {}

void png_read_cb(png_structp png, png_bytep data, size_t length) {
  auto* state = static_cast<PngState*>(png_get_io_ptr(png));
  const size_t got = std::fread(data, 1, length, state->file);
  if (got != length) {
    if (std::ferror(state->file) != 0) {
      state->io_error = true;
      png_error(png, "read error");
    }
    state->eof = true;
    png_error(png, "unexpected end of file");
  }
}

int png_c_read_header(png_structp png, png_infop info, PngHeader* out) {
  if (setjmp(png_jmpbuf(png))) return 1;
  png_set_sig_bytes(png, 8);
  png_set_user_limits(png, 0x7fffffffU, 0x7fffffffU);
  png_read_info(png, info);
  png_get_IHDR(png, info, &out->width, &out->height, &out->bit_depth, &out->color_type, &out->interlace, nullptr,
               nullptr);
  return 0;
}

int png_c_start(png_structp png, png_infop info, int swap16) {
  if (setjmp(png_jmpbuf(png))) return 1;
  if (swap16 != 0) png_set_swap(png);
  png_read_update_info(png, info);
  return 0;
}

// Reads rows [*done, rows) into dst; *done counts the rows completed.
int png_c_read_rows(png_structp png, unsigned char* dst, size_t row_bytes, std::int64_t rows, std::int64_t* done) {
  if (setjmp(png_jmpbuf(png))) return 1;
  while (*done < rows) {
    png_read_row(png, dst + static_cast<size_t>(*done) * row_bytes, nullptr);
    *done += 1;
  }
  return 0;
}

int png_c_read_end(png_structp png) {
  if (setjmp(png_jmpbuf(png))) return 1;
  png_read_end(png, nullptr);
  return 0;
}

const char* png_color_name(int type) {
  switch (type) {
    case PNG_COLOR_TYPE_GRAY: return "grayscale";
    case PNG_COLOR_TYPE_PALETTE: return "palette";
    case PNG_COLOR_TYPE_RGB: return "RGB";
    case PNG_COLOR_TYPE_GRAY_ALPHA: return "grayscale+alpha";
    case PNG_COLOR_TYPE_RGB_ALPHA: return "RGBA";
    default: return "unknown";
  }
}

class PngReader final : public ReaderBase {
 public:
  explicit PngReader(fs::path path) : ReaderBase(std::move(path)) {
    check_input_file(path_);
    try {
      info_ = open();
    } catch (...) {
      close();  // the destructor does not run when a constructor throws
      throw;
    }
  }
  ~PngReader() override { close(); }

 private:
  void close() noexcept {
    if (png_ != nullptr) png_destroy_read_struct(&png_, info_ptr_ != nullptr ? &info_ptr_ : nullptr, nullptr);
    png_ = nullptr;
    info_ptr_ = nullptr;
    file_.reset();
  }

  std::string libpng_message() const {
    return state_.message[0] != '\0' ? std::string(state_.message) : std::string("unknown libpng error");
  }

  ImageInfo open() {
    close();
    file_ = open_for_reading(path_);
    std::setvbuf(file_.get(), nullptr, _IOFBF, std::size_t{1} << 20);
    unsigned char signature[8];
    const size_t got = std::fread(signature, 1, sizeof signature, file_.get());
    if (got != sizeof signature || png_sig_cmp(signature, 0, sizeof signature) != 0) {
      input_error(path_, "not a PNG file (bad signature)");
    }
    state_ = PngState{};
    state_.file = file_.get();
    png_ = png_create_read_struct(PNG_LIBPNG_VER_STRING, &state_, png_error_cb, png_warning_cb);
    if (png_ == nullptr) throw RuntimeFailure(path_.string() + ": cannot create a libpng reader");
    info_ptr_ = png_create_info_struct(png_);
    if (info_ptr_ == nullptr) throw RuntimeFailure(path_.string() + ": cannot create a libpng info struct");
    png_set_read_fn(png_, &state_, png_read_cb);

    PngHeader h;
    if (png_c_read_header(png_, info_ptr_, &h) != 0) {
      input_error(path_, (state_.eof ? "truncated PNG header: " : "corrupt PNG header: ") + libpng_message());
    }
    if (h.color_type != PNG_COLOR_TYPE_GRAY) {
      input_error(path_, std::string("unsupported PNG color type ") + png_color_name(h.color_type) +
                             " (expected 8- or 16-bit grayscale without alpha)");
    }
    if (h.bit_depth != 8 && h.bit_depth != 16) {
      input_error(path_, "unsupported PNG bit depth " + std::to_string(h.bit_depth) + " (expected 8 or 16)");
    }
    if (h.interlace != PNG_INTERLACE_NONE) {
      input_error(path_, "interlaced (Adam7) PNG cannot be streamed row by row (expected a non-interlaced PNG)");
    }
    check_dimensions(path_, h.width, h.height);
    ImageInfo info{static_cast<int>(h.width), static_cast<std::int64_t>(h.height),
                   h.bit_depth == 16 ? PixelFormat::Mono16 : PixelFormat::Mono8};
    const int swap = h.bit_depth == 16 && std::endian::native == std::endian::little ? 1 : 0;
    if (png_c_start(png_, info_ptr_, swap) != 0) input_error(path_, "corrupt PNG: " + libpng_message());
    return info;
  }

  void do_read(std::byte* dst, std::int64_t rows) override {
    std::int64_t done = 0;
    if (png_c_read_rows(png_, reinterpret_cast<unsigned char*>(dst), row_bytes(), rows, &done) != 0) {
      const std::int64_t at = next_row_ + done;
      if (state_.eof) {
        input_error(path_, "file ends at row " + std::to_string(at) + ", expected " + std::to_string(info_.height) +
                               " rows (truncated PNG)");
      }
      input_error(path_, "corrupt PNG data at row " + std::to_string(at) + ": " + libpng_message());
    }
    if (next_row_ + rows == info_.height && png_c_read_end(png_) != 0) {
      input_error(path_, std::string(state_.eof ? "truncated PNG after the last row: "
                                                : "corrupt PNG after the last row: ") +
                             libpng_message());
    }
  }

  void do_rewind() override { check_same(open()); }

  PngState state_;
  FilePtr file_;
  png_structp png_ = nullptr;
  png_infop info_ptr_ = nullptr;
};

// ---------------------------------------------------------------------------
// TIFF
class TiffReader final : public ReaderBase {
 public:
  explicit TiffReader(fs::path path) : ReaderBase(std::move(path)), options_(messages_) {
    check_input_file(path_);
    try {
      info_ = open();
    } catch (...) {
      close();  // the destructor does not run when a constructor throws
      throw;
    }
  }
  ~TiffReader() override { close(); }

 private:
  void close() noexcept {
    if (tif_ != nullptr) TIFFClose(tif_);
    tif_ = nullptr;
  }

  [[noreturn]] void tiff_error(const std::string& what) const { input_error(path_, what + ": " + tiff_text()); }

  // libtiff's messages, without the "<file>: " prefix some of them carry
  // (the file is named at the start of our message already).
  std::string tiff_text() const {
    std::string text = messages_.text();
    const std::string prefix = path_.string() + ": ";
    for (std::size_t at = text.find(prefix); at != std::string::npos; at = text.find(prefix, at)) text.erase(at, prefix.size());
    return text;
  }

  ImageInfo open() {
    close();
    messages_.clear();
    // "m": no memory mapping; plain reads keep memory use to a strip.
    tif_ = TIFFOpenExt(path_.c_str(), "rm", options_.get());
    if (tif_ == nullptr) tiff_error("not a readable TIFF file");

    std::uint32_t width = 0, height = 0;
    std::uint16_t spp = 1, bps = 1, sample_format = SAMPLEFORMAT_UINT, photometric = PHOTOMETRIC_MINISBLACK;
    if (TIFFGetField(tif_, TIFFTAG_IMAGEWIDTH, &width) != 1 || TIFFGetField(tif_, TIFFTAG_IMAGELENGTH, &height) != 1) {
      tiff_error("TIFF without image dimensions");
    }
    TIFFGetFieldDefaulted(tif_, TIFFTAG_SAMPLESPERPIXEL, &spp);
    TIFFGetFieldDefaulted(tif_, TIFFTAG_BITSPERSAMPLE, &bps);
    TIFFGetFieldDefaulted(tif_, TIFFTAG_SAMPLEFORMAT, &sample_format);
    const bool has_photometric = TIFFGetField(tif_, TIFFTAG_PHOTOMETRIC, &photometric) == 1;
    std::uint16_t compression = COMPRESSION_NONE;
    TIFFGetFieldDefaulted(tif_, TIFFTAG_COMPRESSION, &compression);

    if (spp != 1) {
      input_error(path_, "unsupported TIFF with " + std::to_string(spp) +
                             " samples per pixel (expected 1: a single-channel grayscale image)");
    }
    if (has_photometric && photometric != PHOTOMETRIC_MINISBLACK) {
      input_error(path_, "unsupported TIFF photometric interpretation " + std::to_string(photometric) +
                             (photometric == PHOTOMETRIC_MINISWHITE ? " (min-is-white)" : "") +
                             " (expected min-is-black grayscale)");
    }
    if (bps != 8 && bps != 16) {
      input_error(path_, "unsupported TIFF bit depth " + std::to_string(bps) + " (expected 8 or 16)");
    }
    if (sample_format != SAMPLEFORMAT_UINT) {
      input_error(path_, "unsupported TIFF sample format " + std::to_string(sample_format) +
                             " (expected unsigned integer samples)");
    }
    if (TIFFIsCODECConfigured(compression) == 0) {
      input_error(path_, "unsupported TIFF compression " + std::to_string(compression) +
                             " (expected a compression this libtiff can decode, e.g. none, LZW, deflate)");
    }
    check_dimensions(path_, width, height);
    ImageInfo info{static_cast<int>(width), static_cast<std::int64_t>(height),
                   bps == 16 ? PixelFormat::Mono16 : PixelFormat::Mono8};
    const std::size_t rb = static_cast<std::size_t>(width) * bytes_per_pixel(info.format);

    tiled_ = TIFFIsTiled(tif_) != 0;
    if (tiled_) {
      std::uint32_t tw = 0, th = 0;
      if (TIFFGetField(tif_, TIFFTAG_TILEWIDTH, &tw) != 1 || TIFFGetField(tif_, TIFFTAG_TILELENGTH, &th) != 1 ||
          tw == 0 || th == 0) {
        input_error(path_, "tiled TIFF without a valid tile size (expected TileWidth and TileLength)");
      }
      const std::uint64_t tile_bytes = static_cast<std::uint64_t>(TIFFTileSize64(tif_));
      const std::uint64_t band_bytes = static_cast<std::uint64_t>(th) * rb;
      constexpr std::uint64_t kLimit = std::uint64_t{256} << 20;
      if (tile_bytes == 0 || tile_bytes > kLimit || band_bytes > kLimit ||
          tile_bytes != static_cast<std::uint64_t>(tw) * th * bytes_per_pixel(info.format)) {
        input_error(path_, "unsupported TIFF tile size " + std::to_string(tw) + "x" + std::to_string(th) +
                               " (expected tiles of at most 256 MiB per row of tiles)");
      }
      tile_w_ = tw;
      tile_h_ = th;
      tile_.assign(static_cast<std::size_t>(tile_bytes), std::byte{0});
      band_.assign(static_cast<std::size_t>(band_bytes), std::byte{0});
      band_index_ = -1;
    } else {
      if (static_cast<std::uint64_t>(TIFFScanlineSize64(tif_)) != rb) {
        input_error(path_, "unsupported TIFF layout: scanline of " + std::to_string(TIFFScanlineSize64(tif_)) +
                               " bytes (expected " + std::to_string(rb) + ")");
      }
    }
    return info;
  }

  void do_read(std::byte* dst, std::int64_t rows) override {
    const std::size_t rb = row_bytes();
    for (std::int64_t i = 0; i < rows; ++i) {
      const auto row = static_cast<std::uint32_t>(next_row_ + i);
      std::byte* out = dst + static_cast<std::size_t>(i) * rb;
      if (!tiled_) {
        if (TIFFReadScanline(tif_, out, row, 0) < 0) {
          input_error(path_, "corrupt or truncated TIFF at row " + std::to_string(row) + ": " + tiff_text());
        }
      } else {
        const std::int64_t band = row / tile_h_;
        if (band != band_index_) load_band(band);
        std::memcpy(out, band_.data() + static_cast<std::size_t>(row % tile_h_) * rb, rb);
      }
    }
  }

  // Decode one row of tiles into band_ (tile_h_ rows of the full width).
  void load_band(std::int64_t band) {
    band_index_ = -1;
    const std::size_t bpp = bytes_per_pixel(info_.format);
    const std::size_t rb = row_bytes();
    const auto y = static_cast<std::uint32_t>(band * tile_h_);
    const std::uint32_t rows_here = static_cast<std::uint32_t>(
        std::min<std::int64_t>(tile_h_, info_.height - static_cast<std::int64_t>(y)));
    for (std::uint32_t x = 0; x < static_cast<std::uint32_t>(info_.width); x += tile_w_) {
      const std::uint32_t tile = TIFFComputeTile(tif_, x, y, 0, 0);
      if (TIFFReadEncodedTile(tif_, tile, tile_.data(), static_cast<tmsize_t>(tile_.size())) < 0) {
        input_error(path_, "corrupt or truncated TIFF in the tile at row " + std::to_string(y) + ", column " +
                               std::to_string(x) + ": " + tiff_text());
      }
      const std::size_t cols = std::min<std::size_t>(tile_w_, static_cast<std::size_t>(info_.width) - x);
      for (std::uint32_t r = 0; r < rows_here; ++r) {
        std::memcpy(band_.data() + r * rb + x * bpp, tile_.data() + static_cast<std::size_t>(r) * tile_w_ * bpp,
                    cols * bpp);
      }
    }
    band_index_ = band;
  }

  void do_rewind() override { check_same(open()); }

  detail::TiffMessages messages_;
  detail::TiffOpenOptions options_;
  TIFF* tif_ = nullptr;
  bool tiled_ = false;
  std::uint32_t tile_w_ = 0, tile_h_ = 0;
  std::vector<std::byte> tile_, band_;
  std::int64_t band_index_ = -1;
};

// Format from the first bytes, for files whose extension says nothing.
ImageFileFormat sniff(const fs::path& path) {
  FilePtr f(std::fopen(path.c_str(), "rbe"));
  if (!f) return ImageFileFormat::Auto;
  unsigned char b[8] = {};
  const size_t n = std::fread(b, 1, sizeof b, f.get());
  if (n >= 8 && png_sig_cmp(b, 0, 8) == 0) return ImageFileFormat::Png;
  if (n >= 4 && ((b[0] == 'I' && b[1] == 'I' && (b[2] == 42 || b[2] == 43) && b[3] == 0) ||
                 (b[0] == 'M' && b[1] == 'M' && b[2] == 0 && (b[3] == 42 || b[3] == 43)))) {
    return ImageFileFormat::Tiff;
  }
  if (n >= 3 && b[0] == 'P' && b[1] == '5' && std::isspace(b[2])) return ImageFileFormat::Pgm;
  return ImageFileFormat::Auto;
}

}  // namespace

ImageFileFormat format_from_path(const std::filesystem::path& path) {
  const std::string ext = lower(path.extension().string());
  if (ext == ".tif" || ext == ".tiff") return ImageFileFormat::Tiff;
  if (ext == ".png") return ImageFileFormat::Png;
  if (ext == ".pgm") return ImageFileFormat::Pgm;
  if (ext == ".raw" || ext == ".bin") return ImageFileFormat::Raw;
  return ImageFileFormat::Auto;  // unknown: open_image() looks at the content
}

std::unique_ptr<ImageReader> open_image(const std::filesystem::path& path, ImageFileFormat format,
                                        const std::optional<RawGeometry>& raw) {
  if (format == ImageFileFormat::Auto) format = format_from_path(path);
  if (format == ImageFileFormat::Auto) {
    check_input_file(path);
    format = sniff(path);
    if (format == ImageFileFormat::Auto) {
      if (raw) {
        format = ImageFileFormat::Raw;
      } else {
        input_error(path, "cannot tell the image format from the extension '" + path.extension().string() +
                              "' or the content (expected .tif, .tiff, .png, .pgm, .raw or .bin)");
      }
    }
  }
  switch (format) {
    case ImageFileFormat::Tiff: return std::make_unique<TiffReader>(path);
    case ImageFileFormat::Png: return std::make_unique<PngReader>(path);
    case ImageFileFormat::Pgm: return open_pgm(path);
    case ImageFileFormat::Raw: return open_raw(path, raw);
    case ImageFileFormat::Auto: break;
  }
  input_error(path, "unknown image format (expected TIFF, PNG, PGM or raw)");
}

}  // namespace stripeline::io
