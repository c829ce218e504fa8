// How a resident grid best brings one frame from pinned host memory into
// device memory (issue 24: the live engine's copy phase was 8.8 µs of its
// ~44 µs a frame on an H100). A standalone measurement, not part of the
// build:
//   nvcc -O3 -std=c++20 -arch=sm_90 bench/live_copy_bench.cu -o live_copy_bench
//   ./live_copy_bench [width] [height] [bytes_per_pixel]
// Each variant runs as one resident kernel of `blocks` x 128 threads (the
// live chain's shape) doing `rounds` frames: block 0 stamps %globaltimer and
// raises `go`; every block copies its share; each block waits for the
// shares it needs; block 0 stamps again when it may start its strip, and
// a last grid barrier (not timed) separates the rounds. Medians of the
// rounds after the first tenth. The copy engine (cudaMemcpyAsync) is timed
// with events for comparison, and from the host's call to its completion.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <cuda_runtime.h>

#include "standalone_check.h"

namespace {

constexpr int kThreads = 128, kColumns = 4, kRounds = 2000, kHalo = 2;

enum class Share : int {
  Contiguous = 0,  // the engine's way: each block a contiguous run of 16-byte units, then a grid barrier
  Lines = 1,       // whole 128-byte lines dealt out to the blocks in turn, then a grid barrier
  Groups = 2,      // column groups: `group` blocks copy their columns' rows and wait for their group and its neighbours only
  None = 3,        // no copy: the barriers alone
  Strip = 4,       // each block reads its own strip (plus halo) straight from host memory: no barrier
  GroupBarriers = 5,  // no copy: the column groups' barriers alone
};

struct State {
  unsigned long long go, copied, done;
  unsigned long long group_copied[1024];
};

__device__ __forceinline__ unsigned long long load_acquire(const unsigned long long* p) {
  unsigned long long v;
  asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ std::uint64_t now_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ void wait_at_least(const unsigned long long* c, unsigned long long target) {
  while (load_acquire(c) < target) {
  }
}
// How a block says it is through: the engine's fence and atomic, or one
// atomic with release semantics (no full fence).
__device__ int g_arrive_kind = 0;
__device__ void arrive(unsigned long long* c) {
  if (g_arrive_kind == 0) {
    __threadfence();
    atomicAdd(c, 1ull);
  } else {
    asm volatile("red.release.gpu.global.add.u64 [%0], 1;" ::"l"(c) : "memory");
  }
}
// Block 0's read of the request before it raises `go` (0: none; 1: one
// 8-byte load of host memory; 2: 64 bytes by 8 lanes, one instruction).
__device__ int g_request_read = 0;

__global__ void __launch_bounds__(kThreads) copy_kernel(const unsigned char* host, unsigned char* dev, int width, int height, int bpp, Share share,
                                                      int group, State* st, std::uint64_t* ns, int rounds) {
  const int b = blockIdx.x, blocks = gridDim.x;
  const std::size_t row_bytes = static_cast<std::size_t>(width) * bpp, frame = row_bytes * height, units = frame / 16;
  const int groups = (blocks + group - 1) / group, g = b / group;
  __shared__ unsigned char strip[(kColumns + 2 * kHalo) * 2 * 128];
  for (int n = 1; n <= rounds; ++n) {
    __shared__ std::uint64_t t0;
    if (b == 0 && g_request_read == 2 && threadIdx.x < 8) {
      if (threadIdx.x == 0) t0 = now_ns();
      __syncwarp(0xFFu);
      unsigned long long v;
      asm volatile("ld.relaxed.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(host + 8 * threadIdx.x) : "memory");
      if (__any_sync(0xFFu, v == 0xFFFFFFFFFFFFull)) st->done = 0;
    }
    if (threadIdx.x == 0) {
      if (b == 0) {
        if (g_request_read != 2) t0 = now_ns();
        if (g_request_read == 1) {
          unsigned long long v;
          asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(host) : "memory");
          if (v == 0xFFFFFFFFFFFFull) st->done = 0;
        }
        asm volatile("st.release.gpu.global.u64 [%0], %1;" ::"l"(&st->go), "l"(static_cast<unsigned long long>(n)) : "memory");
      } else {
        wait_at_least(&st->go, n);
      }
    }
    __syncthreads();
    const uint4* src = reinterpret_cast<const uint4*>(host);
    uint4* dst = reinterpret_cast<uint4*>(dev);
    if (share == Share::Contiguous) {
      const std::size_t per = (units + blocks - 1) / blocks, begin = per * b, end = begin + per < units ? begin + per : units;
      for (std::size_t i = begin + threadIdx.x; i < end; i += kThreads) dst[i] = src[i];
    } else if (share == Share::Lines) {
      const std::size_t lines = units / 8;  // 128-byte lines (the frame a multiple of 128 here)
      for (std::size_t line = b; line < lines; line += blocks)
        if (threadIdx.x < 8) dst[line * 8 + threadIdx.x] = src[line * 8 + threadIdx.x];
    } else if (share == Share::Groups) {
      // Group g: columns [g W / groups, (g + 1) W / groups) of every row, as 16-byte units (the group's width a multiple of 16 bytes).
      const std::size_t g_bytes = row_bytes / groups, g_units = g_bytes / 16, items = g_units * height;
      const int in_group = b - g * group;
      for (std::size_t i = in_group * kThreads + threadIdx.x; i < items; i += static_cast<std::size_t>(group) * kThreads) {
        const std::size_t row = i / g_units, u = i % g_units, at = (row * row_bytes + g * g_bytes) / 16 + u;
        dst[at] = src[at];
      }
    } else if (share == Share::Strip) {
      const int x0 = b * kColumns;
      for (int i = threadIdx.x; i < height * (kColumns + 2 * kHalo); i += kThreads) {
        const int row = i / (kColumns + 2 * kHalo), c = i % (kColumns + 2 * kHalo);
        const int x = min(max(x0 - kHalo + c, 0), width - 1);
        for (int k = 0; k < bpp; ++k) strip[(c * height + row) % sizeof strip] = host[row * row_bytes + x * bpp + k];
      }
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      if (share == Share::Groups || share == Share::GroupBarriers) {
        arrive(&st->group_copied[g]);
        // The strip's halo may reach into the neighbouring groups.
        const int x0 = b * kColumns, first = max(x0 - kHalo, 0) * groups / width, last = min(x0 + kColumns - 1 + kHalo, width - 1) * groups / width;
        for (int h = first; h <= last; ++h) wait_at_least(&st->group_copied[h], static_cast<unsigned long long>(min(group, blocks - h * group)) * n);
      } else if (share != Share::Strip) {
        arrive(&st->copied);
        wait_at_least(&st->copied, static_cast<unsigned long long>(blocks) * n);
      }
      if (b == 0) ns[n - 1] = now_ns() - t0;
      arrive(&st->done);  // the next round starts once every block is through
      if (b == 0) wait_at_least(&st->done, static_cast<unsigned long long>(blocks) * n);
    }
    __syncthreads();
    if (share == Share::Strip && strip[threadIdx.x] == 255 && dev[0] == 1) dev[1] = 2;  // keep the loads
  }
}

double median_us(std::vector<std::uint64_t> v) {
  v.erase(v.begin(), v.begin() + v.size() / 10);
  std::sort(v.begin(), v.end());
  return v[v.size() / 2] / 1000.0;
}
double p99_us(std::vector<std::uint64_t> v) {
  v.erase(v.begin(), v.begin() + v.size() / 10);
  std::sort(v.begin(), v.end());
  return v[v.size() * 99 / 100] / 1000.0;
}

}  // namespace

int main(int argc, char** argv) {
  const int width = argc > 1 ? std::atoi(argv[1]) : 2048, height = argc > 2 ? std::atoi(argv[2]) : 52, bpp = argc > 3 ? std::atoi(argv[3]) : 1;
  const std::size_t bytes = static_cast<std::size_t>(width) * height * bpp;
  const int blocks = (width + kColumns - 1) / kColumns;
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("%s, %d SMs; frame %dx%d, %d byte(s) a pixel (%zu bytes), %d blocks of %d threads, %d rounds\n", prop.name, prop.multiProcessorCount, width,
              height, bpp, bytes, blocks, kThreads, kRounds);
  unsigned char *host = nullptr, *dev = nullptr;
  CHECK(cudaHostAlloc(&host, bytes, cudaHostAllocMapped));
  for (std::size_t i = 0; i < bytes; ++i) host[i] = static_cast<unsigned char>(i * 7);
  unsigned char* host_dev = nullptr;
  CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&host_dev), host, 0));
  CHECK(cudaMalloc(&dev, bytes));
  State* st = nullptr;
  std::uint64_t* ns = nullptr;
  CHECK(cudaMalloc(&st, sizeof(State)));
  CHECK(cudaMalloc(&ns, kRounds * sizeof(std::uint64_t)));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  struct Variant {
    const char* name;
    Share share;
    int group;
    int arrive_kind = 0, request_read = 0;
  };
  const Variant variants[] = {
      {"contiguous shares, grid barrier (the engine's)", Share::Contiguous, 1},
      {"128-byte lines in turn, grid barrier", Share::Lines, 1},
      {"column groups of 16 blocks, group barriers", Share::Groups, 16},
      {"column groups of 32 blocks, group barriers", Share::Groups, 32},
      {"column groups of 64 blocks, group barriers", Share::Groups, 64},
      {"no copy, grid barrier", Share::None, 1},
      {"no copy, groups of 32: barriers alone", Share::GroupBarriers, 32},
      {"each block its strip from host memory, no barrier", Share::Strip, 1},
      {"no copy, grid barrier, release reductions", Share::None, 1, 1},
      {"no copy, groups of 32, release reductions", Share::GroupBarriers, 32, 1},
      {"column groups of 16, release reductions", Share::Groups, 16, 1},
      {"contiguous shares, release reductions", Share::Contiguous, 1, 1},
      {"no copy, grid barrier, + request read (8 bytes)", Share::None, 1, 0, 1},
      {"no copy, grid barrier, + request read (64 bytes)", Share::None, 1, 0, 2},
  };
  for (int repeat = 0; repeat < 2; ++repeat)
    for (const Variant& v : variants) {
      CHECK(cudaMemcpyToSymbol(g_arrive_kind, &v.arrive_kind, sizeof(int)));
      CHECK(cudaMemcpyToSymbol(g_request_read, &v.request_read, sizeof(int)));
      CHECK(cudaMemsetAsync(st, 0, sizeof(State), s));
      CHECK(cudaMemsetAsync(dev, 0, bytes, s));
      copy_kernel<<<blocks, kThreads, 0, s>>>(host_dev, dev, width, height, bpp, v.share, v.group, st, ns, kRounds);
      CHECK(cudaGetLastError());
      CHECK(cudaStreamSynchronize(s));
      std::vector<std::uint64_t> t(kRounds);
      CHECK(cudaMemcpy(t.data(), ns, kRounds * sizeof(std::uint64_t), cudaMemcpyDeviceToHost));
      bool same = true;
      if (v.share == Share::Contiguous || v.share == Share::Lines || v.share == Share::Groups) {
        std::vector<unsigned char> back(bytes);
        CHECK(cudaMemcpy(back.data(), dev, bytes, cudaMemcpyDeviceToHost));
        same = std::equal(back.begin(), back.end(), host);
      }
      std::printf("%-52s go -> may start: p50 %6.2f  p99 %6.2f us%s\n", v.name, median_us(t), p99_us(t), same ? "" : "  (COPY WRONG)");
    }
  // The copy engine: events around each copy, and the host's call to the copy's end (spin on the event).
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  std::vector<std::uint64_t> dev_ns, host_ns;
  for (int i = 0; i < kRounds; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    CHECK(cudaEventRecord(a, s));
    CHECK(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, s));
    CHECK(cudaEventRecord(b, s));
    while (cudaEventQuery(b) == cudaErrorNotReady) {
    }
    const auto t1 = std::chrono::steady_clock::now();
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, a, b));
    dev_ns.push_back(static_cast<std::uint64_t>(ms * 1e6));
    host_ns.push_back(static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count()));
  }
  std::printf("%-52s events p50 %6.2f  p99 %6.2f us; host call -> done p50 %6.2f  p99 %6.2f us\n", "the copy engine (cudaMemcpyAsync)", median_us(dev_ns),
              p99_us(dev_ns), median_us(host_ns), p99_us(host_ns));
  return 0;
}
