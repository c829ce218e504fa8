#include "core/profile.h"

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

std::uint64_t ProfileBatch::overflow() const {
  std::uint64_t lost = 0;
  const std::size_t n = static_cast<std::size_t>(frames) * width;
  for (std::size_t i = 0; i < n; ++i)
    if (count[i] > slots) lost += static_cast<std::uint64_t>(count[i] - slots);
  return lost;
}

std::uint64_t ProfileBatch::points() const {
  std::uint64_t total = 0;
  const std::size_t n = static_cast<std::size_t>(frames) * width;
  for (std::size_t i = 0; i < n; ++i) total += count[i] < slots ? count[i] : slots;
  return total;
}

void ProfileBatch::poison() {
  if (storage) std::memset(storage.data(), 0xA5, storage.size());
}

}  // namespace stripeline
