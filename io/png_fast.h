#pragma once
// Private to io/: the PNG reader's fast path. A PNG is one zlib stream, so it
// cannot be decoded in parallel; libdeflate (io/inflate.h) inflates the
// whole stream about twice as fast as zlib (libpng and libspng both stream
// through zlib:
// bench/README.md has the figures), at the price of holding the filtered
// image (height x (row bytes + 1)) in memory, and of holding each pass until
// the whole stream is inflated. The reader uses it with 4 threads or more (on
// 2 cores the processing lost more than the decode gained) when the image
// fits in kPngFastLimit, and falls back to libpng for anything unexpected (a
// bad CRC or stream is then reported by libpng, as before).
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <vector>

namespace stripeline::io::detail {

inline constexpr std::size_t kPngFastLimit = std::size_t{256} << 20;

// Reads the file's IDAT chunks and inflates them into `filtered` (resized to
// `filtered_bytes`: one filter byte + the row's bytes, per row). False when
// anything is not exactly as expected (the caller then uses libpng).
bool png_inflate_whole(const std::filesystem::path& path, std::size_t filtered_bytes, std::vector<std::byte>& filtered);

// Un-filters `rows` rows of `row_bytes` bytes from `filtered` (each preceded
// by its filter type) into dst. `previous` holds the row above the first one
// (zeros above row 0) and is left holding the last row. Bytes stay in file
// order (16-bit big-endian). False on an unknown filter type.
bool png_unfilter(const std::byte* filtered, std::byte* dst, std::byte* previous, std::size_t row_bytes, std::size_t bpp,
                  std::int64_t rows);

}  // namespace stripeline::io::detail
