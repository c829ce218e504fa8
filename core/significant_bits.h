#pragma once
// How many bits of a pixel word carry signal, and where that was learnt
// (docs/data-model.md, "Significant bits"). A Mono10/12/14 camera delivers its
// values in 16-bit words (0..1023, 0..4095, 0..16383); the extraction's
// contrast floors and saturation level are scaled to the significant bits,
// not to the word. Sources report what they know (a camera's PixelFormat, a
// file's tags); the pipeline decides before the first batch is processed.
#include <cstdint>

namespace stripeline {

enum class BitsOrigin : std::uint8_t {
  None,       // not known
  Format,     // the word itself: Mono8 (8 bits)
  Config,     // [processing] pixel_bits or --pixel-bits
  Camera,     // the camera's PixelFormat (Mono10, Mono12p, ...)
  Synthetic,  // the simulated scanner's configured depth
  TiffTag,    // TIFF MaxSampleValue / SMaxSampleValue
  Recording,  // the recording's own description {"stripeline": {"significant_bits": N}}
  PngSbit,    // PNG sBIT chunk
  PgmMaxval,  // PGM maxval
  Inferred,   // the highest value of the first batch
};

inline const char* to_string(BitsOrigin o) {
  switch (o) {
    case BitsOrigin::None: return "none";
    case BitsOrigin::Format: return "format";
    case BitsOrigin::Config: return "config";
    case BitsOrigin::Camera: return "camera";
    case BitsOrigin::Synthetic: return "synthetic";
    case BitsOrigin::TiffTag: return "tiff-tag";
    case BitsOrigin::Recording: return "recording";
    case BitsOrigin::PngSbit: return "png-sbit";
    case BitsOrigin::PgmMaxval: return "pgm-maxval";
    case BitsOrigin::Inferred: return "inferred";
  }
  return "?";
}

struct SignificantBits {
  int bits = 0;  // 8..16; 0 = not known
  BitsOrigin origin = BitsOrigin::None;
  bool known() const { return bits > 0; }
  bool operator==(const SignificantBits&) const = default;
};

// The fewest bits, at least 8 and at most 16, that hold `max_value`
// (255 -> 8, 256 -> 9, 1023 -> 10, 4000 -> 12, 4095 -> 12, 65535 -> 16).
inline int bits_for_max_value(std::uint32_t max_value) {
  int bits = 8;
  while (bits < 16 && max_value >= (1u << bits)) ++bits;
  return bits;
}

}  // namespace stripeline
