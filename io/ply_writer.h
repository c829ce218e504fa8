#pragma once
// Streaming PLY point-cloud writer: binary little-endian (default) or ASCII,
// one vertex per point with float x, y, z, float intensity and float quality
// (the extraction's contrast, ProfileSpan::quality; 0 where unknown). The vertex
// count is not known until the end, so the header is written with a fixed-size
// reserve and rewritten in place on finish(); readers (Open3D, PCL,
// CloudCompare, MeshLab) see an ordinary PLY file. The file appears under its
// final name only when finish() succeeds (AtomicFile).
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace stripeline::io {

enum class PlyEncoding { BinaryLittleEndian, Ascii };

struct PlyVertex {
  float x, y, z, intensity;
  float quality = 0.0f;
};

class PlyWriter {
 public:
  PlyWriter(const std::filesystem::path& path, PlyEncoding encoding, std::vector<std::string> comments = {});
  ~PlyWriter();
  PlyWriter(const PlyWriter&) = delete;
  PlyWriter& operator=(const PlyWriter&) = delete;

  void write(const PlyVertex* vertices, std::size_t count);
  std::uint64_t vertices() const { return count_; }
  void finish();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
  std::uint64_t count_ = 0;
};

// Read back a PLY written by PlyWriter (or any PLY whose vertex element has
// float x, y, z [, intensity] [, quality]); for tests and tools. Throws InputError.
std::vector<PlyVertex> read_ply(const std::filesystem::path& path);

}  // namespace stripeline::io
