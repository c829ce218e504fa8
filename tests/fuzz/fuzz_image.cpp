// libFuzzer target: the image readers through the entry a replay uses
// (io::open_image, then read_rows in order, as acquisition/file_source.cpp
// does): TIFF, PNG, PGM and raw.
//
// Input: byte 0 picks the format (0 TIFF, 1 PNG, 2 PGM, 3 raw, by value % 4)
// and, for raw, bytes 1-2 the width (1..4096) and byte 3 the depth (bit 0:
// 16-bit); the rest is the file. Byte 0's bit 2 picks libtiff's own codecs
// instead of stripeline's (ImageReadOptions::native_tiff_codecs), bits 3-4
// the channel mix of colour files. The file is written to a private
// temporary directory, as the readers take a path.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <tbb/task_arena.h>

#include "io/image_reader.h"
#include "fuzz_common.h"

namespace {

const std::filesystem::path& scratch_dir() {
  static const std::filesystem::path dir = [] {
    std::string t = (std::filesystem::temp_directory_path() / "stripeline-fuzz-image-XXXXXX").string();
    if (!mkdtemp(t.data())) std::abort();
    return std::filesystem::path(t);
  }();
  return dir;
}

// Output rows a run reads at most (a tiny file may claim a huge image; the
// reader must fail at the data's end, which comes long before this).
constexpr std::size_t kMaxOutputBytes = std::size_t{64} << 20;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace stripeline;
  if (size < 4 || size > 1 << 20) return 0;
  static const char* const ext[] = {".tif", ".png", ".pgm", ".raw"};
  const int kind = data[0] % 4;
  const std::filesystem::path path = scratch_dir() / (std::string("input") + ext[kind]);
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(data + 4), static_cast<std::streamsize>(size - 4));
  }
  std::optional<io::RawGeometry> raw;
  if (kind == 3) {
    io::RawGeometry g;
    g.width = 1 + ((data[1] | (data[2] << 8)) % 4096);
    g.format = (data[3] & 1) ? PixelFormat::Mono16 : PixelFormat::Mono8;
    g.height = 0;  // from the file size
    raw = g;
  }
  io::ImageReadOptions options;
  options.native_tiff_codecs = (data[0] & 4) == 0;
  static const char* const mixes[] = {"luma", "red", "green", "3,2,1"};
  options.channel = io::parse_channel_mix(mixes[(data[0] >> 3) & 3]);
  // One thread: the decoders' parallel loops run inline, runs stay reproducible.
  static tbb::task_arena arena(1);
  arena.execute([&] {
    fuzz::expect_input_errors_only([&] {
      auto reader = io::open_image(path, io::ImageFileFormat::Auto, raw, options);
      const io::ImageInfo info = reader->info();
      if (info.width <= 0 || info.height < 0) std::abort();  // a reader never reports an impossible shape
      const std::size_t row_bytes = static_cast<std::size_t>(info.width) * bytes_per_pixel(info.format);
      if (row_bytes > kMaxOutputBytes) return;
      const std::int64_t chunk = std::max<std::int64_t>(1, static_cast<std::int64_t>((std::size_t{1} << 20) / row_bytes));
      std::vector<std::byte> buffer(static_cast<std::size_t>(chunk) * row_bytes);
      std::size_t out = 0;
      for (int pass = 0; pass < 2; ++pass) {  // rewind() as a looping replay does
        while (reader->rows_left() > 0 && out < kMaxOutputBytes) {
          const std::int64_t n = std::min(chunk, reader->rows_left());
          reader->read_rows(buffer.data(), n);
          out += static_cast<std::size_t>(n) * row_bytes;
        }
        if (out >= kMaxOutputBytes) break;
        reader->rewind();
      }
    });
  });
  return 0;
}
