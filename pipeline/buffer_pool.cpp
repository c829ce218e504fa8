#include "pipeline/buffer_pool.h"

#include "core/errors.h"

namespace stripeline {

BufferPool::BufferPool(const BatchLayout& layout, int profile_slots, int count, HostAllocator alloc) {
  if (count < 1) throw ConfigError("buffers = " + std::to_string(count) + " is out of range (expected >= 1)");
  slots_.reserve(count);
  free_.reserve(count);
  for (int i = 0; i < count; ++i) {
    auto s = std::make_unique<Slot>();
    s->batch = Batch(layout, alloc);
    s->profiles = ProfileBatch(layout.width, layout.frames, profile_slots, alloc);
    free_.push_back(s.get());
    slots_.push_back(std::move(s));
  }
}

Slot* BufferPool::acquire() {
  std::unique_lock lock(mutex_);
  returned_.wait(lock, [this] { return !free_.empty(); });
  Slot* s = free_.back();
  free_.pop_back();
  return s;
}

void BufferPool::release(Slot* slot) {
  {
    std::lock_guard lock(mutex_);
    free_.push_back(slot);
  }
  returned_.notify_all();
}

void BufferPool::wait_all_returned() {
  std::unique_lock lock(mutex_);
  returned_.wait(lock, [this] { return free_.size() == slots_.size(); });
}

int BufferPool::in_use() const {
  std::lock_guard lock(mutex_);
  return static_cast<int>(slots_.size() - free_.size());
}

bool BufferPool::pinned() const { return !slots_.empty() && slots_.front()->batch.pixels.pinned(); }

std::size_t BufferPool::bytes() const {
  std::size_t total = 0;
  for (const auto& s : slots_) total += s->batch.pixels.size() + s->profiles.storage.size();
  return total;
}

}  // namespace stripeline
