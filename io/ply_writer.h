#pragma once
// Streaming PLY point-cloud writer: binary little-endian (default) or ASCII,
// one vertex per point: float x, double y, float z, float intensity, float
// quality (the extraction's contrast, ProfileSpan::quality; 0 where unknown),
// uchar slot (0 = the column's primary peak, 1.. further peaks: reflections)
// and ushort width (the stripe's width in pixels, ProfileSpan::stripe_width).
// y is float64 because it is the scan axis: a global frame index (or an
// encoder count, or mm along the motion) exact in float32 only to 2^24 frames,
// 28 minutes at 10 kHz; x and z stay float32 (a column and a sub-pixel row:
// exact). Binary records are packed, 27 bytes (docs/data-model.md). The vertex
// count is not known until the end, so the header is written with a fixed-size
// reserve and rewritten in place on finish(); readers see an ordinary PLY
// file (which viewer shows which property: docs/data-model.md). The file appears under its
// final name only when finish() succeeds (AtomicFile).
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace stripeline::io {

enum class PlyEncoding { BinaryLittleEndian, Ascii };

struct PlyVertex {
  float x = 0.0f;
  double y = 0.0;
  float z = 0.0f;
  float intensity = 0.0f;
  float quality = 0.0f;
  std::uint8_t slot = 0;
  std::uint16_t width = 0;
};
// Bytes of one binary vertex record (packed, little-endian): 4+8+4+4+4+1+2.
inline constexpr std::size_t kPlyVertexBytes = 27;

// One vertex as the binary file holds it: kPlyVertexBytes little-endian bytes at out.
void pack_ply_vertex(const PlyVertex& v, unsigned char* out);

class PlyWriter {
 public:
  PlyWriter(const std::filesystem::path& path, PlyEncoding encoding, std::vector<std::string> comments = {});
  ~PlyWriter();
  PlyWriter(const PlyWriter&) = delete;
  PlyWriter& operator=(const PlyWriter&) = delete;

  void write(const PlyVertex* vertices, std::size_t count);
  // Binary encoding only: `count` records already packed by pack_ply_vertex()
  // (kPlyVertexBytes each), appended as they are. Lets a caller pack in
  // parallel; the writer then only moves bytes.
  void write_records(const unsigned char* records, std::size_t count);
  PlyEncoding encoding() const;
  std::uint64_t vertices() const { return count_; }
  void finish();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
  std::uint64_t count_ = 0;
};

// The header PlyWriter writes for these comments and `count` vertices (its
// padding comment included): a joined file's header is made here too.
std::string ply_header(PlyEncoding encoding, const std::vector<std::string>& comments, std::uint64_t count);

// The header of a PLY that PlyWriter wrote, read back: its encoding, its
// comments (without "comment ", the padding left out), its vertex count and
// the header's length in bytes (the records follow). InputError naming the
// file when the header is not exactly one PlyWriter writes (`stripeline join`
// copies the records of such files as they are).
struct PlyFileHeader {
  PlyEncoding encoding = PlyEncoding::BinaryLittleEndian;
  std::vector<std::string> comments;
  std::uint64_t vertices = 0;
  std::uint64_t bytes = 0;
};
PlyFileHeader read_own_ply_header(const std::filesystem::path& path);

// Read back a PLY written by PlyWriter (or any PLY whose vertex element has
// x, y, z [, intensity] [, quality] [, slot] [, width] of any scalar type; missing
// ones read as 0); for tests and tools. Throws InputError.
std::vector<PlyVertex> read_ply(const std::filesystem::path& path);

}  // namespace stripeline::io
