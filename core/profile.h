#pragma once
// What extraction makes of a Batch: one profile (height row) per frame, per
// column up to `slots` peaks (1 for cog/max/window, more for local-max "all"
// and for the "all" method). Two types, as owners and views always are:
//
//  - ProfileBatch OWNS the arrays (one allocation, laid out by ProfileLayout)
//    and the per-frame metadata. The pipeline's buffer pool holds them; a
//    processor writes them.
//  - ProfileSpan is a non-owning view of consecutive profiles: the frames'
//    global indices, their metadata and the arrays. Sinks consume spans; a
//    span of part of a batch is subspan(), no copy.
//
// Arrays (ProfileLayout):
//   position [frame][slot][column]  int32, 1/256 px from the top row's centre, kNoPeak if empty
//   intensity[frame][slot][column]  uint16, the peak pixel (after blur)
//   width    [frame][slot][column]  uint16, pixels in the above-threshold run holding the peak
//   count    [frame][column]        uint8, peaks found (saturates at 255); slots filled = min(count, slots)
//   xyz      [frame][slot][column][3] float, with a sheet-of-light calibration
//            only (else null): X, Y relative to the frame's motion position
//            (ProfileMapping::point_y), Z in mm, computed by the processor on
//            its backend (on the GPU inside the batch); NaN = no point
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/fixed_point.h"
#include "core/host_buffer.h"
#include "core/profile_layout.h"
#include "core/types.h"

namespace stripeline {

struct ProfileSpan {
  std::uint64_t sequence = 0;     // number of the batch the profiles came from
  std::uint64_t first_index = 0;  // global 0-based frame index of profile 0
  int frames = 0;
  int width = 0;
  int slots = 1;
  const FrameMeta* meta = nullptr;           // frames entries
  const std::int32_t* position = nullptr;    // [frame][slot][column]
  const std::uint16_t* intensity = nullptr;  // [frame][slot][column]
  const std::uint16_t* stripe_width = nullptr;
  const std::uint16_t* quality = nullptr;    // [frame][slot][column]: contrast above the local background, pixel units (saturated at 65535)
  const std::uint8_t* count = nullptr;       // [frame][column]
  const float* xyz = nullptr;                // [frame][slot][column][3], or null (see above)

  std::size_t slot_index(int frame, int slot, int column) const {
    return (static_cast<std::size_t>(frame) * slots + slot) * width + column;
  }
  // Slots filled in (frame, column).
  int peaks(int frame, int column) const {
    const int c = count[static_cast<std::size_t>(frame) * width + column];
    return c < slots ? c : slots;
  }
  // Slot 0's position, or kNoPeak when the column has none.
  std::int32_t primary(int frame, int column) const {
    return peaks(frame, column) > 0 ? position[slot_index(frame, 0, column)] : kNoPeak;
  }
  std::uint64_t index(int frame) const { return first_index + static_cast<std::uint64_t>(frame); }
  // Profiles [first, first + n) of this span.
  ProfileSpan subspan(int first, int n) const;
};

// The owner. Processors write the arrays; the pipeline hands sinks span().
class ProfileBatch {
 public:
  ProfileBatch() = default;
  // with_xyz: also hold the calibrated points array (ProfileLayout::xyz).
  ProfileBatch(int width, int capacity, int slots, HostAllocator alloc, bool with_xyz = false);
  ProfileBatch(ProfileBatch&&) = default;
  ProfileBatch& operator=(ProfileBatch&&) = default;

  int width = 0;
  int capacity = 0;  // frames
  int slots = 1;
  // The frame header, set by the processor's non-virtual wrapper
  // (stages/chain.h) from the batch, never by a backend.
  int frames = 0;
  std::uint64_t sequence = 0;
  std::uint64_t first_index = 0;
  std::vector<FrameMeta> meta;  // capacity entries, allocated once
  // The arrays, inside storage() (layout()).
  std::int32_t* position = nullptr;
  std::uint16_t* intensity = nullptr;
  std::uint16_t* stripe_width = nullptr;
  std::uint16_t* quality = nullptr;
  std::uint8_t* count = nullptr;
  float* xyz = nullptr;  // calibrated points; null unless constructed with_xyz

  const ProfileLayout& layout() const { return layout_; }
  const HostBuffer& storage() const { return storage_; }
  std::size_t slot_index(int frame, int slot, int column) const {
    return (static_cast<std::size_t>(frame) * slots + slot) * width + column;
  }
  int peaks(int frame, int column) const {
    const int c = count[static_cast<std::size_t>(frame) * width + column];
    return c < slots ? c : slots;
  }
  // The filled frames as a view (what sinks consume).
  ProfileSpan span() const;

  // Detected points in the filled frames (at most `slots` per column), and
  // points found beyond the slots (counted, never silently dropped). One pass.
  struct PointCounts {
    std::uint64_t points = 0, overflow = 0;
  };
  PointCounts count_points() const;
  std::uint64_t points() const { return count_points().points; }
  std::uint64_t overflow() const { return count_points().overflow; }
  // Make frame f's profile empty (no peak in any column): a frame that never
  // arrived must never become a valid row, whatever its pixels held.
  void clear_frame(int f);
  // Fill every output with a recognisable garbage pattern (tests: an unwritten element fails).
  void poison();

 private:
  ProfileLayout layout_;
  HostBuffer storage_;
};

}  // namespace stripeline
