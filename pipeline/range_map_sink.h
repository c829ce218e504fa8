#pragma once
// Rectified range maps (docs/calibration.md): each profile's calibrated
// points resampled onto a uniform X grid (kernels/rectify.h), one row per
// frame, written when the scan completes as a float32 TIFF of Z in mm (NaN =
// no data) and/or a 16-bit PNG/TIFF of codes Z = z_offset + code * z_scale
// (0 = no data). Needs a sheet-of-light calibration (ScanInfo::sheet).
#include <filesystem>
#include <vector>

#include "core/metadata.h"
#include "core/profile_mapping.h"
#include "kernels/rectify.h"
#include "pipeline/sink.h"

namespace stripeline {

struct RangeMapOptions {
  std::filesystem::path float_tiff;  // "" = none
  std::filesystem::path codes;       // 16-bit .png or .tif; "" = none
  kernels::RectifyGrid grid;
  double z_offset = 0.0, z_scale = 0.001;  // mm: code 1 = z_offset + z_scale

  // InputError naming what is wrong (grid, scale, nothing to write).
  void validate() const;
};

class RangeMapSink final : public ProfileSink {
 public:
  explicit RangeMapSink(RangeMapOptions options);
  void begin(const ScanInfo& info) override;
  void consume(const ProfileSpan& profiles) override;
  void finish() override;
  void abort() noexcept override { rows_.clear(); }
  std::vector<std::filesystem::path> files() const;

 private:
  RangeMapOptions o_;
  int bins_ = 0;
  ProfileMapping mapping_;
  std::vector<float> rows_;  // [frame][bin]
  std::vector<float> key_;
  std::vector<std::uint32_t> n_;
  metadata::Json description_;  // core/metadata.h
};

}  // namespace stripeline
