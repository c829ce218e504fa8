// Streaming image readers. Each reader keeps one open file and decodes rows in
// order straight into the caller's buffer; memory use is a few rows (or, for a
// tiled TIFF, one row of tiles), whatever the height of the image.
//
//  - TIFF: tiff_reader.cpp (strips and tiles decoded in parallel, every page
//    of a multi-page file). libtiff messages never reach stderr: they go into
//    the InputError.
//  - PNG (libpng): 8/16-bit grayscale, not interlaced (Adam7 cannot be
//    streamed). With 4 threads or more to run on and a filtered image that
//    fits in 256 MiB, each pass inflates the whole stream with libdeflate and
//    un-filters rows into the caller's buffer (about twice libpng's speed:
//    png_fast.h); else libpng streams it row by row. Palette, RGB and alpha images are rejected. libpng errors
//    longjmp into small functions that own no C++ objects and become
//    InputError in the caller.
//  - PGM: binary P5 with comments; maxval <= 255 is Mono8, else Mono16
//    (big-endian on disk).
//  - raw: headerless rows; 16-bit is little-endian.
//  PGM and raw rows are read with positioned reads straight into the caller's
//  buffer, in parallel chunks when large (reader_common.cpp).
//
// format_from_path() returns Auto for an extension it does not know;
// open_image() then looks at the first bytes (TIFF, PNG, P5 signatures), and
// falls back to raw when the caller gave a RawGeometry.
#include "io/image_reader.h"

#include "io/channel_mix.h"

#include <png.h>
#include <tbb/task_arena.h>
#include <tiffio.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cmath>
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
#include "io/png_errors.h"
#include "io/png_fast.h"
#include "io/reader_common.h"

namespace stripeline::io {
namespace {

namespace fs = std::filesystem;

using detail::check_dimensions;
using detail::check_input_file;
using detail::input_error;
using detail::ReaderBase;
using detail::swap16;

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
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
  void open() { file_ = open_for_reading(path_); }
  void do_read(std::byte* dst, std::int64_t rows) override {
    // Positioned reads straight into dst (in parallel chunks when large).
    const std::size_t rb = row_bytes();
    const std::size_t bytes = static_cast<std::size_t>(rows) * rb;
    const std::uint64_t at = static_cast<std::uint64_t>(offset_) + static_cast<std::uint64_t>(next_row_) * rb;
    const int fd = ::fileno(file_.get());
    std::size_t got = detail::pread_parallel(fd, dst, bytes, at);
    if (got != bytes) {
      // Once more from where it stopped, on this thread: tells an error from the end of the file.
      errno = 0;
      got += detail::pread_full(fd, dst + got, bytes - got, at + got);
      const int err = errno;
      if (got != bytes) {
        const std::int64_t row = next_row_ + static_cast<std::int64_t>(got / rb);
        if (err != 0) input_error(path_, "read error at row " + std::to_string(row) + ": " + std::strerror(err));
        input_error(path_, "file ends at row " + std::to_string(row) + ", expected " + std::to_string(info_.height) +
                               " rows (truncated?)");
      }
    }
    if (swap_) swap16(dst, static_cast<std::size_t>(rows) * static_cast<std::size_t>(info_.width));
  }
  void do_rewind() override {}
  void do_skip(std::int64_t) override {}  // rows are read by offset

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
  info.significant_bits = detail::significant_bits_of_max(info.format, static_cast<double>(maxval), BitsOrigin::PgmMaxval);
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
struct PngState : PngErrorState {
  std::FILE* file = nullptr;
  bool eof = false;
  bool io_error = false;
};

struct PngHeader {
  png_uint_32 width = 0, height = 0;
  int bit_depth = 0, color_type = 0, interlace = 0;
};

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
  // An ancillary chunk (tEXt, zTXt, iCCP ...) is read whole into memory of
  // the size its header claims: 2 GB for a tiny file (fuzz_image). Ours carry
  // a short description; larger ones are skipped by libpng (a benign error).
  png_set_chunk_malloc_max(png, 16u << 20);
  png_set_chunk_cache_max(png, 1000);
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
  PngReader(fs::path path, ChannelMix channel) : ReaderBase(std::move(path)), channel_(std::move(channel)) {
    file_bytes_ = check_input_file(path_);
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

  // The chunks png_read_info() reads (up to the first IDAT) must lie within
  // the file: libpng allocates an ancillary chunk's claimed length before
  // reading it (a 2 GB tEXt in a 200-byte file, found by fuzz_image), and
  // png_set_chunk_malloc_max does not bound tEXt in Debian's libpng 1.6.39.
  void check_chunks_before_idat() {
    std::FILE* f = file_.get();
    if (::fseeko(f, 0, SEEK_END) != 0) return;  // not seekable (a pipe): libpng's own checks only
    const auto size = static_cast<std::uint64_t>(::ftello(f));
    std::uint64_t pos = 8;
    while (pos + 8 <= size) {
      unsigned char h[8];
      if (::fseeko(f, static_cast<off_t>(pos), SEEK_SET) != 0 || std::fread(h, 1, 8, f) != 8) break;
      const std::uint64_t length = (std::uint64_t{h[0]} << 24) | (std::uint64_t{h[1]} << 16) | (std::uint64_t{h[2]} << 8) | h[3];
      std::string type(reinterpret_cast<const char*>(h + 4), 4);
      for (auto& c : type)
        if (!std::isalpha(static_cast<unsigned char>(c))) c = '?';
      if (type == "IDAT") break;  // image data is streamed, never allocated whole
      if (pos + 12 + length > size)
        input_error(path_, "PNG chunk '" + type + "' at byte " + std::to_string(pos) + " claims " + std::to_string(length) +
                               " bytes, beyond the end of the file (" + std::to_string(size) + " bytes)");
      pos += 12 + length;
    }
    if (::fseeko(f, 8, SEEK_SET) != 0) input_error(path_, "cannot seek back to the first PNG chunk");
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
    check_chunks_before_idat();
    state_ = PngState{};
    state_.file = file_.get();
    png_ = png_create_read_struct(PNG_LIBPNG_VER_STRING, static_cast<PngErrorState*>(&state_), png_error_cb, png_warning_cb);
    if (png_ == nullptr) throw RuntimeFailure(path_.string() + ": cannot create a libpng reader");
    info_ptr_ = png_create_info_struct(png_);
    if (info_ptr_ == nullptr) throw RuntimeFailure(path_.string() + ": cannot create a libpng info struct");
    png_set_read_fn(png_, &state_, png_read_cb);

    PngHeader h;
    if (png_c_read_header(png_, info_ptr_, &h) != 0) {
      input_error(path_, (state_.eof ? "truncated PNG header: " : "corrupt PNG header: ") + libpng_message());
    }
    // Colour and alpha are read row by row through libpng and mixed to grey
    // (channel_mix.h); palette images have no laser channel to pick.
    switch (h.color_type) {
      case PNG_COLOR_TYPE_GRAY: channels_ = 1; break;
      case PNG_COLOR_TYPE_GRAY_ALPHA: channels_ = 2; break;
      case PNG_COLOR_TYPE_RGB: channels_ = 3; break;
      case PNG_COLOR_TYPE_RGB_ALPHA: channels_ = 4; break;
      default:
        input_error(path_, std::string("unsupported PNG color type ") + png_color_name(h.color_type) +
                               " (expected 8- or 16-bit grayscale, grayscale+alpha, RGB or RGBA)");
    }
    if (h.bit_depth != 8 && h.bit_depth != 16) {
      input_error(path_, "unsupported PNG bit depth " + std::to_string(h.bit_depth) + " (expected 8 or 16)");
    }
    if (h.interlace != PNG_INTERLACE_NONE) {
      input_error(path_, "interlaced (Adam7) PNG cannot be streamed row by row (expected a non-interlaced PNG)");
    }
    check_dimensions(path_, h.width, h.height);
    {  // a tiny file claiming a huge image is refused before anything is sized by its header
      const long double decoded = (static_cast<long double>(h.width) * channels_ * (h.bit_depth / 8) + 1.0L) * h.height;
      detail::check_claimed_size(path_, h.width, h.height, decoded, decoded / 1032.0L, file_bytes_, "Deflate expands at most 1032:1");
    }
    ImageInfo info{static_cast<int>(h.width), static_cast<std::int64_t>(h.height),
                   h.bit_depth == 16 ? PixelFormat::Mono16 : PixelFormat::Mono8};
    if (channels_ > 1) colour_row_.assign(static_cast<std::size_t>(h.width) * static_cast<std::size_t>(channels_) * (h.bit_depth / 8), std::byte{0});
    // A recording's frame height, in a tEXt "Description" before the image data.
    png_textp text = nullptr;
    const int texts = png_get_text(png_, info_ptr_, &text, nullptr);
    for (int i = 0; i < texts; ++i) {
      if (text[i].key != nullptr && text[i].text != nullptr && std::strcmp(text[i].key, "Description") == 0)
        info.recorded_frame_height = detail::recorded_frame_height(text[i].text, info.width);
    }
    // Significant bits: the sBIT chunk (colour: its widest channel), else the description's.
    png_color_8p sbit = nullptr;
    if (png_get_sBIT(png_, info_ptr_, &sbit) != 0 && sbit != nullptr) {
      const int b = channels_ >= 3 ? std::max({sbit->red, sbit->green, sbit->blue}) : sbit->gray;
      if (b >= 1 && b <= 16) info.significant_bits = detail::significant_bits_of_max(info.format, std::ldexp(1.0, b) - 1.0, BitsOrigin::PngSbit);
    }
    for (int i = 0; i < texts && !info.significant_bits.known() && info.format == PixelFormat::Mono16; ++i) {
      if (text[i].key != nullptr && text[i].text != nullptr && std::strcmp(text[i].key, "Description") == 0)
        info.significant_bits = detail::recorded_significant_bits(text[i].text);
    }
    const int swap = h.bit_depth == 16 && std::endian::native == std::endian::little ? 1 : 0;
    if (png_c_start(png_, info_ptr_, swap) != 0) input_error(path_, "corrupt PNG: " + libpng_message());
    return info;
  }

  void do_read(std::byte* dst, std::int64_t rows) override {
    const std::size_t rb = row_bytes();
    // The whole-stream path inflates about twice as fast, but holds the pass
    // until the whole image is inflated and moves it through memory twice:
    // on 2 cores the processing then lost more than the decode gained
    // (bench/README.md). It pays where cores are to spare.
    if (mode_ == Mode::Unknown)
      mode_ = channels_ == 1 && next_row_ == 0 && tbb::this_task_arena::max_concurrency() >= 4 && inflate_whole() ? Mode::Fast : Mode::Libpng;
    if (channels_ > 1) {
      read_colour_rows(dst, rows);
      return;
    }
    if (mode_ == Mode::Fast) {
      detail::png_unfilter(filtered_.data() + static_cast<std::size_t>(next_row_) * (rb + 1), dst, previous_.data(), rb,
                           bytes_per_pixel(info_.format), rows);
      if (info_.format == PixelFormat::Mono16 && std::endian::native == std::endian::little)
        swap16(dst, static_cast<std::size_t>(rows) * static_cast<std::size_t>(info_.width));
      return;
    }
    std::int64_t done = 0;
    if (png_c_read_rows(png_, reinterpret_cast<unsigned char*>(dst), row_bytes(), rows, &done) != 0) fail_at(next_row_ + done);
    check_end(rows);
  }

  void fail_at(std::int64_t at) {
    {
      if (state_.eof) {
        input_error(path_, "file ends at row " + std::to_string(at) + ", expected " + std::to_string(info_.height) +
                               " rows (truncated PNG)");
      }
      input_error(path_, "corrupt PNG data at row " + std::to_string(at) + ": " + libpng_message());
    }
  }

  void check_end(std::int64_t rows) {
    if (next_row_ + rows == info_.height && png_c_read_end(png_) != 0) {
      input_error(path_, std::string(state_.eof ? "truncated PNG after the last row: "
                                                : "corrupt PNG after the last row: ") +
                             libpng_message());
    }
  }

  // One row at a time through the colour row buffer, mixed to grey.
  void read_colour_rows(std::byte* dst, std::int64_t rows) {
    const std::size_t rb = row_bytes();
    for (std::int64_t r = 0; r < rows; ++r) {
      std::int64_t done = 0;
      if (png_c_read_rows(png_, reinterpret_cast<unsigned char*>(colour_row_.data()), colour_row_.size(), 1, &done) != 0)
        fail_at(next_row_ + r);
      mix_to_grey(colour_row_.data(), channels_, static_cast<std::size_t>(info_.width), info_.format == PixelFormat::Mono16, channel_,
                  dst + static_cast<std::size_t>(r) * rb);
    }
    check_end(rows);
  }

  void do_rewind() override {
    check_same(open());
    mode_ = Mode::Unknown;
  }

  // The whole stream inflated by libdeflate (png_fast.h); false: use libpng.
  bool inflate_whole() {
    const std::size_t rb = row_bytes();
    const std::size_t bytes = (rb + 1) * static_cast<std::size_t>(info_.height);
    if (!detail::png_inflate_whole(path_, bytes, filtered_)) return false;
    for (std::size_t at = 0; at < bytes; at += rb + 1)
      if (static_cast<unsigned>(filtered_[at]) > 4) return false;  // libpng names the bad filter
    previous_.assign(rb, std::byte{0});
    return true;
  }

  enum class Mode { Unknown, Fast, Libpng };
  Mode mode_ = Mode::Unknown;  // decided at the first read of a pass
  std::vector<std::byte> filtered_, previous_;
  ChannelMix channel_;
  int channels_ = 1;                  // samples per pixel in the file (2-4: mixed to grey)
  std::uintmax_t file_bytes_ = 0;     // the file's size when opened (check_claimed_size)
  std::vector<std::byte> colour_row_;  // one file row of a colour image
  PngState state_;
  FilePtr file_;
  png_structp png_ = nullptr;
  png_infop info_ptr_ = nullptr;
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
  return open_image(path, format, raw, ImageReadOptions{});
}

std::unique_ptr<ImageReader> open_image(const std::filesystem::path& path, ImageFileFormat format,
                                        const std::optional<RawGeometry>& raw, const ImageReadOptions& options) {
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
    case ImageFileFormat::Tiff:
      check_input_file(path);
      return detail::tiff_is_colour(path) ? detail::open_colour_tiff(path, options) : detail::open_tiff(path, options);
    case ImageFileFormat::Png: return std::make_unique<PngReader>(path, options.channel);
    case ImageFileFormat::Pgm: return open_pgm(path);
    case ImageFileFormat::Raw: return open_raw(path, raw);
    case ImageFileFormat::Auto: break;
  }
  input_error(path, "unknown image format (expected TIFF, PNG, PGM or raw)");
}

}  // namespace stripeline::io
