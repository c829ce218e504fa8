#pragma once
// Which engine runs the stages. CPU and CUDA implementations of every stage
// sit side by side behind one interface and give bit-identical results; the
// CPU one is the test oracle.
#include <string>
#include <string_view>

#include "core/host_buffer.h"

namespace stripeline {

enum class Backend { Auto, Cpu, Cuda };

const char* to_string(Backend b);
// "auto" | "cpu" | "cuda"; throws ConfigError otherwise.
Backend parse_backend(std::string_view text);

// True when this build has the CUDA backend and a usable GPU is present.
// The first call initialises CUDA (once per process) and records how long it took.
bool cuda_available();
// Why CUDA is not available ("built without CUDA", "no CUDA device: ..."), or the device's name.
std::string cuda_status();
// Milliseconds the CUDA start-up (context creation) took, 0 if never done.
double cuda_startup_ms();

// Auto -> Cuda when available, else Cpu. Cuda without a GPU -> ConfigError (exit 2).
Backend resolve_backend(Backend requested);

// Host memory for batch buffers on this backend: pinned for CUDA, pageable for CPU.
HostAllocator host_allocator_for(Backend b);

}  // namespace stripeline
