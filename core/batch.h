#pragma once
// Batch: N consecutive frames in one contiguous buffer, exactly as a frame
// grabber concatenates them (300 frames of 2048x52 = one 2048x15600 buffer).
// The unit of work of every stage and of the pipeline.
#include <cstdint>
#include <vector>

#include "core/host_buffer.h"
#include "core/types.h"

namespace stripeline {

struct Batch {
  BatchLayout layout;            // capacity: layout.frames frames
  int frames = 0;                // frames filled (the last batch of a recording may be partial)
  std::uint64_t sequence = 0;    // batch number in acquisition order
  std::uint64_t first_index = 0; // global 0-based index of frames[0] in acquisition order
  HostBuffer pixels;             // layout.bytes() bytes (pinned when the backend wants it)
  std::vector<FrameMeta> meta;   // layout.frames entries, allocated once

  Batch() = default;
  Batch(const BatchLayout& l, HostAllocator alloc) : layout(l), pixels(alloc(l.bytes())), meta(l.frames) {}

  // Rows of the filled frames, as one tall image (frames * frame_height rows).
  template <class T>
  ImageView<T> view() {
    return {reinterpret_cast<T*>(pixels.data()), layout.width, frames * layout.frame_height, layout.width};
  }
  template <class T>
  ImageView<const T> view() const {
    return {reinterpret_cast<const T*>(pixels.data()), layout.width, frames * layout.frame_height, layout.width};
  }
  std::byte* frame_data(int i) const {
    return pixels.data() + static_cast<std::size_t>(i) * layout.frame_pixels() * bytes_per_pixel(layout.format);
  }
  // Take another batch's frame count, position in the stream and metadata
  // (not its pixels): for stages that write a batch from another.
  void copy_header_from(const Batch& other) {
    if (&other == this) return;
    frames = other.frames;
    sequence = other.sequence;
    first_index = other.first_index;
    for (int i = 0; i < other.frames && i < static_cast<int>(meta.size()); ++i) meta[i] = other.meta[i];
  }
  std::size_t filled_bytes() const {
    return static_cast<std::size_t>(frames) * layout.frame_pixels() * bytes_per_pixel(layout.format);
  }
};

}  // namespace stripeline
