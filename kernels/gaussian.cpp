#include "kernels/gaussian.h"

#include <cmath>
#include <string>

#include "core/errors.h"

namespace stripeline::kernels {

GaussianTaps make_gaussian_taps(int size, double sigma) {
  GaussianTaps taps;
  if (size == 0 || size == 1) return taps;  // blur off
  if (size < 3 || size > kMaxBlurSize || size % 2 == 0)
    throw ConfigError("blur size " + std::to_string(size) + " is not supported (expected 0 for off, or an odd size 3..15)");
  if (!(sigma >= 0.0) || sigma > 100.0)
    throw ConfigError("blur sigma " + std::to_string(sigma) + " is not supported (expected 0 for automatic, or 0 < sigma <= 100)");
  if (sigma == 0.0) sigma = 0.3 * ((size - 1) * 0.5 - 1.0) + 0.8;  // OpenCV's rule
  taps.size = size;
  const int r = size / 2;
  double raw[kMaxBlurSize];
  double total = 0;
  for (int k = 0; k < size; ++k) {
    const double d = k - r;
    raw[k] = std::exp(-d * d / (2.0 * sigma * sigma));
    total += raw[k];
  }
  std::int64_t sum = 0;
  for (int k = 0; k < size; ++k) {
    taps.w[k] = static_cast<std::uint32_t>(std::llround(raw[k] / total * kBlurWeightSum));
    sum += taps.w[k];
  }
  // Put the rounding residue on the centre tap so the taps sum to exactly 4096.
  taps.w[r] = static_cast<std::uint32_t>(static_cast<std::int64_t>(taps.w[r]) + (static_cast<std::int64_t>(kBlurWeightSum) - sum));
  return taps;
}

}  // namespace stripeline::kernels
