#pragma once
// Owning, page-aligned host memory. Pinned (page-locked) memory comes from the
// CUDA backend through the same type, so a Batch never cares which it holds.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <utility>

namespace stripeline {

class HostBuffer {
 public:
  using Release = void (*)(void*) noexcept;

  HostBuffer() = default;
  HostBuffer(void* data, std::size_t bytes, Release release, bool pinned)
      : data_(static_cast<std::byte*>(data)), bytes_(bytes), release_(release), pinned_(pinned), id_(data != nullptr ? next_id() : 0) {}
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  HostBuffer(HostBuffer&& o) noexcept { swap(o); }
  HostBuffer& operator=(HostBuffer&& o) noexcept {
    HostBuffer tmp(std::move(o));
    swap(tmp);
    return *this;
  }
  ~HostBuffer() {
    if (data_ && release_) release_(data_);
  }

  std::byte* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return bytes_; }
  bool pinned() const noexcept { return pinned_; }
  // This allocation's number, unique in the process (0: none). An address
  // freed and given to a later allocation comes back with another number:
  // what keys work captured on the address (a CUDA graph's copies) tells them apart.
  std::uint64_t id() const noexcept { return id_; }
  explicit operator bool() const noexcept { return data_ != nullptr; }

  void swap(HostBuffer& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(bytes_, o.bytes_);
    std::swap(release_, o.release_);
    std::swap(pinned_, o.pinned_);
    std::swap(id_, o.id_);
  }

 private:
  std::byte* data_ = nullptr;
  std::size_t bytes_ = 0;
  Release release_ = nullptr;
  bool pinned_ = false;
  std::uint64_t id_ = 0;
  static std::uint64_t next_id() noexcept {
    static std::atomic<std::uint64_t> last{0};
    return last.fetch_add(1, std::memory_order_relaxed) + 1;
  }
};

// Ordinary pageable memory, 4 KiB aligned. Throws RuntimeFailure when out of memory.
HostBuffer allocate_host(std::size_t bytes);

// A function that allocates host memory for batches: allocate_host, or the
// CUDA backend's pinned allocator.
using HostAllocator = HostBuffer (*)(std::size_t bytes);

}  // namespace stripeline
