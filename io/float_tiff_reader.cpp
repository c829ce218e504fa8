#include "io/float_tiff_reader.h"

#include <tiffio.h>

#include <algorithm>
#include <memory>

#include "io/reader_common.h"
#include "io/tiff_support.h"

namespace stripeline::io {

FloatPlanes read_float_tiff(const std::filesystem::path& path) {
  using detail::input_error;
  const std::uintmax_t file_bytes = detail::check_input_file(path);
  detail::TiffMessages messages;
  detail::TiffOpenOptions options(messages);
  std::unique_ptr<TIFF, void (*)(TIFF*)> tif(TIFFOpenExt(path.c_str(), "rm", options.get()), TIFFClose);
  if (!tif) input_error(path, "not a readable TIFF file: " + messages.text());
  TIFF* t = tif.get();
  std::uint32_t width = 0, height = 0, rows_per_strip = 0;
  std::uint16_t spp = 1, bps = 0, format = SAMPLEFORMAT_UINT, planar = PLANARCONFIG_CONTIG, compression = COMPRESSION_NONE;
  if (TIFFGetField(t, TIFFTAG_IMAGEWIDTH, &width) != 1 || TIFFGetField(t, TIFFTAG_IMAGELENGTH, &height) != 1 || width == 0 || height == 0)
    input_error(path, "TIFF without image dimensions (expected a float32 image)");
  TIFFGetFieldDefaulted(t, TIFFTAG_SAMPLESPERPIXEL, &spp);
  TIFFGetFieldDefaulted(t, TIFFTAG_BITSPERSAMPLE, &bps);
  TIFFGetFieldDefaulted(t, TIFFTAG_SAMPLEFORMAT, &format);
  TIFFGetFieldDefaulted(t, TIFFTAG_PLANARCONFIG, &planar);
  TIFFGetFieldDefaulted(t, TIFFTAG_COMPRESSION, &compression);
  TIFFGetFieldDefaulted(t, TIFFTAG_ROWSPERSTRIP, &rows_per_strip);
  if (format != SAMPLEFORMAT_IEEEFP || bps != 32)
    input_error(path, "a " + std::to_string(bps) + "-bit TIFF of sample format " + std::to_string(format) + " (expected float32 samples)");
  if (spp < 1 || spp > 16 || (spp > 1 && planar != PLANARCONFIG_SEPARATE))
    input_error(path, std::to_string(spp) + " samples per pixel" + (spp > 1 ? ", interleaved" : "") +
                          " (expected 1..16 float planes, stored separately)");
  if (TIFFIsTiled(t) != 0) input_error(path, "a tiled float TIFF (expected strips, as stripeline writes them)");
  detail::check_dimensions(path, width, height);
  const long double decoded = static_cast<long double>(width) * height * 4 * spp;
  detail::check_claimed_size(path, width, height, decoded, decoded / detail::tiff_max_expansion(compression), file_bytes,
                             "compression " + std::to_string(compression));
  FloatPlanes out;
  out.width = static_cast<int>(width);
  out.height = height;
  const char* description = nullptr;
  if (TIFFGetField(t, TIFFTAG_IMAGEDESCRIPTION, &description) == 1 && description != nullptr) out.description = description;
  const std::size_t row_bytes = static_cast<std::size_t>(width) * sizeof(float);
  const std::uint32_t rps = std::clamp<std::uint32_t>(rows_per_strip, 1, height);
  const std::uint32_t per_plane = (height + rps - 1) / rps;
  if (TIFFNumberOfStrips(t) != per_plane * spp)
    input_error(path, std::to_string(TIFFNumberOfStrips(t)) + " strips (expected " + std::to_string(per_plane * spp) + ")");
  out.planes.assign(spp, std::vector<float>(static_cast<std::size_t>(width) * height));
  for (std::uint16_t k = 0; k < spp; ++k) {
    auto* dst = reinterpret_cast<unsigned char*>(out.planes[k].data());
    for (std::uint32_t s = 0; s < per_plane; ++s) {
      const std::uint32_t first = s * rps;
      const std::size_t bytes = static_cast<std::size_t>(std::min(rps, height - first)) * row_bytes;
      messages.clear();
      const tmsize_t n = TIFFReadEncodedStrip(t, k * per_plane + s, dst + first * row_bytes, static_cast<tmsize_t>(bytes));
      if (n < 0 || static_cast<std::size_t>(n) != bytes) {
        const std::string fallback = "the strip decodes to " + std::to_string(n) + " bytes (expected " + std::to_string(bytes) + ")";
        input_error(path, "corrupt or truncated TIFF at row " + std::to_string(first) + (spp > 1 ? " of plane " + std::to_string(k) : "") +
                              ": " + messages.text(fallback.c_str()));
      }
    }
  }
  return out;
}

}  // namespace stripeline::io
