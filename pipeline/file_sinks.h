#pragma once
// File outputs of a scan: a PLY point cloud and a 16-bit height map (+ an
// 8-bit preview). Both appear under their final names only when the scan
// completes (io::AtomicFile); an aborted scan leaves nothing behind.
#include <filesystem>
#include <memory>
#include <vector>

#include "core/profile_mapping.h"
#include "io/ply_writer.h"
#include "pipeline/sink.h"

namespace stripeline {

// One vertex per detected point (every filled slot): x, y (float64), z,
// intensity, quality, slot and stripe width, mapped by the scan's
// ProfileMapping (core/profile_mapping.h).
class PlySink final : public ProfileSink {
 public:
  PlySink(std::filesystem::path path, io::PlyEncoding encoding);
  void begin(const ScanInfo& info) override;
  void consume(const ProfileSpan& profiles) override;
  void finish() override;
  void abort() noexcept override;
  // The encoding buffer: a batch's frames of every slot of every column.
  std::size_t batch_bytes_per_frame(int width, int slots) const override;
  std::uint64_t points() const { return points_; }

 private:
  std::filesystem::path path_;
  io::PlyEncoding encoding_;
  ProfileMapping mapping_;
  std::unique_ptr<io::PlyWriter> writer_;
  std::vector<io::PlyVertex> buffer_;  // ASCII: [frame][width x slots], a batch's worth, allocated at begin()
  std::vector<unsigned char> packed_;  // binary: the same, packed records
  std::vector<std::size_t> counts_;    // vertices of each frame in buffer_
  int chunk_frames_ = 1;
  std::uint64_t points_ = 0;
};

// Rows = profiles in acquisition order, columns = image columns; each pixel
// the primary peak's 16-bit height code (core/fixed_point.h: `bits`
// fractional bits, 0 = no detection). The preview maps the valid codes'
// range to 1..255 (0 stays "no detection").
class HeightMapSink final : public ProfileSink {
 public:
  // Throws ConfigError for bad bits.
  HeightMapSink(std::filesystem::path heightmap, std::filesystem::path preview, int bits, std::uint64_t expected_rows = 0);
  void begin(const ScanInfo& info) override;
  void consume(const ProfileSpan& profiles) override;
  void finish() override;
  // Filters (stages/heightmap_filters.h) applied to the whole map at finish(),
  // on `backend` (resolved: cpu or cuda): the 16-bit file gets every step but
  // a final to8, which, if present, makes the preview. Validated here (InputError).
  void set_filters(const std::vector<std::string>& steps, Backend backend);
  Backend filter_backend() const { return filter_backend_; }
  std::uint64_t rows() const { return rows_; }
  const std::vector<std::uint16_t>& codes() const { return codes_; }

 private:
  std::filesystem::path heightmap_, preview_;
  ProfileMapping mapping_;
  int width_ = 0;
  std::uint64_t expected_rows_;
  std::uint64_t rows_ = 0;
  std::vector<std::uint16_t> codes_;
  std::vector<std::string> filters_;
  std::string description_;  // JSON in the image's tEXt/ImageDescription: how to read its codes
  Backend filter_backend_ = Backend::Cpu;
  std::uint64_t host_budget_ = 0, device_budget_ = 0;  // ScanInfo's (0: not checked)
  // The filters' backend for a map of `rows` rows within the budgets: CUDA
  // falls back to the CPU (bit-identical) when the device budget is short;
  // ConfigError when the host budget cannot hold the CPU's maps.
  Backend filter_backend_within_budget(std::uint64_t rows) const;
};

// 8-bit preview of a height-code map: valid codes' [min, max] -> [1, 255], 0 stays 0.
std::vector<std::uint8_t> make_preview(const std::vector<std::uint16_t>& codes);

}  // namespace stripeline
