#include "io/float_tiff_writer.h"

#include <tiffio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "core/errors.h"
#include "io/atomic_file.h"
#include "io/tiff_support.h"

namespace stripeline::io {

void write_float_tiff(const std::filesystem::path& path, const float* pixels, int width, std::int64_t height, const std::string& description) {
  if (width <= 0 || height <= 0 || height > 0xffffffffLL)
    throw InputError(path.string() + ": a range map of " + std::to_string(width) + "x" + std::to_string(height) +
                     " cannot be written (expected a non-empty image under 2^32 rows)");
  AtomicFile file(path);
  detail::TiffMessages messages;
  detail::TiffOpenOptions options(messages);
  std::fflush(file.handle());
  const int fd = ::dup(::fileno(file.handle()));
  if (fd < 0) throw RuntimeFailure(path.string() + ": dup failed: " + std::strerror(errno));
  TIFF* t = TIFFFdOpenExt(fd, path.c_str(), "w", options.get());
  if (t == nullptr) {
    ::close(fd);
    throw RuntimeFailure(path.string() + ": libtiff cannot open the file for writing: " + messages.text());
  }
  struct Close {
    TIFF*& t;
    ~Close() {
      if (t) TIFFClose(t);
    }
  } close{t};
  const std::size_t row_bytes = static_cast<std::size_t>(width) * sizeof(float);
  const auto rows_per_strip = static_cast<std::uint32_t>(std::clamp<std::int64_t>(static_cast<std::int64_t>((64 << 10) / row_bytes), 1, height));
  const bool ok = TIFFSetField(t, TIFFTAG_IMAGEWIDTH, static_cast<std::uint32_t>(width)) == 1 &&
                  TIFFSetField(t, TIFFTAG_IMAGELENGTH, static_cast<std::uint32_t>(height)) == 1 &&
                  TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, static_cast<std::uint16_t>(32)) == 1 &&
                  TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, static_cast<std::uint16_t>(1)) == 1 &&
                  TIFFSetField(t, TIFFTAG_SAMPLEFORMAT, static_cast<std::uint16_t>(SAMPLEFORMAT_IEEEFP)) == 1 &&
                  TIFFSetField(t, TIFFTAG_PHOTOMETRIC, static_cast<std::uint16_t>(PHOTOMETRIC_MINISBLACK)) == 1 &&
                  TIFFSetField(t, TIFFTAG_PLANARCONFIG, static_cast<std::uint16_t>(PLANARCONFIG_CONTIG)) == 1 &&
                  TIFFSetField(t, TIFFTAG_ROWSPERSTRIP, rows_per_strip) == 1 &&
                  TIFFSetField(t, TIFFTAG_SOFTWARE, "stripeline") == 1 &&
                  TIFFSetField(t, TIFFTAG_COMPRESSION, static_cast<std::uint16_t>(COMPRESSION_ADOBE_DEFLATE)) == 1 &&
                  TIFFSetField(t, TIFFTAG_PREDICTOR, static_cast<std::uint16_t>(PREDICTOR_FLOATINGPOINT)) == 1 &&
                  (description.empty() || TIFFSetField(t, TIFFTAG_IMAGEDESCRIPTION, description.c_str()) == 1);
  if (!ok) throw RuntimeFailure(path.string() + ": libtiff refused the image tags: " + messages.text());
  std::vector<unsigned char> strip(rows_per_strip * row_bytes);  // libtiff may modify what it is given
  const auto* src = reinterpret_cast<const unsigned char*>(pixels);
  const std::uint32_t strips = TIFFNumberOfStrips(t);
  for (std::uint32_t s = 0; s < strips; ++s) {
    const std::int64_t first = static_cast<std::int64_t>(s) * rows_per_strip;
    const std::size_t bytes = static_cast<std::size_t>(std::min<std::int64_t>(rows_per_strip, height - first)) * row_bytes;
    std::memcpy(strip.data(), src + static_cast<std::size_t>(first) * row_bytes, bytes);
    if (TIFFWriteEncodedStrip(t, s, strip.data(), static_cast<tmsize_t>(bytes)) < 0)
      throw RuntimeFailure(path.string() + ": writing TIFF strip " + std::to_string(s) + " failed: " + messages.text());
  }
  if (TIFFFlush(t) != 1 || !messages.errors.empty()) throw RuntimeFailure(path.string() + ": writing the TIFF directory failed: " + messages.text());
  TIFFClose(t);
  t = nullptr;
  if (!messages.errors.empty()) throw RuntimeFailure(path.string() + ": closing the TIFF failed: " + messages.text());
  file.commit();
}

}  // namespace stripeline::io
