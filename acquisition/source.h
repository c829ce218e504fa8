#pragma once
// Where frames come from. A source writes frames straight into the batch
// buffers the pipeline hands it (pinned memory on the CUDA backend): no
// intermediate copy for file replay, synthetic frames or cameras.
#include <cstdint>
#include <optional>
#include <string>

#include "core/batch.h"

namespace stripeline {

class FrameSource {
 public:
  virtual ~FrameSource() = default;
  // Width, frame height and pixel format of every frame (frames = 0).
  virtual BatchLayout frame_layout() const = 0;
  // Fill up to batch.layout.frames frames (pixels and meta) and set
  // batch.frames. Returns false, with batch.frames == 0, once the source is
  // exhausted. A partial batch is returned only as the last one.
  // Throws InputError for bad data, RuntimeFailure for device failures.
  virtual bool fill(Batch& batch) = 0;
  // Frames this source will deliver, when known (progress bars).
  virtual std::optional<std::uint64_t> total_frames() const { return std::nullopt; }
  // One line for logs: "synthetic scanner 2048x52 Mono8, seed 1".
  virtual std::string describe() const = 0;
};

}  // namespace stripeline
