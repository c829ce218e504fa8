#include "pipeline/buffer_pool.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "core/errors.h"

namespace stripeline {

BufferPool::BufferPool(const BatchLayout& layout, int profile_slots, int count, HostAllocator alloc, bool points, std::size_t pixel_bytes)
    : alloc_(alloc) {
  slots_.reserve(count);
  ring_.resize(count);
  for (int i = 0; i < count; ++i) {
    auto s = std::make_unique<Slot>();
    s->pool = this;
    s->batch.layout = layout;
    s->batch.pixels = alloc(std::max(layout.bytes(), pixel_bytes));
    s->batch.meta.resize(static_cast<std::size_t>(layout.frames));
    s->arrival_ns.resize(static_cast<std::size_t>(layout.frames));
    s->profiles = ProfileBatch(layout.width, layout.frames, profile_slots, alloc, points);
    ring_[i] = s.get();
    ++free_count_;
    slots_.push_back(std::move(s));
  }
}

void Slot::release() noexcept {
  if (holders.fetch_sub(1, std::memory_order_acq_rel) == 1) pool->release(this);
}

Slot* BufferPool::acquire() {
  std::unique_lock lock(mutex_);
  returned_.wait(lock, [this] { return free_count_ > 0; });
  Slot* s = ring_[head_];
  head_ = (head_ + 1) % ring_.size();
  --free_count_;
  return s;
}

void BufferPool::release(Slot* slot) noexcept {
  {
    std::lock_guard lock(mutex_);
    if (free_count_ == ring_.size()) {  // a programming error; never throw from the release path
      spdlog::error("buffer pool: a slot was released twice");
      return;
    }
    ring_[(head_ + free_count_) % ring_.size()] = slot;
    ++free_count_;
  }
  returned_.notify_all();
}

void BufferPool::wait_all_returned() {
  std::unique_lock lock(mutex_);
  returned_.wait(lock, [this] { return free_count_ == slots_.size(); });
}

int BufferPool::in_use() const {
  std::lock_guard lock(mutex_);
  return static_cast<int>(slots_.size() - free_count_);
}

bool BufferPool::pinned() const { return !slots_.empty() && slots_.front()->batch.pixels.pinned(); }

std::size_t BufferPool::bytes() const {
  std::size_t total = 0;
  for (const auto& s : slots_) total += s->batch.pixels.size() + s->profiles.storage().size();
  return total;
}

std::vector<Batch*> BufferPool::batches() const {
  std::vector<Batch*> v;
  v.reserve(slots_.size());
  for (const auto& s : slots_) v.push_back(&s->batch);
  return v;
}

}  // namespace stripeline
