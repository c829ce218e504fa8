#pragma once
// Where each array of a batch of profiles lives inside one allocation. The
// host ProfileBatch and the CUDA backend's device profiles use the same
// layout, so one D2H copy per array lands every value where the host expects
// it. Structure-of-arrays, frame-major then slot then column (a GPU writes it
// coalesced, a host reads one profile as contiguous rows):
//   position [frame][slot][column]  int32
//   intensity[frame][slot][column]  uint16
//   width    [frame][slot][column]  uint16
//   quality  [frame][slot][column]  uint16 (contrast, pixel units, saturated)
//   count    [frame][column]        uint8
//   xyz      [frame][slot][column][3] float, only with a sheet-of-light
//            calibration: (X, Y - frame's motion position, Z) mm of every
//            detection, NaN where none (kernels/calibrated_points.h)
// Each array starts on a 256-byte boundary.
#include <cstddef>

namespace stripeline {

struct ProfileLayout {
  int width = 0;
  int capacity = 0;  // frames
  int slots = 1;
  std::size_t position_offset = 0;
  std::size_t intensity_offset = 0;
  std::size_t width_offset = 0;
  std::size_t quality_offset = 0;
  std::size_t count_offset = 0;
  bool xyz = false;            // the points array (xyz) is present
  std::size_t xyz_offset = 0;  // valid when xyz
  std::size_t bytes = 0;  // the whole allocation

  static constexpr std::size_t kAlign = 256;
  static constexpr std::size_t align_up(std::size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

  static ProfileLayout make(int width, int capacity, int slots, bool xyz = false) {
    ProfileLayout l;
    l.width = width;
    l.capacity = capacity;
    l.slots = slots;
    const std::size_t n = static_cast<std::size_t>(width) * capacity * slots;  // per-slot values
    const std::size_t c = static_cast<std::size_t>(width) * capacity;          // per-column counts
    l.position_offset = 0;
    l.intensity_offset = l.position_offset + align_up(n * 4);
    l.width_offset = l.intensity_offset + align_up(n * 2);
    l.quality_offset = l.width_offset + align_up(n * 2);
    l.count_offset = l.quality_offset + align_up(n * 2);
    l.bytes = l.count_offset + align_up(c);
    l.xyz = xyz;
    if (xyz) {
      l.xyz_offset = l.bytes;
      l.bytes += align_up(n * 3 * sizeof(float));
    }
    return l;
  }
  // Elements of one per-slot array for `frames` frames, and of the count array.
  std::size_t slot_values(int frames) const { return static_cast<std::size_t>(frames) * slots * width; }
  std::size_t count_values(int frames) const { return static_cast<std::size_t>(frames) * width; }
};

}  // namespace stripeline
