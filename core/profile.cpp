#include "core/profile.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace stripeline {

ProfileSpan ProfileSpan::subspan(int first, int n) const {
  ProfileSpan s = *this;
  const std::size_t off = slot_index(first, 0, 0);
  s.first_index = first_index + static_cast<std::uint64_t>(first);
  s.frames = n;
  s.meta = meta + first;
  s.position = position + off;
  s.intensity = intensity + off;
  s.stripe_width = stripe_width + off;
  s.quality = quality + off;
  s.count = count + static_cast<std::size_t>(first) * width;
  if (xyz) s.xyz = xyz + 3 * off;
  return s;
}

ProfileBatch::ProfileBatch(int w, int cap, int s, HostAllocator alloc, bool with_xyz)
    : width(w), capacity(cap), slots(s), meta(cap), layout_(ProfileLayout::make(w, cap, s, with_xyz)), storage_(alloc(layout_.bytes)) {
  std::byte* base = storage_.data();
  position = reinterpret_cast<std::int32_t*>(base + layout_.position_offset);
  intensity = reinterpret_cast<std::uint16_t*>(base + layout_.intensity_offset);
  stripe_width = reinterpret_cast<std::uint16_t*>(base + layout_.width_offset);
  quality = reinterpret_cast<std::uint16_t*>(base + layout_.quality_offset);
  count = reinterpret_cast<std::uint8_t*>(base + layout_.count_offset);
  if (layout_.xyz) xyz = reinterpret_cast<float*>(base + layout_.xyz_offset);
}

ProfileSpan ProfileBatch::span() const {
  ProfileSpan s;
  s.sequence = sequence;
  s.first_index = first_index;
  s.frames = frames;
  s.width = width;
  s.slots = slots;
  s.meta = meta.data();
  s.position = position;
  s.intensity = intensity;
  s.stripe_width = stripe_width;
  s.quality = quality;
  s.count = count;
  s.xyz = xyz;
  return s;
}

// Written to vectorise: 32-bit partial sums per row.
ProfileBatch::PointCounts ProfileBatch::count_points() const {
  PointCounts total;
  const std::uint32_t s = static_cast<std::uint32_t>(slots);
  for (int f = 0; f < frames; ++f) {
    const std::uint8_t* c = count + static_cast<std::size_t>(f) * width;
    std::uint32_t points = 0, lost = 0;
    for (int x = 0; x < width; ++x) {
      points += c[x] < s ? c[x] : s;
      lost += c[x] > s ? c[x] - s : 0u;
    }
    total.points += points;
    total.overflow += lost;
  }
  return total;
}

void ProfileBatch::clear_frame(int f) {
  for (int s = 0; s < slots; ++s) {
    const std::size_t base = slot_index(f, s, 0);
    std::fill(position + base, position + base + width, kNoPeak);
    std::fill(intensity + base, intensity + base + width, std::uint16_t{0});
    std::fill(stripe_width + base, stripe_width + base + width, std::uint16_t{0});
    std::fill(quality + base, quality + base + width, std::uint16_t{0});
  }
  std::fill(count + static_cast<std::size_t>(f) * width, count + static_cast<std::size_t>(f + 1) * width, std::uint8_t{0});
  if (xyz) {
    const float none = std::numeric_limits<float>::quiet_NaN();
    std::fill(xyz + 3 * slot_index(f, 0, 0), xyz + 3 * slot_index(f + 1, 0, 0), none);
  }
}

void ProfileBatch::poison() {
  if (storage_) std::memset(storage_.data(), 0xA5, storage_.size());
}

}  // namespace stripeline
