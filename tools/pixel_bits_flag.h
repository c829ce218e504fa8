#pragma once
// --pixel-bits N: the same flag on every command that extracts (run, replay,
// bench, calibrate), over [processing] pixel_bits (acquisition/pixel_bits.h).
#include <string>

#include <CLI/CLI.hpp>

#include "core/errors.h"
#include "stages/chain.h"

namespace stripeline::tools {

inline void add_pixel_bits_flag(CLI::App* sub, int& bits) {
  sub->add_option("--pixel-bits", bits,
                  "Significant bits of the pixels, 8..16 (e.g. 12 for a Mono12 camera's 0..4095 in 16-bit words); 0 or not given: the "
                  "camera's PixelFormat, the file's tags (TIFF MaxSampleValue, PNG sBIT), else the first batch's highest value");
}

// bits < 0: not given. Else one line and exit 2 when out of range.
inline void apply_pixel_bits_flag(int bits, ChainConfig& chain) {
  if (bits < 0) return;
  if (bits != 0 && (bits < 8 || bits > 16))
    throw InputError("--pixel-bits " + std::to_string(bits) +
                     " is out of range (expected 8..16 significant bits, e.g. 12 for a Mono12 camera, or 0 to take them from the camera, the file or the data)");
  chain.adaptive.pixel_bits = bits;
}

}  // namespace stripeline::tools
