#include "core/profile.h"

#include <algorithm>
#include <cstring>

namespace stripeline {

namespace {
constexpr std::size_t align_up(std::size_t n) { return (n + 255) / 256 * 256; }
}  // namespace

std::size_t ProfileBatch::storage_bytes(int width, int capacity, int slots) {
  const std::size_t n = static_cast<std::size_t>(width) * capacity * slots;
  const std::size_t c = static_cast<std::size_t>(width) * capacity;
  return align_up(n * 4) + align_up(n * 2) + align_up(n * 2) + align_up(c);
}

ProfileBatch::ProfileBatch(int w, int cap, int s, HostAllocator alloc)
    : width(w), capacity(cap), slots(s), storage(alloc(storage_bytes(w, cap, s))), meta(cap) {
  const std::size_t n = static_cast<std::size_t>(w) * cap * s;
  std::byte* p = storage.data();
  position = reinterpret_cast<std::int32_t*>(p);
  p += align_up(n * 4);
  intensity = reinterpret_cast<std::uint16_t*>(p);
  p += align_up(n * 2);
  stripe_width = reinterpret_cast<std::uint16_t*>(p);
  p += align_up(n * 2);
  count = reinterpret_cast<std::uint8_t*>(p);
}

// Both loops are written to vectorise: 32-bit partial sums per row.
std::uint64_t ProfileBatch::overflow() const {
  std::uint64_t lost = 0;
  const std::uint32_t s = static_cast<std::uint32_t>(slots);
  for (int f = 0; f < frames; ++f) {
    const std::uint8_t* c = count + static_cast<std::size_t>(f) * width;
    std::uint32_t row = 0;
    for (int x = 0; x < width; ++x) row += c[x] > s ? c[x] - s : 0u;
    lost += row;
  }
  return lost;
}

std::uint64_t ProfileBatch::points() const {
  std::uint64_t total = 0;
  const std::uint32_t s = static_cast<std::uint32_t>(slots);
  for (int f = 0; f < frames; ++f) {
    const std::uint8_t* c = count + static_cast<std::size_t>(f) * width;
    std::uint32_t row = 0;
    for (int x = 0; x < width; ++x) row += c[x] < s ? c[x] : s;
    total += row;
  }
  return total;
}

void ProfileBatch::clear_frame(int f) {
  for (int s = 0; s < slots; ++s) {
    const std::size_t base = slot_index(f, s, 0);
    std::fill(position + base, position + base + width, kNoPeak);
    std::fill(intensity + base, intensity + base + width, std::uint16_t{0});
    std::fill(stripe_width + base, stripe_width + base + width, std::uint16_t{0});
  }
  std::fill(count + static_cast<std::size_t>(f) * width, count + static_cast<std::size_t>(f + 1) * width, std::uint8_t{0});
}

void ProfileBatch::poison() {
  if (storage) std::memset(storage.data(), 0xA5, storage.size());
}

}  // namespace stripeline
