#pragma once
// Writers for whole single-channel images (height maps, previews, synthetic
// recordings). Every file is written under a temporary name in the target
// directory, flushed, and renamed into place when complete: a failure or an
// interruption never leaves a half-written file under the final name.
#include <cstdint>
#include <filesystem>
#include <string>

#include "core/types.h"

namespace stripeline::io {

// pixels: height rows of width pixels, tightly packed, native endianness
// (uint8_t for Mono8, uint16_t for Mono16). Format from the extension
// (.png, .tif/.tiff, .pgm). Throws InputError for an unsupported extension
// or unwritable path, RuntimeFailure for an I/O error while writing.
void write_image(const std::filesystem::path& path, const void* pixels, int width, std::int64_t height, PixelFormat format);

// Addition: the same with options. compress = true (the default above):
// TIFF deflate with horizontal predictor, PNG zlib level 6; false: TIFF
// uncompressed, PNG zlib level 0. PGM is never compressed.
struct ImageWriteOptions {
  bool compress = true;
  // TIFF rows per strip; 0: strips of about 64 KiB. A recording is written
  // with a strip per frame (or per block of frames) so that a reader can
  // decode its strips in parallel.
  std::uint32_t rows_per_strip = 0;
  // Written as the TIFF ImageDescription or the PNG tEXt "Description" (e.g.
  // a recording's frame height, io/recording.h); empty: none.
  std::string description;
  // 16-bit images holding fewer significant bits (9..15): written as the TIFF
  // MaxSampleValue (2^n - 1), the PNG sBIT chunk (n) or the PGM maxval
  // (2^n - 1), which the readers report (ImageInfo::significant_bits). 0: none.
  int significant_bits = 0;
};
void write_image(const std::filesystem::path& path, const void* pixels, int width, std::int64_t height, PixelFormat format,
                 const ImageWriteOptions& options);

// Several float32 planes of width x height as one TIFF (PlanarConfiguration
// separate, SampleFormat IEEE float, one sample per plane, ExtraSamples for
// all but the first; Deflate without predictor when options.compress), e.g.
// the organised X/Y/Z export (pipeline/xyz_tiff_sink.h). planes[k] points to
// height rows of width floats. Atomic like the others; refuses special files.
void write_float_planes_tiff(const std::filesystem::path& path, const float* const* planes, int plane_count, int width,
                             std::int64_t height, const ImageWriteOptions& options);

}  // namespace stripeline::io
