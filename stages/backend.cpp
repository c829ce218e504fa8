#include "stages/backend.h"

#include <mutex>

#include "core/errors.h"
#if STRIPELINE_HAVE_CUDA
#include "core/cuda/runtime.h"
#include "kernels/cuda/stripe_kernels.h"
#endif

namespace stripeline {

const char* to_string(Backend b) {
  switch (b) {
    case Backend::Auto: return "auto";
    case Backend::Cpu: return "cpu";
    case Backend::Cuda: return "cuda";
  }
  return "?";
}

Backend parse_backend(std::string_view text) {
  if (text == "auto") return Backend::Auto;
  if (text == "cpu") return Backend::Cpu;
  if (text == "cuda") return Backend::Cuda;
  throw ConfigError("backend '" + std::string(text) + "' is not known (expected auto, cpu or cuda)");
}

void throw_no_cuda_backend() { throw ConfigError("backend 'cuda' requested but this build has no CUDA backend (configured without nvcc)"); }

#if STRIPELINE_HAVE_CUDA
namespace {
// The device (core/cuda) and, on top of it, whether this build carries a
// kernel image the device can run: a GPU older than the architectures built
// must say so at start, not at the first batch.
struct BackendStatus {
  bool available = false;
  std::string description;
};
const BackendStatus& backend_status() {
  static std::once_flag once;
  static BackendStatus status;
  std::call_once(once, [] {
    const cuda::DeviceStatus& device = cuda::device_status();
    status.description = device.description;
    if (!device.available) return;
    const cudaError_t e = kernels::cuda::probe_kernel_image();
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      status.description = device.description + " cannot run this build's kernels: cudaFuncGetAttributes: " + cudaGetErrorString(e);
      return;
    }
    status.available = true;
  });
  return status;
}
}  // namespace

bool cuda_available() { return backend_status().available; }
std::string cuda_status() { return backend_status().description; }
double cuda_startup_ms() { return cuda::device_status().startup_ms; }
std::size_t cuda_free_memory() { return cuda_available() ? cuda::device_free_bytes() : 0; }
int cuda_device_count() { return cuda_available() ? cuda::device_count() : 0; }
std::string cuda_device_description(int ordinal) {
  if (!cuda_available()) throw ConfigError("device = " + std::to_string(ordinal) + ": CUDA is not usable here: " + cuda_status());
  return cuda::describe_device(ordinal);
}

struct CudaDeviceScope::Held {
  explicit Held(int ordinal) : scope((cuda::check_device(ordinal), ordinal)) {}
  cuda::ScopedDevice scope;
};
CudaDeviceScope::CudaDeviceScope(int ordinal) {
  if (!cuda_available()) throw ConfigError("device = " + std::to_string(ordinal) + ": CUDA is not usable here: " + cuda_status());
  held_ = std::make_unique<Held>(ordinal);
}
#else
bool cuda_available() { return false; }
std::string cuda_status() { return "this build has no CUDA backend (configured without nvcc)"; }
double cuda_startup_ms() { return 0.0; }
std::size_t cuda_free_memory() { return 0; }
int cuda_device_count() { return 0; }
std::string cuda_device_description(int) { throw_no_cuda_backend(); }
struct CudaDeviceScope::Held {};
CudaDeviceScope::CudaDeviceScope(int) { throw_no_cuda_backend(); }
#endif
CudaDeviceScope::~CudaDeviceScope() = default;

Backend resolve_backend(Backend requested) {
  if (requested == Backend::Cpu) return Backend::Cpu;
  if (requested == Backend::Cuda) {
    if (!cuda_available()) throw ConfigError("backend 'cuda' was requested but CUDA is not usable: " + cuda_status());
    return Backend::Cuda;
  }
  return cuda_available() ? Backend::Cuda : Backend::Cpu;
}

HostAllocator host_allocator_for(Backend b) {
#if STRIPELINE_HAVE_CUDA
  if (b == Backend::Cuda) return &cuda::allocate_pinned;
#else
  (void)b;
#endif
  return &allocate_host;
}

}  // namespace stripeline
