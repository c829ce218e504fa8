#pragma once
// Significant bits: how many bits of a pixel word carry signal
// (docs/data-model.md, "Significant bits"). Decided once per run, before the
// first batch is processed (the pipeline and the calibration's extraction
// call decide_pixel_bits()):
//   1. the configuration: [processing] pixel_bits or --pixel-bits (not 0);
//   2. what the source knows (FrameSource::significant_bits()): a camera's
//      PixelFormat (pixel_format_significant_bits(), for Aravis and GenTL
//      alike), a file's TIFF MaxSampleValue/SMaxSampleValue, PNG sBIT, PGM
//      maxval or the recording's description;
//   3. 8-bit frames: 8;
//   4. otherwise inferred from the first batch: the fewest bits (8..16) that
//      hold its highest value, and the log says so.
// The chain's `pixel_bits` is set to the result (stages/chain.h scales the
// adaptive contrast floor and the saturation level by it).
#include <cstdint>
#include <optional>
#include <string_view>

#include "acquisition/source.h"
#include "core/batch.h"
#include "core/significant_bits.h"

namespace stripeline {

// Mono8 -> 8; Mono10, Mono10p, Mono10Packed -> 10; Mono12, Mono12p,
// Mono12Packed -> 12; Mono14, Mono14p -> 14; Mono16 -> 16. 0 for any other
// name (not a monochrome PFNC format this knows).
int pixel_format_significant_bits(std::string_view pixel_format);

// The highest pixel value of the batch's filled frames.
std::uint32_t max_pixel_value(const Batch& batch);

// True when decide_pixel_bits() needs the first batch (nothing configured,
// the source does not know, 16-bit frames).
bool pixel_bits_need_data(int configured, const FrameSource& source);

// Steps 1-4 above. `first_max`: max_pixel_value() of the first batch, when
// pixel_bits_need_data() (nullopt: no batch came; then the word's 16 bits,
// origin Format). Logs the outcome (a warning when inferred below 16).
SignificantBits decide_pixel_bits(int configured, const FrameSource& source, std::optional<std::uint32_t> first_max);

}  // namespace stripeline
