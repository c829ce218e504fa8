#include "io/recording.h"

#include <algorithm>

#include "core/errors.h"
#include "core/metadata.h"
#include "io/image_writer.h"

namespace stripeline::io {

std::string recording_description(int frame_height, std::uint64_t frames, int significant_bits) {
  metadata::Json d = metadata::document("recording");
  d["frame_height"] = frame_height;
  d["frames"] = frames;
  if (significant_bits > 0) d["significant_bits"] = significant_bits;  // docs/data-model.md, "Significant bits"
  return metadata::text(d);
}

void write_recording(const std::filesystem::path& path, const void* pixels, int width, int frame_height,
                     std::uint64_t frames, PixelFormat format, const RecordingWriteOptions& options) {
  if (frame_height <= 0 || frame_height > kMaxFrameHeight)
    throw InputError(path.string() + ": frame height " + std::to_string(frame_height) + " is out of range (expected 1.." +
                     std::to_string(kMaxFrameHeight) + ")");
  if (options.frames_per_strip < 1)
    throw InputError(path.string() + ": " + std::to_string(options.frames_per_strip) +
                     " frames per strip (expected at least 1)");
  ImageWriteOptions o;
  o.compress = options.compress;
  const std::uint64_t rows = std::min<std::uint64_t>(static_cast<std::uint64_t>(options.frames_per_strip), std::max<std::uint64_t>(frames, 1)) *
                             static_cast<std::uint64_t>(frame_height);
  o.rows_per_strip = static_cast<std::uint32_t>(std::min<std::uint64_t>(rows, 0xffffffffULL));
  if (options.significant_bits != 0 && (format != PixelFormat::Mono16 || options.significant_bits < 9 || options.significant_bits > 15))
    throw InputError(path.string() + ": " + std::to_string(options.significant_bits) + " significant bits (expected 9..15, in 16-bit words)");
  const int bits = options.bits_tags ? options.significant_bits : 0;
  o.significant_bits = bits;
  o.description = recording_description(frame_height, frames, bits);
  write_image(path, pixels, width, static_cast<std::int64_t>(frames) * frame_height, format, o);
}

}  // namespace stripeline::io
