#pragma once
// Streaming readers for recorded stripe images: a frame grabber's buffers
// saved as one tall image (e.g. 1936x152000). Rows are read in order straight
// into the caller's memory (a pinned batch buffer), so a recording of any
// height never has to fit in memory twice.
//
// Formats: TIFF (8/16-bit, single channel, strips or tiles, or RGB(A) in
// strips, mixed to grey by ImageReadOptions::channel; one or more pages
// of the same width and depth read one after the other... see .cpp), PNG
// (8/16-bit grey, grey+alpha, RGB, RGBA: colour mixed to grey), binary PGM (P5, maxval <= 65535), and raw (headerless,
// dimensions and depth given by the caller, 16-bit little-endian).
//
// Every problem with the file is an InputError whose message names the file
// and says what was expected.
//
// Decoding is parallel where the file allows it (TIFF strips and tiles, large
// uncompressed reads), with oneTBB in the caller's task arena: run read_rows()
// inside a tbb::task_arena to bound its threads. A reader object itself is
// used by one thread at a time.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "core/significant_bits.h"
#include "core/types.h"
#include "io/channel_mix.h"

namespace stripeline::io {

enum class ImageFileFormat { Auto, Tiff, Png, Pgm, Raw };

struct ImageInfo {
  int width = 0;
  std::int64_t height = 0;  // a recording can be very tall
  PixelFormat format = PixelFormat::Mono8;
  int pages = 1;                  // TIFF: pages read one after the other as one recording
  int recorded_frame_height = 0;  // frame height the file says it holds (TIFF ImageDescription, PNG tEXt); 0: none
  // Significant bits of 16-bit pixels when the file says fewer than 16: TIFF
  // MaxSampleValue/SMaxSampleValue, then the recording's description; PNG
  // sBIT, then its description; PGM maxval. Not known (0) otherwise, and for
  // 8-bit files (their depth is the format's).
  SignificantBits significant_bits{};
};

// How a reader decodes. The defaults are the fast paths; tests and the
// replay benchmark compare them with the libraries' own.
struct ImageReadOptions {
  // TIFF Deflate and uncompressed strips and tiles decoded by stripeline
  // (libdeflate, positioned reads straight into the destination); false:
  // every strip through libtiff's codecs (still in parallel, one handle per
  // thread). Other compressions always go through libtiff.
  bool native_tiff_codecs = true;
  // Colour recordings (RGB/RGBA TIFF and PNG, grey+alpha PNG): how a pixel
  // becomes grey (channel_mix.h). Grey files ignore it.
  ChannelMix channel;
};

// For raw files (no header) the caller supplies the geometry.
struct RawGeometry {
  int width = 0;
  std::int64_t height = 0;  // 0: deduce from the file size
  PixelFormat format = PixelFormat::Mono8;
};

class ImageReader {
 public:
  virtual ~ImageReader() = default;
  virtual const ImageInfo& info() const = 0;
  // Copy the next `rows` rows (width * bytes_per_pixel each, native-endian
  // pixels, tightly packed) into dst. Throws InputError if the file ends or is
  // corrupt before that.
  virtual void read_rows(std::byte* dst, std::int64_t rows) = 0;
  // Back to the first row (for looping replays).
  virtual void rewind() = 0;
  // The next read_rows() starts at `row` (0 <= row <= height; InputError
  // beyond). Random-access files go straight there: a TIFF's strips or tiles
  // before the row are not read, raw and PGM rows are read by offset. A PNG
  // is one zlib stream: its rows before `row` are decoded and dropped.
  // Backwards: rewind(), then forwards.
  virtual void seek_row(std::int64_t row) = 0;
  // Rows still to be read.
  virtual std::int64_t rows_left() const = 0;
};

// Format from the extension (.tif/.tiff, .png, .pgm, .raw/.bin) unless given.
ImageFileFormat format_from_path(const std::filesystem::path& path);

std::unique_ptr<ImageReader> open_image(const std::filesystem::path& path, ImageFileFormat format = ImageFileFormat::Auto,
                                        const std::optional<RawGeometry>& raw = std::nullopt);
std::unique_ptr<ImageReader> open_image(const std::filesystem::path& path, ImageFileFormat format,
                                        const std::optional<RawGeometry>& raw, const ImageReadOptions& options);

}  // namespace stripeline::io
