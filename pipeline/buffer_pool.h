#pragma once
// The pool of batch slots: every frame in flight lives in one, so the pool's
// size caps what is in flight by construction. A slot pairs the pixels of a
// batch with the profiles extracted from it; both are allocated once, at
// start, with the backend's allocator (pinned memory for CUDA). With a frame
// grabber that writes whole batches (FrameSource::direct_buffer_bytes), each
// batch's pixels hold the grabber's payload, and the pool's batches are the
// grabber's buffers (Pipeline::run attaches them to the source).
//
// Protocol: acquire() -> source fills -> processor -> sinks -> release().
// At stop, wait_all_returned() blocks until every slot came back.
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "core/batch.h"
#include "core/profile.h"
#include "pipeline/live_batching.h"
#include "pipeline/sink.h"

namespace stripeline {

class BufferPool;

// A slot is also the lease a sink that keeps spans holds (pipeline/sink.h):
// it goes back to the pool when the last holder releases it.
struct Slot final : SpanLease {
  Batch batch;
  ProfileBatch profiles;
  double compute_ms = 0.0;     // processor time spent on this batch
  std::uint64_t points = 0;    // detected points in the profiles
  std::uint64_t overflow = 0;  // points beyond the output slots
  LiveStats live;              // the live path's counters as this batch was acquired (inactive otherwise)
  std::vector<std::int64_t> arrival_ns;  // per frame: when it became available (FrameSource::arrival_ns, else the fill's return), steady_clock
  std::int64_t filled_ns = 0, processed_ns = 0, counted_ns = 0;  // when the fill, the processing and the point count returned, steady_clock (PipelineStats::stages)
  BufferPool* pool = nullptr;
  std::atomic<int> holders{0};  // the sink stage and every sink keeping the span
  void release() noexcept override;
};

class BufferPool {
 public:
  // count >= 1 (PipelineOptions::validate). points: the profiles hold the
  // calibrated points array too (a sheet-of-light calibration is applied).
  // pixel_bytes: each batch's pixel buffer holds at least this many bytes
  // (a grabber's payload, chunk data included); 0 = layout.bytes().
  BufferPool(const BatchLayout& layout, int profile_slots, int count, HostAllocator alloc, bool points = false,
             std::size_t pixel_bytes = 0);
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // Blocks until a slot is free.
  Slot* acquire();
  void release(Slot* slot) noexcept;
  void wait_all_returned();
  int size() const { return static_cast<int>(slots_.size()); }
  int in_use() const;
  bool pinned() const;
  std::size_t bytes() const;
  // Every slot's batch, for FrameSource::attach_buffers (call before the
  // first acquire(); the pointers stay valid for the pool's life).
  std::vector<Batch*> batches() const;
  HostAllocator allocator() const { return alloc_; }

 private:
  HostAllocator alloc_;
  std::vector<std::unique_ptr<Slot>> slots_;
  // Free slots, first in first out, so that consecutive batches cycle
  // through every buffer. A fixed ring: no allocation after construction.
  std::vector<Slot*> ring_;
  std::size_t head_ = 0, free_count_ = 0;
  mutable std::mutex mutex_;
  std::condition_variable returned_;
};

}  // namespace stripeline
