#include "core/host_buffer.h"

#include <cstdlib>
#include <string>

#include "core/errors.h"

namespace stripeline {

namespace {
void release_aligned(void* p) noexcept { std::free(p); }
}  // namespace

HostBuffer allocate_host(std::size_t bytes) {
  constexpr std::size_t kAlign = 4096;
  const std::size_t rounded = (bytes + kAlign - 1) / kAlign * kAlign;
  void* p = std::aligned_alloc(kAlign, rounded == 0 ? kAlign : rounded);
  if (!p) throw RuntimeFailure("out of host memory allocating " + std::to_string(bytes) + " bytes");
  return HostBuffer(p, bytes, &release_aligned, false);
}

}  // namespace stripeline
