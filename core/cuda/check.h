#pragma once
// Checking every CUDA call and launch. STRIPELINE_CUDA_CHECK(call) wraps each
// runtime call, STRIPELINE_CUDA_CHECK_LAUNCH(what) follows each <<<>>>. Both
// throw CudaError (a RuntimeFailure) naming the call or the launch, the CUDA
// message, the file and the line. Destructors use STRIPELINE_CUDA_LOG, which
// logs instead of throwing.
//
// The bottom of the CUDA side: kernels include this and nothing above core.
// Includable from host-only translation units and from .cu files alike (no
// spdlog here: nvcc never has to parse it).
#include <cuda_runtime_api.h>

#include <string>

#include "core/errors.h"

// Checks a cudaError_t-returning call; throws CudaError naming it.
#define STRIPELINE_CUDA_CHECK(call) ::stripeline::cuda::check((call), #call, __FILE__, __LINE__)
// After every <<<>>>: picks up launch errors (bad configuration, no kernel image, ...).
// `what` is evaluated only on failure, so a descriptive message costs nothing
// (no allocation) on the steady-state path.
#define STRIPELINE_CUDA_CHECK_LAUNCH(what)                                                                    \
  do {                                                                                                        \
    const cudaError_t stripeline_launch_error_ = cudaGetLastError();                                         \
    if (stripeline_launch_error_ != cudaSuccess)                                                              \
      ::stripeline::cuda::throw_error(stripeline_launch_error_, std::string(what).c_str(), __FILE__, __LINE__); \
  } while (0)
// For destructors and other no-throw paths: logs (spdlog::error) when the call failed.
#define STRIPELINE_CUDA_LOG(call) ::stripeline::cuda::log_error((call), #call, __FILE__, __LINE__)

namespace stripeline::cuda {

// Throws CudaError for `code`. Also clears the thread's last (non-sticky)
// error, so that it does not resurface at the next launch check.
[[noreturn]] void throw_error(cudaError_t code, const char* call, const char* file, int line);

inline void check(cudaError_t code, const char* call, const char* file, int line) {
  if (code != cudaSuccess) throw_error(code, call, file, line);
}
inline void check(cudaError_t code, const std::string& call, const char* file, int line) {
  if (code != cudaSuccess) throw_error(code, call.c_str(), file, line);
}

void log_error(cudaError_t code, const char* call, const char* file, int line) noexcept;

}  // namespace stripeline::cuda
