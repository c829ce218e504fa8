#pragma once
// Which engine runs the stages. CPU and CUDA implementations of every stage
// sit side by side behind one interface and give bit-identical results; the
// CPU one is the test oracle.
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "core/host_buffer.h"

namespace stripeline {

enum class Backend { Auto, Cpu, Cuda };

const char* to_string(Backend b);
// "auto" | "cpu" | "cuda"; throws ConfigError otherwise.
Backend parse_backend(std::string_view text);

// True when this build has the CUDA backend, a GPU is present and this
// build's kernels run on it. The first call initialises CUDA (once per
// process) and records how long it took.
bool cuda_available();
// Why CUDA is not available ("built without CUDA", "no CUDA device: ...", a
// GPU older than the architectures built), or the device's name.
std::string cuda_status();
// Milliseconds the CUDA start-up (context creation) took, 0 if never done.
double cuda_startup_ms();
// Free memory of the current GPU now, bytes (0 when CUDA is not available).
std::size_t cuda_free_memory();
// CUDA devices of this host (0 when CUDA is not available).
int cuda_device_count();
// "NVIDIA H100 80GB HBM3 (compute 9.0, ...)" of device `ordinal`; ConfigError when there is none.
std::string cuda_device_description(int ordinal);

// Makes CUDA device `ordinal` current on this thread for the scope, so what
// is made in it (streams, buffers, processors) lives on that device
// (core/cuda/runtime.h, "Several devices"). ConfigError when the host has no
// such device; the previous device is current again afterwards.
class CudaDeviceScope {
 public:
  explicit CudaDeviceScope(int ordinal);
  CudaDeviceScope(const CudaDeviceScope&) = delete;
  CudaDeviceScope& operator=(const CudaDeviceScope&) = delete;
  ~CudaDeviceScope();

 private:
  struct Held;
  std::unique_ptr<Held> held_;
};

// Auto -> Cuda when available, else Cpu. Cuda without a GPU -> ConfigError (exit 2).
Backend resolve_backend(Backend requested);

// The one error for asking a build without CUDA for the CUDA backend (ConfigError).
[[noreturn]] void throw_no_cuda_backend();

// Host memory for batch buffers on this backend: pinned for CUDA, pageable for CPU.
HostAllocator host_allocator_for(Backend b);

}  // namespace stripeline
