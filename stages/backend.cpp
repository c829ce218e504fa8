#include "stages/backend.h"

#include "core/errors.h"
#if STRIPELINE_HAVE_CUDA
#include "stages/cuda/cuda_runtime.h"
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

#if STRIPELINE_HAVE_CUDA
bool cuda_available() { return cuda::device_status().available; }
std::string cuda_status() { return cuda::device_status().description; }
double cuda_startup_ms() { return cuda::device_status().startup_ms; }
#else
bool cuda_available() { return false; }
std::string cuda_status() { return "this build has no CUDA backend (configured without nvcc)"; }
double cuda_startup_ms() { return 0.0; }
#endif

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
