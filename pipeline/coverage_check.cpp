#include "pipeline/coverage_check.h"

#include <spdlog/spdlog.h>

namespace stripeline {

void StripeCoverageCheck::begin(const ScanInfo& info) {
  frame_height_ = info.layout.frame_height;
  format_ = info.layout.format;
  pixel_bits_ = info.pixel_bits;
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
    // 16-bit words: the contrast floor is scaled to the significant bits; bits
    // that were not measured on these pixels may be more than they hold.
    std::string bits;
    if (format_ == PixelFormat::Mono16 && pixel_bits_.known() && pixel_bits_.origin != BitsOrigin::Inferred)
      bits = " Or are " + std::to_string(pixel_bits_.bits) + " significant bits (" + to_string(pixel_bits_.origin) +
             ") more than the pixels hold? The contrast floor scales with them (--pixel-bits N; a Mono12 camera's values are 0..4095)";
    spdlog::warn("{}: the stripe was found in {:.1f} % of the columns of the first {} frames (expected most of them): is {} rows the "
                 "right frame height (-H)? A wrong one cuts the stripe across frames.{}",
                 what_, 100.0 * fraction_, p.frames, frame_height_, bits);
  }
}

}  // namespace stripeline
