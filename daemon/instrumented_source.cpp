#include "daemon/instrumented_source.h"

#include <fmt/format.h>

#include <algorithm>

namespace stripeline::daemon {

InstrumentedSource::InstrumentedSource(FrameSource& inner, double rate, std::function<void(SourceEnd)> on_end)
    : inner_(inner), rate_(rate), on_end_(std::move(on_end)) {}

std::string InstrumentedSource::describe() const {
  return rate_ > 0 ? fmt::format("{}, paced at {} frames/s", inner_.describe(), rate_) : inner_.describe();
}

bool InstrumentedSource::fill(Batch& batch) {
  if (stop_.load()) {
    batch.frames = 0;
    return false;
  }
  if (!inner_.fill(batch) || batch.frames == 0) {
    if (on_end_) on_end_(inner_.end_reason());
    return false;
  }
  if (rate_ > 0) {  // the batch is complete when its last frame is due
    std::unique_lock lock(mu_);
    if (!start_) start_ = clock::now();
    paced_frames_ += static_cast<std::uint64_t>(batch.frames);
    const auto due = *start_ + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(paced_frames_ / rate_));
    cv_.wait_until(lock, due, [this] { return stop_.load(); });
  }
  std::uint64_t missing = 0;
  for (int i = 0; i < batch.frames; ++i) missing += batch.meta[i].missing ? 1 : 0;
  frames_ += static_cast<std::uint64_t>(batch.frames);
  missing_ += missing;
  std::lock_guard lock(mu_);
  filled_.push_back(clock::now());
  return true;
}

std::optional<std::uint64_t> InstrumentedSource::pending_frames() const {
  if (const auto inner = inner_.pending_frames()) return inner;
  if (rate_ <= 0) return std::nullopt;
  std::lock_guard lock(mu_);
  if (!start_) return 0;
  const double due = std::chrono::duration<double>(clock::now() - *start_).count() * rate_;
  return due > static_cast<double>(paced_frames_) ? static_cast<std::uint64_t>(due - static_cast<double>(paced_frames_)) : 0;
}

std::uint64_t InstrumentedSource::drop_pending(std::uint64_t n) {
  if (inner_.pending_frames() || rate_ <= 0) return inner_.drop_pending(n);
  // Paced here: the frames due are skipped (the inner source is not read for them).
  const std::uint64_t k = std::min(n, pending_frames().value_or(0));
  std::lock_guard lock(mu_);
  paced_frames_ += k;
  return k;
}

void InstrumentedSource::stop() {
  stop_ = true;
  inner_.request_stop();
  std::lock_guard lock(mu_);
  cv_.notify_all();
}

std::optional<double> InstrumentedSource::batch_done() {
  std::lock_guard lock(mu_);
  if (filled_.empty()) return std::nullopt;
  const double s = std::chrono::duration<double>(clock::now() - filled_.front()).count();
  filled_.pop_front();
  return s;
}

std::size_t InstrumentedSource::in_flight() const {
  std::lock_guard lock(mu_);
  return filled_.size();
}

double InstrumentedSource::oldest_in_flight_seconds() const {
  std::lock_guard lock(mu_);
  return filled_.empty() ? 0.0 : std::chrono::duration<double>(clock::now() - filled_.front()).count();
}

}  // namespace stripeline::daemon
