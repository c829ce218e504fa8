// What racecheck makes of a resident block taking one bulk copy (the Tensor
// Memory Accelerator) a frame into the same shared memory, as the live
// model does (kernels/cuda/line_model_kernels.cu: issue_staged_copy).
// Session 20's racecheck of the live engine reported the copies as
// write-write hazards against each other; this probe runs the pattern alone
// in two forms, to tell a real hazard from the tool's view of one:
//   old: the issuing thread alone fences the proxies, after the block's
//        barrier, and sets the mbarrier up again for every copy (parity 0);
//   new: every thread fences the proxies before that barrier (the PTX
//        memory model's order from the generic proxy's writes to the copy's),
//        and the mbarrier is set up once, its phase flipping a frame.
// Each frame, after the copy lands, every thread reads the span and writes
// over it (the model's scratch reuses it); the output is checked, so a
// copy landing early or late shows as a wrong sum, whatever racecheck says.
// A standalone check, not part of the build (sm_90):
//   nvcc -O3 -std=c++20 -arch=sm_90 -lineinfo bench/bulk_copy_racecheck_probe.cu -o probe
//   compute-sanitizer --tool racecheck ./probe old; compute-sanitizer --tool racecheck ./probe new
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <cuda_runtime.h>

#include "standalone_check.h"

constexpr int kThreads = 256, kSpan = 16384, kFrames = 8;  // bytes a frame (16-byte multiple)

__device__ unsigned shared_address(const void* p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }

__device__ void init_barrier(std::uint64_t* bar) {
  asm volatile("mbarrier.init.shared.b64 [%0], 1;" ::"r"(shared_address(bar)) : "memory");
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

__device__ void issue_copy(unsigned char* to, const unsigned char* from, std::uint64_t* bar) {
  std::uint64_t global = 0;
  asm volatile("cvta.to.global.u64 %0, %1;" : "=l"(global) : "l"(from));
  asm volatile("mbarrier.arrive.expect_tx.shared.b64 _, [%0], %1;" ::"r"(shared_address(bar)), "r"(kSpan) : "memory");
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(shared_address(to)), "l"(global),
               "r"(kSpan), "r"(shared_address(bar))
               : "memory");
}

__device__ void wait_copy(std::uint64_t* bar, unsigned parity) {
  for (unsigned done = 0; done == 0;)
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                 : "=r"(done)
                 : "r"(shared_address(bar)), "r"(parity)
                 : "memory");
}

template <bool kNew>
__global__ void frames_kernel(const unsigned char* frames, unsigned* sums) {
  __shared__ __align__(128) unsigned char span[kSpan];
  __shared__ __align__(8) std::uint64_t bar;
  if (kNew && threadIdx.x == 0) init_barrier(&bar);
  __syncthreads();
  for (int f = 0; f < kFrames; ++f) {
    if (kNew) asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // every thread's writes of the last frame before the copy over them
    __syncthreads();
    if (threadIdx.x == 0) {
      if (!kNew) init_barrier(&bar);
      issue_copy(span, frames + static_cast<std::size_t>(f) * kSpan, &bar);
    }
    if (!kNew) __syncthreads();  // the barrier set up before any thread waits on it
    wait_copy(&bar, kNew ? static_cast<unsigned>(f & 1) : 0u);
    unsigned sum = 0;
    for (int i = threadIdx.x; i < kSpan; i += kThreads) sum += span[i];
    __syncthreads();
    for (int i = threadIdx.x; i < kSpan; i += kThreads) span[i] = 0xA5;  // the scratch's reuse of the span
    atomicAdd(&sums[f], sum);
  }
}

int main(int argc, char** argv) {
  const bool use_new = argc > 1 && std::strcmp(argv[1], "new") == 0;
  std::vector<unsigned char> host(static_cast<std::size_t>(kFrames) * kSpan);
  std::vector<unsigned> expected(kFrames, 0);
  for (std::size_t i = 0; i < host.size(); ++i) {
    host[i] = static_cast<unsigned char>((i * 2654435761u) >> 13);
    expected[i / kSpan] += host[i];
  }
  unsigned char* frames = nullptr;
  unsigned* sums = nullptr;
  CHECK(cudaMalloc(&frames, host.size()));
  CHECK(cudaMalloc(&sums, kFrames * sizeof(unsigned)));
  CHECK(cudaMemcpy(frames, host.data(), host.size(), cudaMemcpyHostToDevice));
  CHECK(cudaMemset(sums, 0, kFrames * sizeof(unsigned)));
  if (use_new)
    frames_kernel<true><<<1, kThreads>>>(frames, sums);
  else
    frames_kernel<false><<<1, kThreads>>>(frames, sums);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  std::vector<unsigned> got(kFrames);
  CHECK(cudaMemcpy(got.data(), sums, kFrames * sizeof(unsigned), cudaMemcpyDeviceToHost));
  int wrong = 0;
  for (int f = 0; f < kFrames; ++f) wrong += got[f] != expected[f];
  std::printf("%s form: %d frames, %d with a wrong sum\n", use_new ? "new" : "old", kFrames, wrong);
  CHECK(cudaFree(frames));
  CHECK(cudaFree(sums));
  return wrong == 0 ? 0 : 2;
}
