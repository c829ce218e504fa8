#include "pipeline/coverage_check.h"

#include <spdlog/spdlog.h>

namespace stripeline {

void StripeCoverageCheck::begin(const ScanInfo& info) {
  frame_height_ = info.layout.frame_height;
  fraction_ = -1.0;
  warned_ = false;
}

void StripeCoverageCheck::consume(const ProfileSpan& p) {
  if (fraction_ >= 0.0 || p.frames == 0 || p.width == 0) return;
  std::uint64_t found = 0;
  for (int f = 0; f < p.frames; ++f)
    for (int x = 0; x < p.width; ++x) found += p.peaks(f, x) > 0 ? 1 : 0;
  const double cells = static_cast<double>(p.frames) * p.width;
  fraction_ = static_cast<double>(found) / cells;
  if (fraction_ < min_fraction_) {
    warned_ = true;
    spdlog::warn("{}: the stripe was found in {:.1f} % of the columns of the first {} frames (expected most of them): is {} rows the "
                 "right frame height (-H)? A wrong one cuts the stripe across frames",
                 what_, 100.0 * fraction_, p.frames, frame_height_);
  }
}

}  // namespace stripeline
