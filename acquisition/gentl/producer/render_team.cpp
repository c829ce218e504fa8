#include "acquisition/gentl/producer/render_team.h"

#include <algorithm>
#include <utility>

namespace stripeline::gentl_sim {

RenderTeam::RenderTeam(unsigned threads) {
  if (threads == 0) threads = std::clamp(std::thread::hardware_concurrency(), 1u, 16u);
  helpers_.reserve(threads - 1);
  for (unsigned i = 1; i < threads; ++i) helpers_.emplace_back([this] { helper_loop(); });
}

RenderTeam::~RenderTeam() {
  {
    std::lock_guard l(mu_);
    quit_ = true;
  }
  start_cv_.notify_all();
  for (auto& t : helpers_) t.join();
}

void RenderTeam::run(std::uint64_t n, void* fn, Call call) {
  if (n == 0) return;
  {
    std::lock_guard l(mu_);
    job_ = fn;
    call_ = call;
    items_ = n;
    next_ = 0;
    error_ = nullptr;
    ++round_;
  }
  start_cv_.notify_all();
  take_items();
  std::unique_lock l(mu_);
  // Every item taken and every helper out of the round: `fn` may go.
  done_cv_.wait(l, [&] { return next_ >= items_ && working_ == 0; });
  job_ = nullptr;
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

// Items one at a time until none is left (after an exception, the rest are skipped).
void RenderTeam::take_items() {
  std::unique_lock l(mu_);
  while (next_ < items_) {
    const std::uint64_t i = next_++;
    void* fn = job_;
    const Call call = call_;
    l.unlock();
    std::exception_ptr failed;
    try {
      call(fn, i);
    } catch (...) {
      failed = std::current_exception();
    }
    l.lock();
    if (failed) {
      if (!error_) error_ = failed;
      next_ = items_;
    }
  }
}

void RenderTeam::helper_loop() {
  std::uint64_t seen = 0;
  std::unique_lock l(mu_);
  for (;;) {
    start_cv_.wait(l, [&] { return quit_ || (round_ != seen && next_ < items_); });
    if (quit_) return;
    seen = round_;
    ++working_;
    l.unlock();
    take_items();
    l.lock();
    --working_;
    done_cv_.notify_all();
  }
}

}  // namespace stripeline::gentl_sim
