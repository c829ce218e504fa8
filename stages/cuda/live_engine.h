#pragma once
// The live path's persistent engine (issue 24): a frame's chain and line
// model on kernels that stay resident (kernels/cuda/live_kernels.h), fed
// through a mailbox in pinned host memory. A frame costs the host a few
// stores and a spin: no launch, no copy, no event, no driver call. The
// live path's default (ChainConfig::persistent_engine).
//
// Why: with CUDA graphs a frame alone cost the host ~10 us beyond its
// kernels (the graph's launch, the upload by the copy engine, the event),
// and the driver's calls were where the tails came from (docs/cuda.md).
//
// One engine a device at a time, shared by the processors that ask for the
// same key (the lane threads' processors of one run): its chain kernel keeps
// a block on every strip of the frame, all resident. Frames are processed in
// the order submit() numbered them; the copy kernel runs up to three frames
// ahead of the model and the chain up to two, and the model's two blocks
// take the frames in turn, so that frames arriving faster than one a
// frame's model (~17 us) overlap (the rate the engine sustains).
//
// While its kernels run, whatever waits for the whole device (cudaFree,
// cudaFreeHost, cudaDeviceSynchronize) waits for them: they end by
// themselves after 10 ms without a frame (LiveChainArgs::idle_ns), and the
// next submit() starts them again (~0.1 ms). The processors pause it before
// they free their buffers (pause()), and hold it while a batch of their own
// runs beside it (hold(), release()).
//
// Thread-safety: submit(), wait(), hold() and release() from any threads;
// pause() from one whose processor is going away (no submit() of its own in
// flight).
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/cuda/runtime.h"
#include "kernels/cuda/live_kernels.h"
#include "stages/cuda/device_profiles.h"
#include "kernels/line_model.h"

namespace stripeline::cuda {

// What the kernels are made for: processors share an engine when equal.
struct LiveEngineKey {
  int device = 0;
  int width = 0, height = 0, bytes_per_pixel = 1;
  kernels::cuda::ChainParams chain;
  kernels::LineModelParams line;
  bool warp_evaluation = true;
  bool copy_ahead = true;  // CudaProcessorOptions::live_copy_ahead
  bool operator==(const LiveEngineKey&) const = default;
};

class LiveEngine {
 public:
  // The engine of `key` on its device (made current by the caller): the
  // running one when its key is this one, else a new one. Null when another
  // key's engine runs there, or when the kernels cannot all be resident (a
  // warning says why): the caller goes on with its graphs.
  static std::shared_ptr<LiveEngine> attach(const LiveEngineKey& key);

  ~LiveEngine();
  LiveEngine(const LiveEngine&) = delete;
  LiveEngine& operator=(const LiveEngine&) = delete;

  // The engine running on `device`, if any (for hold()); any_running() says
  // without a lock whether there is any at all.
  static std::shared_ptr<LiveEngine> running_on(int device);
  static bool any_running();

  // Hands one frame over: `pixels` (pinned host memory, width x height) in,
  // its profiles out into `out` (pinned host arrays of one frame, one slot).
  // Starts the kernels when paused. Returns the frame's ticket for wait(),
  // or 0 while the engine is held, or when its kernels could not all start
  // (a warning; then no new try for a second): the caller goes by its graphs.
  std::uint64_t submit(const void* pixels, const kernels::LineModelArrays& out);
  // Other kernels on the device (a larger batch's graph when the live path
  // falls behind) could not find room beside the resident ones and would
  // wait for the engine to idle, which frames coming keep it from: hold()
  // ends its kernels once every submitted frame is done, and submit()
  // declines frames until every hold is released. Any thread.
  void hold();
  void release();
  // Spins until the ticket's profiles are in `out`; returns its device time
  // in ms (request seen -> profiles written). Throws RuntimeFailure when the
  // frame is not done within 5 s (the kernels stopped or failed).
  double wait(std::uint64_t ticket);
  // Ends the kernels once every submitted frame is done (submit() starts them
  // again): before the caller frees device or pinned memory.
  void pause();

  const LiveEngineKey& key() const { return key_; }
  // Where the frames' device time went, medians over the last frames waited
  // for (kernels::cuda::kLiveStamps): a line for the bench; empty before any.
  std::string phase_report() const;
  // Launches of the kernels so far (the first, and one after each pause or idle end).
  std::uint64_t launches() const { return launches_.load(std::memory_order_relaxed); }

 private:
  explicit LiveEngine(const LiveEngineKey& key);
  bool start(std::uint64_t first_ticket);   // launches the kernels (a few tries); false (stopped) when they do not all start
  bool launch(std::uint64_t first_ticket, int attempt);  // one try: true when every block started and none stopped
  bool resume_after_park(std::uint64_t ticket);  // false: the kernels did not all start again
  std::uint64_t decline_for_a_while();  // under submit_mutex_: 0, and no new start for retry_delay()
  std::chrono::seconds retry_delay() const;  // under submit_mutex_: 1 s, doubling with each failed start up to 64 s
  void record_phases(std::uint64_t ticket);
  void stop() noexcept;
  void stop_after_submitted();  // under submit_mutex_: every submitted frame done, then stop()
  kernels::cuda::LiveMailbox& mailbox() const { return *reinterpret_cast<kernels::cuda::LiveMailbox*>(mailbox_.data()); }

  LiveEngineKey key_;
  HostBuffer mailbox_;     // kernels::cuda::LiveMailbox, pinned
  HostBuffer stop_word_;   // pinned: [0] the stop's value, [1] and [2] the state's stop and alive read back
  DeviceBuffer state_, pixels_, back_, staged_;
  DeviceProfiles candidates_;  // the chain's output, the model's input: two frames (frame n in n & 1), the model's candidate slots
  kernels::cuda::LiveChainArgs chain_args_;
  kernels::cuda::LiveModelArgs model_args_;
  kernels::LineModelView view_;
  Stream copy_stream_, chain_stream_, model_stream_, control_stream_;
  std::array<cudaStream_t, 3> kernel_streams() const { return {copy_stream_.get(), chain_stream_.get(), model_stream_.get()}; }
  // Numbers and publishes requests; starts and pauses. A spinning lock: a
  // request takes it for a few hundred nanoseconds, where a thread put to
  // sleep on a contended std::mutex may wake a scheduler tick later (session
  // 17 took that for its 10.4-10.6 ms stalls with two threads submitting;
  // session 20 found those were the model's 10 ms start wait).
  class SpinLock {
   public:
    void lock() noexcept {
      while (held_.exchange(true, std::memory_order_acquire))
        while (held_.load(std::memory_order_relaxed)) {
        }
    }
    void unlock() noexcept { held_.store(false, std::memory_order_release); }

   private:
    std::atomic<bool> held_{false};
  };
  SpinLock submit_mutex_;
  std::uint64_t submitted_ = 0;   // the last ticket handed out (under submit_mutex_)
  int holds_ = 0;                 // hold() less release() (under submit_mutex_)
  std::chrono::steady_clock::time_point retry_after_{};  // no start before (under submit_mutex_): decline_for_a_while
  int failed_starts_ = 0;  // starts failed since the last that succeeded (under submit_mutex_)
  std::uint64_t first_ = 1;       // the first ticket of the kernels' current launch
  bool running_ = false;          // under submit_mutex_
  std::atomic<std::uint64_t> launches_{0};
  // The phases of the last kPhaseFrames tickets waited for (ns; by ticket, so
  // threads waiting for their own tickets write apart), for phase_report().
  static constexpr std::size_t kPhaseFrames = 4096, kPhases = kernels::cuda::kLiveStamps - 1;
  std::vector<std::array<std::uint32_t, kPhases>> phases_ = std::vector<std::array<std::uint32_t, kPhases>>(kPhaseFrames);
  std::vector<std::uint32_t> device_ns_ = std::vector<std::uint32_t>(kPhaseFrames);  // each one's whole time on the device (its tail beside the host's)
  std::atomic<std::uint64_t> waited_{0};
  // Every frame's device time, for the report's tail: whether a late frame
  // was late on the device or on the host.
  static constexpr std::uint64_t kSlowDeviceNs = 100'000;
  std::atomic<std::uint64_t> device_ns_max_{0}, slow_on_device_{0};
};

}  // namespace stripeline::cuda
