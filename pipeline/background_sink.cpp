#include "pipeline/background_sink.h"

#include "core/errors.h"

namespace stripeline {

namespace {
// Spans queued at most: more than any pool holds slots (PipelineOptions
// caps buffers), so the pipeline never waits here; other callers may.
constexpr std::size_t kQueue = 64;
}  // namespace

BackgroundSink::BackgroundSink(std::unique_ptr<ProfileSink> inner, std::string name)
    : inner_(std::move(inner)), name_(std::move(name)), ring_(kQueue) {}

BackgroundSink::~BackgroundSink() {
  if (worker_.joinable()) abort();
}

void BackgroundSink::begin(const ScanInfo& info) {
  if (worker_.joinable()) stop_worker(true);
  inner_->begin(info);
  head_ = size_ = 0;
  busy_ = stopping_ = discard_ = false;
  failure_ = nullptr;
  worker_ = std::thread([this] { work(); });
}

void BackgroundSink::work() {
  std::unique_lock lock(mutex_);
  for (;;) {
    changed_.wait(lock, [this] { return size_ > 0 || stopping_; });
    if (size_ == 0) return;  // stopping, and everything handed over is done
    const Item item = ring_[head_];
    head_ = (head_ + 1) % ring_.size();
    --size_;
    const bool skip = discard_ || failure_ != nullptr;
    busy_ = true;
    lock.unlock();
    if (!skip) {
      try {
        inner_->consume(item.span);
      } catch (...) {
        lock.lock();
        failure_ = std::current_exception();
        lock.unlock();
      }
    }
    if (item.lease) item.lease->release();  // the batch goes back to the pool
    lock.lock();
    busy_ = false;
    changed_.notify_all();
  }
}

void BackgroundSink::rethrow_failure() {
  if (failure_) std::rethrow_exception(failure_);
}

void BackgroundSink::wait_idle(std::unique_lock<std::mutex>& lock) {
  changed_.wait(lock, [this] { return (size_ == 0 && !busy_) || failure_ != nullptr; });
}

void BackgroundSink::consume_kept(const ProfileSpan& profiles, SpanLease& lease) {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [this] { return size_ < ring_.size() || failure_ != nullptr; });
  if (failure_ || !worker_.joinable()) {
    const std::exception_ptr failure = failure_;
    lock.unlock();
    lease.release();
    if (failure) std::rethrow_exception(failure);
    throw RuntimeFailure(name_ + ": consume before begin");
  }
  ring_[(head_ + size_) % ring_.size()] = Item{profiles, &lease};
  ++size_;
  changed_.notify_all();
}

void BackgroundSink::consume(const ProfileSpan& profiles) {
  {
    std::unique_lock lock(mutex_);
    wait_idle(lock);
    rethrow_failure();
  }
  inner_->consume(profiles);
}

void BackgroundSink::stop_worker(bool discard) noexcept {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    discard_ = discard_ || discard;
  }
  changed_.notify_all();
  if (worker_.joinable()) worker_.join();
}

void BackgroundSink::finish() {
  stop_worker(false);  // every queued span consumed first
  rethrow_failure();
  inner_->finish();
}

void BackgroundSink::abort() noexcept {
  stop_worker(true);  // queued spans are released unconsumed
  inner_->abort();
}

}  // namespace stripeline
