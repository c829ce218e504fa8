// Whole-image writers (PNG, TIFF, PGM), each through an AtomicFile: the image
// appears under its final name only once it is complete and on disk.
#include "io/image_writer.h"

#include <png.h>
#include <tiffio.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cerrno>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/errors.h"
#include "io/atomic_file.h"
#include "io/png_errors.h"
#include "io/tiff_support.h"

namespace stripeline::io {
namespace {

// The significant bits a 16-bit image's tags state (9..15), or 0: none.
int written_significant_bits(PixelFormat format, const ImageWriteOptions& options) {
  return format == PixelFormat::Mono16 && options.significant_bits >= 9 && options.significant_bits <= 15 ? options.significant_bits : 0;
}

namespace fs = std::filesystem;

[[noreturn]] void input_error(const fs::path& path, const std::string& message) {
  throw InputError(path.string() + ": " + message);
}

enum class OutFormat { Png, Tiff, Pgm };

OutFormat out_format(const fs::path& path) {
  std::string ext = path.extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (ext == ".png") return OutFormat::Png;
  if (ext == ".tif" || ext == ".tiff") return OutFormat::Tiff;
  if (ext == ".pgm") return OutFormat::Pgm;
  input_error(path, "unsupported image extension '" + path.extension().string() +
                        "' (expected .png, .tif, .tiff or .pgm)");
}

// ---------------------------------------------------------------------------
// PNG. As in the reader: libpng may longjmp only out of png_c_write, which
// holds no object with a destructor.
struct PngWriteState : PngErrorState {
  std::FILE* file = nullptr;
  bool io_error = false;
  int io_errno = 0;
};

void png_write_cb(png_structp png, png_bytep data, size_t length) {
  auto* state = static_cast<PngWriteState*>(png_get_io_ptr(png));
  errno = 0;
  if (std::fwrite(data, 1, length, state->file) != length) {
    state->io_error = true;
    state->io_errno = errno;
    png_error(png, "write failed");
  }
}

void png_flush_cb(png_structp) {}

int png_c_write(png_structp png, png_infop info, const unsigned char* pixels, png_uint_32 width, png_uint_32 height,
                int bit_depth, size_t row_bytes, int level, const char* description, int significant_bits) {
  if (setjmp(png_jmpbuf(png))) return 1;
  png_set_user_limits(png, 0x7fffffffU, 0x7fffffffU);
  png_set_IHDR(png, info, width, height, bit_depth, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_set_compression_level(png, level);
  if (level == 0) png_set_filter(png, PNG_FILTER_TYPE_BASE, PNG_FILTER_NONE);
  if (description != nullptr) {
    png_text text{};
    text.compression = PNG_TEXT_COMPRESSION_NONE;
    text.key = const_cast<char*>("Description");
    text.text = const_cast<char*>(description);
    png_set_text(png, info, &text, 1);
  }
  if (significant_bits > 0) {
    png_color_8 sbit{};
    sbit.gray = static_cast<png_byte>(significant_bits);
    png_set_sBIT(png, info, &sbit);
  }
  png_write_info(png, info);
  if (bit_depth == 16 && std::endian::native == std::endian::little) png_set_swap(png);  // PNG is big-endian
  for (png_uint_32 y = 0; y < height; ++y) png_write_row(png, pixels + static_cast<size_t>(y) * row_bytes);
  png_write_end(png, info);
  return 0;
}

void write_png(AtomicFile& file, const fs::path& path, const void* pixels, int width, std::int64_t height,
               PixelFormat format, const ImageWriteOptions& options) {
  if (height > 0x7fffffff) {
    input_error(path, "image height " + std::to_string(height) + " is too large for PNG (expected <= 2^31-1)");
  }
  PngWriteState state;
  state.file = file.handle();
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, static_cast<PngErrorState*>(&state), png_error_cb, png_warning_cb);
  if (png == nullptr) throw RuntimeFailure(path.string() + ": cannot create a libpng writer");
  png_infop info = png_create_info_struct(png);
  if (info == nullptr) {
    png_destroy_write_struct(&png, nullptr);
    throw RuntimeFailure(path.string() + ": cannot create a libpng info struct");
  }
  png_set_write_fn(png, &state, png_write_cb, png_flush_cb);
  const int bit_depth = format == PixelFormat::Mono16 ? 16 : 8;
  const int failed = png_c_write(png, info, static_cast<const unsigned char*>(pixels), static_cast<png_uint_32>(width),
                                 static_cast<png_uint_32>(height), bit_depth,
                                 static_cast<size_t>(width) * bytes_per_pixel(format), options.compress ? 6 : 0,
                                 options.description.empty() ? nullptr : options.description.c_str(),
                                 written_significant_bits(format, options));
  png_destroy_write_struct(&png, &info);
  if (failed != 0) {
    if (state.io_error) {
      throw RuntimeFailure(path.string() + ": write failed: " +
                           (state.io_errno != 0 ? std::strerror(state.io_errno) : "short write"));
    }
    throw RuntimeFailure(path.string() + ": libpng failed: " + state.message);
  }
}

// ---------------------------------------------------------------------------
// TIFF: libtiff writes through its own descriptor, a dup() of the
// AtomicFile's, and closes it; the AtomicFile then fsyncs and renames.
class TiffHandle {
 public:
  explicit TiffHandle(TIFF* tif) : tif_(tif) {}
  ~TiffHandle() { close(); }
  TiffHandle(const TiffHandle&) = delete;
  TiffHandle& operator=(const TiffHandle&) = delete;
  TiffHandle(TiffHandle&& o) noexcept : tif_(std::exchange(o.tif_, nullptr)) {}
  TIFF* get() const { return tif_; }
  void close() noexcept {
    if (tif_ != nullptr) TIFFClose(tif_);
    tif_ = nullptr;
  }

 private:
  TIFF* tif_;
};

// libtiff on an AtomicFile's descriptor (dup'd: libtiff closes its own),
// BigTIFF past ~3.75 GiB of pixels.
TiffHandle open_tiff_for_writing(AtomicFile& file, const fs::path& path, std::uint64_t pixel_bytes, detail::TiffMessages& messages,
                                 detail::TiffOpenOptions& tiff_options) {
  const bool big = pixel_bytes > 0xF0000000ULL;  // classic TIFF addresses 4 GiB; go BigTIFF with a safety margin
  std::fflush(file.handle());
  const int fd = ::dup(::fileno(file.handle()));
  if (fd < 0) throw RuntimeFailure(path.string() + ": dup failed: " + std::strerror(errno));
  TiffHandle tif(TIFFFdOpenExt(fd, path.c_str(), big ? "w8" : "w", tiff_options.get()));
  if (tif.get() == nullptr) {
    ::close(fd);
    throw RuntimeFailure(path.string() + ": libtiff cannot open the file for writing: " + messages.text());
  }
  return tif;
}

// Strips of about 64 KiB: small enough to stream, large enough for deflate
// (unless the caller says how many rows: a recording's frames).
std::uint32_t rows_per_strip(const ImageWriteOptions& options, std::size_t row_bytes, std::int64_t height) {
  return static_cast<std::uint32_t>(std::clamp<std::int64_t>(
      options.rows_per_strip > 0 ? static_cast<std::int64_t>(options.rows_per_strip) : static_cast<std::int64_t>((64 << 10) / row_bytes), 1,
      height));
}

void write_tiff(AtomicFile& file, const fs::path& path, const void* pixels, int width, std::int64_t height,
                PixelFormat format, const ImageWriteOptions& options) {
  if (height > 0xffffffffLL) {
    input_error(path, "image height " + std::to_string(height) + " is too large for TIFF (expected <= 2^32-1)");
  }
  const std::size_t row_bytes = static_cast<std::size_t>(width) * bytes_per_pixel(format);
  detail::TiffMessages messages;
  detail::TiffOpenOptions tiff_options(messages);
  TiffHandle tif = open_tiff_for_writing(file, path, static_cast<std::uint64_t>(row_bytes) * static_cast<std::uint64_t>(height), messages,
                                         tiff_options);
  TIFF* t = tif.get();
  const std::uint32_t rows_per_strip = io::rows_per_strip(options, row_bytes, height);
  const bool ok = TIFFSetField(t, TIFFTAG_IMAGEWIDTH, static_cast<std::uint32_t>(width)) == 1 &&
                  TIFFSetField(t, TIFFTAG_IMAGELENGTH, static_cast<std::uint32_t>(height)) == 1 &&
                  TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, static_cast<std::uint16_t>(format == PixelFormat::Mono16 ? 16 : 8)) == 1 &&
                  TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, static_cast<std::uint16_t>(1)) == 1 &&
                  TIFFSetField(t, TIFFTAG_SAMPLEFORMAT, static_cast<std::uint16_t>(SAMPLEFORMAT_UINT)) == 1 &&
                  TIFFSetField(t, TIFFTAG_PHOTOMETRIC, static_cast<std::uint16_t>(PHOTOMETRIC_MINISBLACK)) == 1 &&
                  TIFFSetField(t, TIFFTAG_PLANARCONFIG, static_cast<std::uint16_t>(PLANARCONFIG_CONTIG)) == 1 &&
                  TIFFSetField(t, TIFFTAG_ROWSPERSTRIP, rows_per_strip) == 1 &&
                  TIFFSetField(t, TIFFTAG_SOFTWARE, "stripeline") == 1 &&
                  TIFFSetField(t, TIFFTAG_COMPRESSION,
                               static_cast<std::uint16_t>(options.compress ? COMPRESSION_ADOBE_DEFLATE
                                                                           : COMPRESSION_NONE)) == 1 &&
                  (!options.compress ||
                   TIFFSetField(t, TIFFTAG_PREDICTOR, static_cast<std::uint16_t>(PREDICTOR_HORIZONTAL)) == 1) &&
                  (options.description.empty() ||
                   TIFFSetField(t, TIFFTAG_IMAGEDESCRIPTION, options.description.c_str()) == 1) &&
                  (written_significant_bits(format, options) == 0 ||
                   TIFFSetField(t, TIFFTAG_MAXSAMPLEVALUE, static_cast<std::uint16_t>((1u << written_significant_bits(format, options)) - 1u)) == 1);
  if (!ok) throw RuntimeFailure(path.string() + ": libtiff refused the image tags: " + messages.text());

  // libtiff may modify the buffer it is given (predictor, byte swapping):
  // hand it a copy of each strip, never the caller's pixels.
  std::vector<unsigned char> strip(rows_per_strip * row_bytes);
  const auto* src = static_cast<const unsigned char*>(pixels);
  const std::uint32_t strips = TIFFNumberOfStrips(t);
  for (std::uint32_t s = 0; s < strips; ++s) {
    const std::int64_t first = static_cast<std::int64_t>(s) * rows_per_strip;
    const std::int64_t rows = std::min<std::int64_t>(rows_per_strip, height - first);
    const std::size_t bytes = static_cast<std::size_t>(rows) * row_bytes;
    std::memcpy(strip.data(), src + static_cast<std::size_t>(first) * row_bytes, bytes);
    if (TIFFWriteEncodedStrip(t, s, strip.data(), static_cast<tmsize_t>(bytes)) < 0) {
      throw RuntimeFailure(path.string() + ": writing TIFF strip " + std::to_string(s) + " failed: " + messages.text());
    }
  }
  if (TIFFFlush(t) != 1 || !messages.errors.empty()) {
    throw RuntimeFailure(path.string() + ": writing the TIFF directory failed: " + messages.text());
  }
  tif.close();
  if (!messages.errors.empty()) throw RuntimeFailure(path.string() + ": closing the TIFF failed: " + messages.text());
}

// ---------------------------------------------------------------------------
void write_pgm(AtomicFile& file, const void* pixels, int width, std::int64_t height, PixelFormat format, int significant_bits) {
  const bool wide = format == PixelFormat::Mono16;
  const std::string header = "P5\n" + std::to_string(width) + " " + std::to_string(height) + "\n" +
                             (significant_bits > 0 ? std::to_string((1u << significant_bits) - 1u) : wide ? "65535" : "255") + "\n";
  file.write(header.data(), header.size());
  const std::size_t row_bytes = static_cast<std::size_t>(width) * bytes_per_pixel(format);
  const auto* src = static_cast<const unsigned char*>(pixels);
  const std::size_t total = row_bytes * static_cast<std::size_t>(height);
  if (!wide || std::endian::native == std::endian::big) {
    file.write(src, total);
    return;
  }
  // 16-bit PGM is big-endian: swap through a bounded buffer.
  std::vector<unsigned char> buffer(std::min<std::size_t>(total, std::size_t{1} << 20));
  for (std::size_t done = 0; done < total;) {
    const std::size_t n = std::min(buffer.size(), total - done);
    for (std::size_t i = 0; i < n; i += 2) {
      buffer[i] = src[done + i + 1];
      buffer[i + 1] = src[done + i];
    }
    file.write(buffer.data(), n);
    done += n;
  }
}

}  // namespace

void write_image(const std::filesystem::path& path, const void* pixels, int width, std::int64_t height,
                 PixelFormat format) {
  write_image(path, pixels, width, height, format, ImageWriteOptions{});
}

void write_image(const std::filesystem::path& path, const void* pixels, int width, std::int64_t height, PixelFormat format,
                 const ImageWriteOptions& options) {
  const OutFormat out = out_format(path);
  if (format != PixelFormat::Mono8 && format != PixelFormat::Mono16) {
    input_error(path, "unsupported pixel format " + std::to_string(static_cast<int>(format)) +
                          " (expected Mono8 or Mono16)");
  }
  if (width <= 0 || width > kMaxWidth || height <= 0) {
    input_error(path, "cannot write a " + std::to_string(width) + "x" + std::to_string(height) +
                          " image (expected width 1.." + std::to_string(kMaxWidth) + " and height >= 1)");
  }
  if (pixels == nullptr) input_error(path, "no pixels to write (null pointer)");
  if (out == OutFormat::Png && height > 0x7fffffff) {
    input_error(path, "image height " + std::to_string(height) + " is too large for PNG (expected <= 2^31-1)");
  }
  if (out == OutFormat::Tiff && height > 0xffffffffLL) {
    input_error(path, "image height " + std::to_string(height) + " is too large for TIFF (expected <= 2^32-1)");
  }

  AtomicFile file(path);
  if (out == OutFormat::Tiff) file.require_seekable("a TIFF (libtiff writes its directory after the pixels)");
  switch (out) {
    case OutFormat::Png: write_png(file, path, pixels, width, height, format, options); break;
    case OutFormat::Tiff: write_tiff(file, path, pixels, width, height, format, options); break;
    case OutFormat::Pgm: write_pgm(file, pixels, width, height, format, written_significant_bits(format, options)); break;
  }
  file.commit();
}

void write_float_planes_tiff(const std::filesystem::path& path, const float* const* planes, int plane_count, int width,
                             std::int64_t height, const ImageWriteOptions& options) {
  if (plane_count < 1 || plane_count > 16 || width <= 0 || height <= 0) {
    throw std::invalid_argument(path.string() + ": write_float_planes_tiff needs 1..16 planes and a non-empty image");
  }
  if (height > 0xffffffffLL) {
    input_error(path, "image height " + std::to_string(height) + " is too large for TIFF (expected <= 2^32-1)");
  }
  AtomicFile file(path);
  file.require_seekable("a TIFF (libtiff writes its directory after the pixels)");
  const std::size_t row_bytes = static_cast<std::size_t>(width) * sizeof(float);
  detail::TiffMessages messages;
  detail::TiffOpenOptions tiff_options(messages);
  TiffHandle tif = open_tiff_for_writing(
      file, path, static_cast<std::uint64_t>(row_bytes) * static_cast<std::uint64_t>(height) * static_cast<std::uint64_t>(plane_count), messages,
      tiff_options);
  TIFF* t = tif.get();
  const std::uint32_t rows_per_strip = io::rows_per_strip(options, row_bytes, height);
  std::vector<std::uint16_t> extra(static_cast<std::size_t>(plane_count - 1), EXTRASAMPLE_UNSPECIFIED);
  const bool ok = TIFFSetField(t, TIFFTAG_IMAGEWIDTH, static_cast<std::uint32_t>(width)) == 1 &&
                  TIFFSetField(t, TIFFTAG_IMAGELENGTH, static_cast<std::uint32_t>(height)) == 1 &&
                  TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, static_cast<std::uint16_t>(32)) == 1 &&
                  TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, static_cast<std::uint16_t>(plane_count)) == 1 &&
                  TIFFSetField(t, TIFFTAG_SAMPLEFORMAT, static_cast<std::uint16_t>(SAMPLEFORMAT_IEEEFP)) == 1 &&
                  TIFFSetField(t, TIFFTAG_PHOTOMETRIC, static_cast<std::uint16_t>(PHOTOMETRIC_MINISBLACK)) == 1 &&
                  TIFFSetField(t, TIFFTAG_PLANARCONFIG, static_cast<std::uint16_t>(PLANARCONFIG_SEPARATE)) == 1 &&
                  (extra.empty() ||
                   TIFFSetField(t, TIFFTAG_EXTRASAMPLES, static_cast<std::uint16_t>(extra.size()), extra.data()) == 1) &&
                  TIFFSetField(t, TIFFTAG_ROWSPERSTRIP, rows_per_strip) == 1 &&
                  TIFFSetField(t, TIFFTAG_SOFTWARE, "stripeline") == 1 &&
                  TIFFSetField(t, TIFFTAG_COMPRESSION,
                               static_cast<std::uint16_t>(options.compress ? COMPRESSION_ADOBE_DEFLATE : COMPRESSION_NONE)) == 1 &&
                  (options.description.empty() || TIFFSetField(t, TIFFTAG_IMAGEDESCRIPTION, options.description.c_str()) == 1);
  if (!ok) throw RuntimeFailure(path.string() + ": libtiff refused the image tags: " + messages.text());

  // Strips of plane k follow those of plane k-1 (TIFF's separate planes).
  std::vector<unsigned char> strip(rows_per_strip * row_bytes);
  const std::uint32_t per_plane = static_cast<std::uint32_t>((height + rows_per_strip - 1) / rows_per_strip);
  for (int k = 0; k < plane_count; ++k) {
    const auto* src = reinterpret_cast<const unsigned char*>(planes[k]);
    for (std::uint32_t s = 0; s < per_plane; ++s) {
      const std::int64_t first = static_cast<std::int64_t>(s) * rows_per_strip;
      const std::int64_t rows = std::min<std::int64_t>(rows_per_strip, height - first);
      const std::size_t bytes = static_cast<std::size_t>(rows) * row_bytes;
      std::memcpy(strip.data(), src + static_cast<std::size_t>(first) * row_bytes, bytes);
      const std::uint32_t index = static_cast<std::uint32_t>(k) * per_plane + s;
      if (TIFFWriteEncodedStrip(t, index, strip.data(), static_cast<tmsize_t>(bytes)) < 0) {
        throw RuntimeFailure(path.string() + ": writing TIFF strip " + std::to_string(index) + " failed: " + messages.text());
      }
    }
  }
  if (TIFFFlush(t) != 1 || !messages.errors.empty()) {
    throw RuntimeFailure(path.string() + ": writing the TIFF directory failed: " + messages.text());
  }
  tif.close();
  if (!messages.errors.empty()) throw RuntimeFailure(path.string() + ": closing the TIFF failed: " + messages.text());
  file.commit();
}

}  // namespace stripeline::io
