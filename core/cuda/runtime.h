#pragma once
// The CUDA runtime as stripeline uses it, below everything else on the CUDA
// side: one RAII template for every handle (device buffers, streams, events),
// the once-per-process device start-up, and the pinned host allocator. Every
// call is checked (core/cuda/check.h); destructors only log.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <string>
#include <utility>

#include "core/cuda/check.h"
#include "core/host_buffer.h"

namespace stripeline::cuda {

// ---------------------------------------------------------------------------
// One RAII template for every CUDA handle (DALI's UniqueHandle): move-only,
// owns one handle, destroys it through Actual::destroy_handle (static,
// noexcept, logs instead of throwing).
template <class Handle, class Actual>
class UniqueHandle {
 public:
  constexpr UniqueHandle() noexcept = default;
  explicit constexpr UniqueHandle(Handle h) noexcept : handle_(h) {}
  UniqueHandle(const UniqueHandle&) = delete;
  UniqueHandle& operator=(const UniqueHandle&) = delete;
  UniqueHandle(UniqueHandle&& o) noexcept : handle_(std::exchange(o.handle_, Actual::null_handle())) {}
  UniqueHandle& operator=(UniqueHandle&& o) noexcept {
    if (this != &o) reset(std::exchange(o.handle_, Actual::null_handle()));
    return *this;
  }
  ~UniqueHandle() { reset(); }

  Handle get() const noexcept { return handle_; }
  operator Handle() const noexcept { return handle_; }  // NOLINT: handles pass straight to CUDA calls
  explicit operator bool() const noexcept { return handle_ != Actual::null_handle(); }
  Handle release() noexcept { return std::exchange(handle_, Actual::null_handle()); }
  void reset(Handle h = Actual::null_handle()) noexcept {
    if (handle_ != Actual::null_handle()) Actual::destroy_handle(handle_);
    handle_ = h;
  }

 private:
  Handle handle_ = Actual::null_handle();
};

// Device memory (cudaMalloc / cudaFree). Allocate at set-up, never per batch.
class DeviceBuffer : public UniqueHandle<void*, DeviceBuffer> {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(DeviceBuffer&& o) noexcept : UniqueHandle(std::move(o)), bytes_(std::exchange(o.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    UniqueHandle::operator=(std::move(o));
    bytes_ = std::exchange(o.bytes_, 0);
    return *this;
  }

  // Throws CudaError (cudaErrorMemoryAllocation when the device has too little memory).
  // `what` names the buffer in the error message.
  static DeviceBuffer allocate(std::size_t bytes, const char* what);

  std::size_t size() const noexcept { return bytes_; }
  std::byte* data() const noexcept { return static_cast<std::byte*>(get()); }
  template <class T>
  T* as() const noexcept {
    return static_cast<T*>(get());
  }
  template <class T>
  T* at_byte(std::size_t offset) const noexcept {
    return reinterpret_cast<T*>(data() + offset);
  }

  static constexpr void* null_handle() noexcept { return nullptr; }
  static void destroy_handle(void* p) noexcept;

 private:
  DeviceBuffer(void* p, std::size_t bytes) noexcept : UniqueHandle(p), bytes_(bytes) {}
  std::size_t bytes_ = 0;
};

// A non-blocking stream (never synchronises with the legacy default stream).
class Stream : public UniqueHandle<cudaStream_t, Stream> {
 public:
  Stream() = default;
  static Stream create();
  static constexpr cudaStream_t null_handle() noexcept { return nullptr; }
  static void destroy_handle(cudaStream_t s) noexcept;

 private:
  using UniqueHandle::UniqueHandle;
};

// Events. Timing: for cudaEventElapsedTime. Sync: cudaEventDisableTiming |
// cudaEventBlockingSync, for waiting on a batch without spinning a CPU core.
class Event : public UniqueHandle<cudaEvent_t, Event> {
 public:
  Event() = default;
  static Event create_timing();
  static Event create_sync();
  // Waiting spins (with yields) instead of sleeping: microseconds sooner, for
  // the low-latency mode, at the price of a busy core while waiting.
  static Event create_spin();
  static constexpr cudaEvent_t null_handle() noexcept { return nullptr; }
  static void destroy_handle(cudaEvent_t e) noexcept;

 private:
  static Event create(unsigned flags);
  using UniqueHandle::UniqueHandle;
};

// Milliseconds between two recorded, completed timing events.
float elapsed_ms(cudaEvent_t start, cudaEvent_t stop);

// An instantiated CUDA graph: one cudaGraphLaunch replays everything a
// stream capture recorded (copies, kernels, event records) for a fraction
// of the host cost of enqueueing them one by one.
class GraphExec : public UniqueHandle<cudaGraphExec_t, GraphExec> {
 public:
  GraphExec() = default;
  // Records what `enqueue` puts on `stream` (thread-local capture mode: other
  // threads' CUDA calls go on undisturbed) and instantiates it. Nothing runs
  // during capture. Throws CudaError when the capture or the instantiation
  // fails (e.g. a copy from pageable memory); the stream is out of capture
  // mode either way.
  static GraphExec capture(cudaStream_t stream, const std::function<void()>& enqueue);
  void launch(cudaStream_t stream) const;
  static constexpr cudaGraphExec_t null_handle() noexcept { return nullptr; }
  static void destroy_handle(cudaGraphExec_t g) noexcept;

 private:
  using UniqueHandle::UniqueHandle;
};

// ---------------------------------------------------------------------------
// Device start-up, once per process (thread-safe). Never throws: a missing
// driver or device gives available = false and the reason in description.
// This knows the driver and the device only; whether this build's kernels
// run on it is the stage layer's question (stages/backend.h).
struct DeviceStatus {
  bool available = false;
  std::string description;  // "NVIDIA H100 80GB HBM3 (compute 9.0, 79.1 GiB, 132 SMs)" or why CUDA is unusable
  double startup_ms = 0.0;  // driver initialisation + context creation, measured once
  int device = -1;
};
const DeviceStatus& device_status();

// Throws CudaError (cudaErrorNoDevice) with device_status().description when
// no device is usable. Leaves the calling thread's current device as it is
// (device 0 on a thread that never chose one).
void require_device();

// ---------------------------------------------------------------------------
// Several devices. Every handle (buffer, stream, event) belongs to the device
// current on the thread that made it, and kernels and copies must be enqueued
// with that device current. An engine on device N (PipelineOptions::device)
// makes N current while it sets up; each object that enqueues work records
// its device when made (DeviceAffinity) and makes it current around every
// call, since the pipeline's worker threads serve engines on other devices too.

// CUDA devices on this host (0 when CUDA is unusable).
int device_count();
// The calling thread's current device.
int current_device();
// Throws ConfigError naming `ordinal` when this host has no such device.
void check_device(int ordinal);
// "NVIDIA H100 80GB HBM3 (compute 9.0, 79.1 GiB, 132 SMs)", for logs and benches.
std::string describe_device(int ordinal);

// Makes `ordinal` current on this thread for the scope, then the previous one again.
class ScopedDevice {
 public:
  explicit ScopedDevice(int ordinal);
  ScopedDevice(const ScopedDevice&) = delete;
  ScopedDevice& operator=(const ScopedDevice&) = delete;
  ~ScopedDevice();

 private:
  int previous_ = -1;  // -1: nothing to restore (the device was already current)
};

// The device an object was made on. scope() makes it current around a call.
// As an object's first member (destroyed last), enter_for_teardown() in the
// owner's destructor keeps the device current while the members after it
// (streams, buffers) are released, and the destructor of the affinity puts
// the thread's previous device back.
class DeviceAffinity {
 public:
  DeviceAffinity() : ordinal_(current_device()) {}
  DeviceAffinity(const DeviceAffinity&) = delete;
  DeviceAffinity& operator=(const DeviceAffinity&) = delete;
  ~DeviceAffinity();
  int ordinal() const { return ordinal_; }
  [[nodiscard]] ScopedDevice scope() const { return ScopedDevice(ordinal_); }
  void enter_for_teardown() noexcept;

 private:
  int ordinal_;
  int restore_ = -1;
};

// Largest dynamic shared memory one block may opt in to on the current device (bytes).
std::size_t max_shared_bytes_per_block();

// Free memory on the current device now (cudaMemGetInfo), bytes. Throws
// CudaError when no device is usable.
std::size_t device_free_bytes();

// Pinned (page-locked, portable) host memory for batch buffers: the copies
// then run asynchronously at full bus speed. Throws CudaError on failure
// (cudaErrorMemoryAllocation included). Released with cudaFreeHost.
HostBuffer allocate_pinned(std::size_t bytes);

}  // namespace stripeline::cuda
