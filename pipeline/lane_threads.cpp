// Dedicated lane threads taking batches in turn (pipeline/lane_threads.h).
#include "pipeline/lane_threads.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <limits>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace stripeline {
namespace {

// A turn counter: which batch may take the step next. On failure it is set
// to kStopped, which every waiter sees; a normal hand-on is a
// compare-exchange, so it never overwrites kStopped.
class Turn {
 public:
  static constexpr std::uint64_t kStopped = std::numeric_limits<std::uint64_t>::max();
  // Until it is batch k's turn (true) or the run stopped (false). Spins for
  // a while (a frame period at the rates the per-frame path serves), then
  // sleeps on the counter (an idle daemon's lanes burn no core).
  bool wait_for(std::uint64_t k) const {
    const auto spin_until = std::chrono::steady_clock::now() + kSpin;
    for (unsigned i = 0;; ++i) {
      const std::uint64_t v = value_.load(std::memory_order_acquire);
      if (v == k) return true;
      if (v == kStopped) return false;
      if ((i & 63) != 63) {
        relax();
      } else if (std::chrono::steady_clock::now() > spin_until) {
        value_.wait(v, std::memory_order_acquire);
      }
    }
  }
  // Batch k's step is done: batch k+1's turn (unless the run stopped).
  void pass(std::uint64_t k) {
    std::uint64_t expected = k;
    if (value_.compare_exchange_strong(expected, k + 1, std::memory_order_acq_rel)) value_.notify_all();
  }
  void stop() {
    value_.store(kStopped, std::memory_order_release);
    value_.notify_all();
  }

 private:
  static constexpr std::chrono::milliseconds kSpin{2};
  static void relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
  }
  std::atomic<std::uint64_t> value_{0};
};

// The first failure, kept for run_in_turns to rethrow; every turn stops.
class Failure {
 public:
  Failure(Turn& acquire, Turn& sink) : acquire_(acquire), sink_(sink) {}
  void record(std::exception_ptr e) {
    {
      std::lock_guard lock(mutex_);
      if (!error_) error_ = std::move(e);
    }
    acquire_.stop();
    sink_.stop();
  }
  void rethrow() const {
    if (error_) std::rethrow_exception(error_);
  }

 private:
  Turn& acquire_;
  Turn& sink_;
  std::mutex mutex_;
  std::exception_ptr error_;
};

}  // namespace

void run_in_turns(int lanes, const TurnSteps& steps, const ThreadScheduling& scheduling) {
  Turn acquire_turn, sink_turn;
  Failure failure(acquire_turn, sink_turn);
  bool ended = false;  // read and written by the acquire turn's holder only (ordered by the turn)
  const auto lane = [&](int t) {
    try {
      if (!scheduling.is_default()) apply_to_current_thread(scheduling, "lane thread " + std::to_string(t));
    } catch (...) {
      failure.record(std::current_exception());
      return;
    }
    for (std::uint64_t k = static_cast<std::uint64_t>(t);; k += static_cast<std::uint64_t>(lanes)) {
      if (!acquire_turn.wait_for(k)) return;
      Slot* slot = nullptr;
      try {
        if (!ended) slot = steps.acquire();
      } catch (...) {
        failure.record(std::current_exception());
        return;
      }
      ended = slot == nullptr;
      acquire_turn.pass(k);
      if (slot == nullptr) return;
      try {
        steps.process(slot, t);
      } catch (...) {
        failure.record(std::current_exception());
        return;
      }
      if (!sink_turn.wait_for(k)) {
        steps.abandon(slot);
        return;
      }
      try {
        steps.sink(slot);
      } catch (...) {
        failure.record(std::current_exception());
        return;
      }
      sink_turn.pass(k);
    }
  };
  std::vector<std::thread> threads;
  threads.reserve(static_cast<std::size_t>(lanes));
  for (int t = 0; t < lanes; ++t) threads.emplace_back(lane, t);
  for (std::thread& thread : threads) thread.join();
  failure.rethrow();
}

}  // namespace stripeline
