#pragma once
// The organised X/Y/Z export: one float32 TIFF of three planes (X, Y, Z),
// rows = profiles in acquisition order, columns = image columns, each pixel
// the primary peak (slot 0) mapped by the scan's ProfileMapping
// (core/profile_mapping.h: the same mapping as the PLY, calibration
// included); NaN where there is no point (no detection, a missing frame, or
// beyond a sheet-of-light model's horizon). The structured point cloud that
// Halcon (an X, Y, Z image triple) and PCL (an organised cloud, width x
// height) users expect; docs/data-model.md. Y is float32 here (the PLY keeps
// float64). The rows are kept in memory (12 bytes per pixel) and the file
// appears under its final name at finish() (io::AtomicFile).
#include <cstdint>
#include <filesystem>
#include <vector>

#include "core/profile_mapping.h"
#include "pipeline/sink.h"

namespace stripeline {

class XyzTiffSink final : public ProfileSink {
 public:
  // expected_rows: rows to reserve for (0 = unknown).
  explicit XyzTiffSink(std::filesystem::path path, std::uint64_t expected_rows = 0);
  void begin(const ScanInfo& info) override;
  void consume(const ProfileSpan& profiles) override;
  void finish() override;
  void abort() noexcept override;
  std::uint64_t rows() const { return rows_; }

 private:
  std::filesystem::path path_;
  std::uint64_t expected_rows_;
  ProfileMapping mapping_;
  int width_ = 0;
  std::uint64_t rows_ = 0;
  std::vector<float> x_, y_, z_;  // [row][column] each
  std::string description_;
};

}  // namespace stripeline
