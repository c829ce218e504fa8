#pragma once
// ProfileBatch: what extraction makes of a Batch. One profile (height row)
// per frame; per column up to `slots` peaks (1 for cog/max/window, more for
// local-max "all" and for the "all" method).
//
// Storage is structure-of-arrays, frame-major then slot then column, so that
// a GPU writes it coalesced and a host reads one profile as contiguous rows:
//   position [frame][slot][column]  int32, 1/256 px from the top row's centre, kNoPeak if empty
//   intensity[frame][slot][column]  uint16, the peak pixel (after blur)
//   width    [frame][slot][column]  uint16, pixels in the above-threshold run holding the peak
//   count    [frame][column]        uint8, peaks found (saturates at 255); slots filled = min(count, slots)
#include <cstdint>
#include <vector>

#include "core/fixed_point.h"
#include "core/host_buffer.h"
#include "core/types.h"

namespace stripeline {

struct ProfileBatch {
  int width = 0;
  int capacity = 0;   // frames
  int slots = 1;
  int frames = 0;     // frames filled, = Batch::frames after processing
  std::uint64_t sequence = 0;
  std::uint64_t first_index = 0;
  HostBuffer storage;
  std::int32_t* position = nullptr;
  std::uint16_t* intensity = nullptr;
  std::uint16_t* stripe_width = nullptr;
  std::uint8_t* count = nullptr;
  std::vector<FrameMeta> meta;  // copied from the batch

  ProfileBatch() = default;
  ProfileBatch(int width, int capacity, int slots, HostAllocator alloc);

  static std::size_t storage_bytes(int width, int capacity, int slots);

  std::size_t slot_index(int frame, int slot, int column) const {
    return (static_cast<std::size_t>(frame) * slots + slot) * width + column;
  }
  int peaks(int frame, int column) const {
    const int c = count[static_cast<std::size_t>(frame) * width + column];
    return c < slots ? c : slots;
  }
  // Points found beyond the slots (counted, never silently dropped).
  std::uint64_t overflow() const;
  // Detected points in the filled frames.
  std::uint64_t points() const;
  // Make frame f's profile empty (no peak in any column): a frame that never
  // arrived must never become a valid row, whatever its pixels held.
  void clear_frame(int f);
  // Fill every output with a recognisable garbage pattern (tests: an unwritten element fails).
  void poison();
};

}  // namespace stripeline
