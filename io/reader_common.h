#pragma once
// Private to io/: what every streaming image reader shares (the row
// bookkeeping of ImageReader, the checks and messages for bad files, large
// positioned reads). Used by image_reader.cpp and tiff_reader.cpp.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>

#include "core/errors.h"
#include "io/image_reader.h"

namespace stripeline::io::detail {

[[noreturn]] inline void input_error(const std::filesystem::path& path, const std::string& message) {
  throw InputError(path.string() + ": " + message);
}

// A readable, non-empty regular file; returns its size.
std::uintmax_t check_input_file(const std::filesystem::path& path);

void check_dimensions(const std::filesystem::path& path, std::int64_t width, std::int64_t height);

// A file holds no more pixels than its bytes can encode. `min_encoded_bytes`:
// the fewest bytes the image data the header claims could be stored in (its
// decoded size divided by the codec's largest expansion, `codec` names it).
// Throws InputError naming the file, the claimed size and the file's size when
// the file is smaller, before anything is allocated for the image.
void check_claimed_size(const std::filesystem::path& path, std::int64_t width, std::int64_t height, long double decoded_bytes,
                        long double min_encoded_bytes, std::uintmax_t file_bytes, const std::string& codec);

// The largest expansion of a TIFF compression (decoded bytes per stored byte):
// PackBits 64, Deflate 1032, LZW 4096, anything else 65536; uncompressed 64:
// a recording cut short is still read up to its cut (the read names the row
// where it ends), but one that holds less than 1/64 of what it claims is
// refused up front.
double tiff_max_expansion(unsigned compression);

void swap16(std::byte* data, std::size_t count);

// The frame height a recording says it holds, from its description text (a
// TIFF ImageDescription or a PNG tEXt "Description"): stripeline's own
// recording document (core/metadata.h; older files: {"stripeline": {"frame_height": N}}), or tifffile's {"shape": [..., N, width]}
// for a stack of frames. 0 when the text says nothing usable.
int recorded_frame_height(const std::string& description, int width);
// The significant bits a recording's description states
// ({"stripeline": {"significant_bits": N}}, N in 8..15), origin Recording;
// not known otherwise.
SignificantBits recorded_significant_bits(const std::string& description);
// What a 16-bit file's largest sample value (TIFF MaxSampleValue, PGM maxval,
// 2^sBIT - 1) says: its bits, when fewer than 16 (a full-range value says
// nothing the word does not), else not known. 8-bit files: not known.
SignificantBits significant_bits_of_max(PixelFormat format, double max_value, BitsOrigin origin);

// pread() until `bytes` are read, the file ends or an error; returns the bytes
// read (errno set when it stopped on an error). Thread-safe on a shared fd.
std::size_t pread_full(int fd, void* dst, std::size_t bytes, std::uint64_t offset);

// The size of the pieces a large read is cut into: enough pieces for every
// thread of the current arena (four each, to balance), 1 to 8 MiB each.
std::size_t read_chunk_bytes(std::size_t total_bytes);

// Reads [offset, offset + bytes) of fd into dst with several threads when it
// is large (read_chunk_bytes() pieces, oneTBB), no intermediate buffer.
// Returns the bytes read before the first short read (== bytes when complete).
std::size_t pread_parallel(int fd, std::byte* dst, std::size_t bytes, std::uint64_t offset);

// Common bookkeeping of a reader: position, bounds, "failed" state.
class ReaderBase : public ImageReader {
 public:
  explicit ReaderBase(std::filesystem::path path) : path_(std::move(path)) {}
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

  void seek_row(std::int64_t row) final {
    if (row < 0 || row > info_.height)
      input_error(path_, "row " + std::to_string(row) + " is beyond the image (expected 0.." + std::to_string(info_.height) + ")");
    if (row < next_row_ || failed_) rewind();
    if (row == next_row_) return;
    failed_ = true;  // until the rows before it are passed
    do_skip(row - next_row_);
    next_row_ = row;
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
  // Pass `rows` rows from next_row_ (already bounds-checked) without handing
  // them out. The default decodes them into a scratch band (sequential
  // formats: PNG); readers that address rows directly override it with nothing.
  virtual void do_skip(std::int64_t rows);

  std::filesystem::path path_;
  ImageInfo info_;
  std::int64_t next_row_ = 0;
  bool failed_ = false;
};

// The TIFF reader (tiff_reader.cpp).
std::unique_ptr<ImageReader> open_tiff(const std::filesystem::path& path, const ImageReadOptions& options);
// Colour (2-4 samples per pixel) TIFFs, mixed to grey (colour_tiff_reader.cpp).
bool tiff_is_colour(const std::filesystem::path& path);
std::unique_ptr<ImageReader> open_colour_tiff(const std::filesystem::path& path, const ImageReadOptions& options);

}  // namespace stripeline::io::detail
