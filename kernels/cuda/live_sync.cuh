#pragma once
// The persistent kernels' hand-overs (live_kernels.h): loads and stores with
// the PTX memory model's scopes, and the waits on counters that only grow.
// Device code only.
#include <cstdint>

#include "kernels/cuda/live_kernels.h"

namespace stripeline::kernels::cuda::live {

// Acquire: what the writer stored before its release (or its fence and
// counter) is seen by this thread's later loads, and, after a barrier of
// the block, by every thread of it.
__device__ __forceinline__ std::uint64_t load_acquire_gpu(const std::uint64_t* p) {
  std::uint64_t v;
  asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ std::uint64_t load_acquire_sys(const std::uint64_t* p) {  // host memory the host writes
  std::uint64_t v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ std::uint64_t load_relaxed_sys(const std::uint64_t* p) {  // host memory, a word of a line read by several lanes at once
  std::uint64_t v;
  asm volatile("ld.relaxed.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
// After a relaxed load that saw the host's release: the host's earlier
// stores (the frame's pixels) seen by this thread's later loads.
__device__ __forceinline__ void fence_acq_rel_sys() { asm volatile("fence.acq_rel.sys;" ::: "memory"); }
__device__ __forceinline__ std::uint32_t load_relaxed_gpu(const std::uint32_t* p) {
  std::uint32_t v;
  asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void store_relaxed_gpu(std::uint32_t* p, std::uint32_t v) {
  asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ void fence_sc_sys() { asm volatile("fence.sc.sys;" ::: "memory"); }
__device__ __forceinline__ void store_release_gpu(std::uint64_t* p, std::uint64_t v) {
  asm volatile("st.release.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ void store_release_sys(std::uint64_t* p, std::uint64_t v) {  // host memory the host polls
  asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ std::uint64_t now_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Thread 0 of the chain's block 0 or of the model: frame n's stamp k
// (kLiveStamps) into the mailbox (a posted write over the bus: no wait).
__device__ __forceinline__ void stamp(LiveMailbox* mailbox, std::uint64_t first_ticket, std::uint64_t n, int k) {
  mailbox->finished[(first_ticket + n - 1) % kLiveSlots].stamps[k] = now_ns();
}

// Spins until *counter >= target (true) or the stop flag rises (false).
// `idle`: a wait between frames (nanosleeps between polls, leaving the SM's
// issue slots to other kernels); else a wait inside a frame (no sleep).
__device__ __forceinline__ bool wait_at_least(const std::uint64_t* counter, std::uint64_t target, const LiveState* state, bool idle = false) {
  for (;;) {
    if (load_acquire_gpu(counter) >= target) return true;
    if (load_relaxed_gpu(&state->stop) != 0) return false;
    if (idle) __nanosleep(100);
  }
}

// Spins until frame m's model is written (its block's `modelled` reached
// m; true at once for m < 1) or the stop flag rises (false).
__device__ __forceinline__ bool wait_modelled(const LiveState* state, std::uint64_t m) {
  return m < 1 || wait_at_least(&state->modelled[(m - 1) % kLiveModels], m, state);
}

// Whether every frame up to m has its model written: the last of them of
// each model block (true for m < 1).
__device__ __forceinline__ bool modelled_up_to(const LiveState* state, std::uint64_t m) {
  for (std::uint64_t k = m; k >= 1 && k + kLiveModels > m; --k)
    if (load_acquire_gpu(&state->modelled[(k - 1) % kLiveModels]) < k) return false;
  return true;
}

// A block's arrival on a counter summed over frames (its stores before it
// made visible device-wide first). Thread 0, after a barrier of the block.
__device__ __forceinline__ void arrive(std::uint64_t* counter) {
  __threadfence();
  atomicAdd(reinterpret_cast<unsigned long long*>(counter), 1ull);
}

}  // namespace stripeline::kernels::cuda::live
