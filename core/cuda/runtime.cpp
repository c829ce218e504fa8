#include "core/cuda/runtime.h"

#include <cuda_runtime.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>


namespace stripeline::cuda {

void throw_error(cudaError_t code, const char* call, const char* file, int line) {
  (void)cudaGetLastError();  // clear a non-sticky error: the next launch check must not see it again
  throw CudaError(call, static_cast<int>(code), cudaGetErrorString(code), file, line);
}

void log_error(cudaError_t code, const char* call, const char* file, int line) noexcept {
  if (code == cudaSuccess) return;
  (void)cudaGetLastError();
  try {
    spdlog::error("{} failed: {} (cuda error {}) at {}:{}", call, cudaGetErrorString(code), static_cast<int>(code), file, line);
  } catch (...) {
    std::fprintf(stderr, "%s failed: cuda error %d at %s:%d\n", call, static_cast<int>(code), file, line);
  }
}

// ---------------------------------------------------------------------------
DeviceBuffer DeviceBuffer::allocate(std::size_t bytes, const char* what) {
  require_device();
  void* p = nullptr;
  const cudaError_t e = cudaMalloc(&p, bytes == 0 ? 1 : bytes);
  if (e != cudaSuccess)
    throw_error(e, (std::string("cudaMalloc(") + std::to_string(bytes) + " bytes for " + what + ")").c_str(), __FILE__, __LINE__);
  return DeviceBuffer(p, bytes);
}

void DeviceBuffer::destroy_handle(void* p) noexcept { STRIPELINE_CUDA_LOG(cudaFree(p)); }

Stream Stream::create() {
  require_device();
  cudaStream_t s = nullptr;
  STRIPELINE_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  return Stream(s);
}

void Stream::destroy_handle(cudaStream_t s) noexcept { STRIPELINE_CUDA_LOG(cudaStreamDestroy(s)); }

Event Event::create(unsigned flags) {
  require_device();
  cudaEvent_t e = nullptr;
  STRIPELINE_CUDA_CHECK(cudaEventCreateWithFlags(&e, flags));
  return Event(e);
}
Event Event::create_timing() { return create(cudaEventDefault); }
Event Event::create_sync() { return create(cudaEventDisableTiming | cudaEventBlockingSync); }
Event Event::create_spin() { return create(cudaEventDisableTiming); }

void Event::destroy_handle(cudaEvent_t e) noexcept { STRIPELINE_CUDA_LOG(cudaEventDestroy(e)); }

GraphExec GraphExec::capture(cudaStream_t stream, const std::function<void()>& enqueue) {
  STRIPELINE_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  cudaGraph_t graph = nullptr;
  try {
    enqueue();
  } catch (...) {
    // Leave capture mode. The failure invalidated the capture, so this call
    // reports that again: the first error (being rethrown) is the one to tell.
    const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
    static_cast<void>(ended);
    if (graph != nullptr) STRIPELINE_CUDA_LOG(cudaGraphDestroy(graph));
    throw;
  }
  STRIPELINE_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  cudaGraphExec_t exec = nullptr;
  const cudaError_t made = cudaGraphInstantiate(&exec, graph, 0);
  STRIPELINE_CUDA_LOG(cudaGraphDestroy(graph));  // the executable graph keeps what it needs
  STRIPELINE_CUDA_CHECK(made);
  return GraphExec(exec);
}

void GraphExec::launch(cudaStream_t stream) const { STRIPELINE_CUDA_CHECK(cudaGraphLaunch(get(), stream)); }

void GraphExec::destroy_handle(cudaGraphExec_t g) noexcept { STRIPELINE_CUDA_LOG(cudaGraphExecDestroy(g)); }

float elapsed_ms(cudaEvent_t start, cudaEvent_t stop) {
  float ms = 0.0f;
  STRIPELINE_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  return ms;
}

// ---------------------------------------------------------------------------
namespace {

// Every kernel loaded when CUDA starts (unless the environment already says
// how): with lazy loading, CUDA's default on Linux since 12.2, a kernel's
// first launch may synchronise the context, and so wait for whatever runs,
// the live engine's resident kernels included (stages/cuda/live_engine.h),
// which in turn wait for frames. Set before main: the driver reads it when
// it starts.
const bool g_eager_modules = ::setenv("CUDA_MODULE_LOADING", "EAGER", 0) == 0;


std::string error_text(const char* call, cudaError_t e) {
  return std::string(call) + ": " + cudaGetErrorString(e) + " (cuda error " + std::to_string(static_cast<int>(e)) + ")";
}

DeviceStatus start_device() {
  DeviceStatus s;
  const auto t0 = std::chrono::steady_clock::now();
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    s.description = error_text("cudaGetDeviceCount", e);
    return s;
  }
  if (count < 1) {
    s.description = "cudaGetDeviceCount found no CUDA device";
    return s;
  }
  e = cudaSetDevice(0);
  if (e == cudaSuccess) e = cudaFree(nullptr);  // creates the primary context now, not at the first batch
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    s.description = error_text("creating the CUDA context on device 0", e);
    return s;
  }
  const auto t1 = std::chrono::steady_clock::now();
  cudaDeviceProp prop{};
  e = cudaGetDeviceProperties(&prop, 0);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    s.description = error_text("cudaGetDeviceProperties", e);
    return s;
  }
  char memory[32];
  std::snprintf(memory, sizeof memory, "%.1f GiB", static_cast<double>(prop.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0));
  s.available = true;
  s.device = 0;
  s.startup_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
  s.description = std::string(prop.name) + " (compute " + std::to_string(prop.major) + "." + std::to_string(prop.minor) + ", " +
                  memory + ", " + std::to_string(prop.multiProcessorCount) + " SMs)";
  return s;
}

}  // namespace

const DeviceStatus& device_status() {
  static std::once_flag once;
  static DeviceStatus status;
  std::call_once(once, [] {
    try {
      status = start_device();
    } catch (const std::exception& ex) {  // std::bad_alloc from a string: still never throw
      status = DeviceStatus{};
      status.description = std::string("CUDA start-up failed: ") + ex.what();
    }
  });
  return status;
}

void require_device() {
  const DeviceStatus& s = device_status();
  if (!s.available) throw CudaError("CUDA device start-up", static_cast<int>(cudaErrorNoDevice), s.description, __FILE__, __LINE__);
}

int device_count() {
  if (!device_status().available) return 0;
  int count = 0;
  STRIPELINE_CUDA_CHECK(cudaGetDeviceCount(&count));
  return count;
}

int current_device() {
  require_device();
  int d = 0;
  STRIPELINE_CUDA_CHECK(cudaGetDevice(&d));
  return d;
}

void check_device(int ordinal) {
  const int count = device_count();
  if (ordinal < 0 || ordinal >= count)
    throw ConfigError("device = " + std::to_string(ordinal) + " is not a CUDA device of this host (it has " + std::to_string(count) +
                      (count == 1 ? " device: 0)" : " devices: 0.." + std::to_string(count - 1) + ")"));
}

std::string describe_device(int ordinal) {
  check_device(ordinal);
  cudaDeviceProp prop{};
  STRIPELINE_CUDA_CHECK(cudaGetDeviceProperties(&prop, ordinal));
  char memory[32];
  std::snprintf(memory, sizeof memory, "%.1f GiB", static_cast<double>(prop.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0));
  return std::string(prop.name) + " (compute " + std::to_string(prop.major) + "." + std::to_string(prop.minor) + ", " + memory + ", " +
         std::to_string(prop.multiProcessorCount) + " SMs)";
}

ScopedDevice::ScopedDevice(int ordinal) {
  const int now = current_device();
  if (now == ordinal) return;
  STRIPELINE_CUDA_CHECK(cudaSetDevice(ordinal));
  previous_ = now;
}

ScopedDevice::~ScopedDevice() {
  if (previous_ >= 0) STRIPELINE_CUDA_LOG(cudaSetDevice(previous_));
}

DeviceAffinity::~DeviceAffinity() {
  if (restore_ >= 0) STRIPELINE_CUDA_LOG(cudaSetDevice(restore_));
}

void DeviceAffinity::enter_for_teardown() noexcept {
  int now = 0;
  if (cudaGetDevice(&now) != cudaSuccess) {
    (void)cudaGetLastError();
    return;
  }
  if (now == ordinal_) return;
  if (cudaSetDevice(ordinal_) != cudaSuccess) {
    (void)cudaGetLastError();
    return;
  }
  restore_ = now;
}

std::size_t device_free_bytes() {
  require_device();
  std::size_t free_bytes = 0, total = 0;
  STRIPELINE_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total));
  return free_bytes;
}

std::size_t max_shared_bytes_per_block() {
  if (!device_status().available) return 48 * 1024;
  int v = 0;
  STRIPELINE_CUDA_CHECK(cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerBlockOptin, current_device()));
  return v > 0 ? static_cast<std::size_t>(v) : 48 * 1024;
}

namespace {
void release_pinned(void* p) noexcept { STRIPELINE_CUDA_LOG(cudaFreeHost(p)); }
}  // namespace

HostBuffer allocate_pinned(std::size_t bytes) {
  require_device();
  void* p = nullptr;
  const cudaError_t e = cudaHostAlloc(&p, bytes == 0 ? 1 : bytes, cudaHostAllocPortable);
  if (e != cudaSuccess)
    throw_error(e, ("cudaHostAlloc(" + std::to_string(bytes) + " bytes, cudaHostAllocPortable)").c_str(), __FILE__, __LINE__);
  return HostBuffer(p, bytes, &release_pinned, true);
}

}  // namespace stripeline::cuda
