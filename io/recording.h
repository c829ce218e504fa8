#pragma once
// Recordings: stripe frames concatenated vertically, as a frame grabber saves
// them, written so that a replay reads them fast and knows their frame height.
//
// TIFF: one strip per frame (or per block of frames), so a reader decodes the
// strips in parallel; Deflate with the horizontal predictor, or uncompressed.
// The frame height goes into the TIFF ImageDescription (PNG: tEXt
// "Description") as the metadata document {"stripeline": "recording",
// "schema", "software", "frame_height": H, "frames": N} (core/metadata.h); readers
// report it as ImageInfo::recorded_frame_height. PGM carries no description.
#include <cstdint>
#include <filesystem>
#include <string>

#include "core/types.h"

namespace stripeline::io {

struct RecordingWriteOptions {
  bool compress = true;      // TIFF Deflate + horizontal predictor, PNG zlib level 6; false: uncompressed
  int frames_per_strip = 1;  // TIFF: frames per strip (each strip is decoded by one thread)
  // 16-bit recordings of a 10/12/14-bit camera: 9..15, written as the TIFF
  // MaxSampleValue, PNG sBIT or PGM maxval and as "significant_bits" in the
  // description; 0 = the word's 16 (nothing written).
  int significant_bits = 0;
  bool bits_tags = true;     // false: significant_bits shapes nothing in the file (to test inference)
};

// The description text that records a recording's frame height.
// significant_bits > 0 adds {"significant_bits": N}.
std::string recording_description(int frame_height, std::uint64_t frames, int significant_bits = 0);

// pixels: frames * frame_height rows of width pixels, native endianness.
// Format from the extension (.tif/.tiff, .png, .pgm), written atomically;
// errors as write_image().
void write_recording(const std::filesystem::path& path, const void* pixels, int width, int frame_height,
                     std::uint64_t frames, PixelFormat format, const RecordingWriteOptions& options = {});

}  // namespace stripeline::io
