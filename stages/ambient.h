#pragma once
// Ambient-light suppression before extraction, as laser sensors do it with
// laser-off frames: subtract a laser-off reference (a dark frame taken once),
// or pair each laser-on frame with the laser-off frame the camera took next
// to it (the laser toggled every trigger) and keep only their difference.
//
// It runs on the host, in the pipeline's acquire stage, before the batch goes
// to any backend: the result is the same bits on CPU and CUDA by construction,
// and in alternate mode the laser-off frames never cross the bus (half the
// H2D traffic). Saturating integer subtraction: max(on - off, 0).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/batch.h"

namespace stripeline {

enum class AmbientMode { None, DarkFrame, Alternate };
const char* to_string(AmbientMode m);
AmbientMode parse_ambient_mode(const std::string& text);  // ConfigError naming `ambient`

// A laser-off reference: one frame of the recording's geometry and depth.
struct DarkFrame {
  std::string origin;  // where it came from (a file name), for messages
  int width = 0, height = 0;
  PixelFormat format = PixelFormat::Mono8;
  std::vector<std::byte> pixels;  // width * height samples, native-endian
};

struct AmbientConfig {
  AmbientMode mode = AmbientMode::None;
  std::string dark_frame_path;               // DarkFrame mode: the file (loaded by the application)
  std::shared_ptr<const DarkFrame> dark;     // DarkFrame mode: its pixels
  bool off_first = false;                    // Alternate: pairs are (off, on) rather than (on, off)
  // Throws ConfigError: dark-frame mode without a dark frame.
  void validate() const;
};

class AmbientSuppressor {
 public:
  // Checks the dark frame against the frames (InputError naming its origin).
  AmbientSuppressor(const AmbientConfig& config, const BatchLayout& frames);
  // In place. DarkFrame: every frame minus the reference. Alternate: frame
  // pairs (2k, 2k+1) of the batch become one frame each, on minus off, packed
  // to the front with the laser-on frame's metadata (missing if either is);
  // an unpaired last frame is dropped. Returns the frames consumed (dropped).
  std::uint64_t apply(Batch& batch) const;
  AmbientMode mode() const { return config_.mode; }

 private:
  AmbientConfig config_;
  BatchLayout layout_;
};

}  // namespace stripeline
