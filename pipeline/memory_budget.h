#pragma once
// The memory budget ([processing] memory_budget, device_memory_budget; the
// --memory-budget and --device-memory-budget flags) and the batch geometry
// derived from it: frames per batch, buffers in the pool, lanes, and the
// profile slots per column of the multi-peak methods. docs/memory.md.
//
// What counts against the host budget: every pool slot (its pixels, at least
// a grabber's payload, its profiles and metadata), every processing lane's
// host memory (stages/chain.h lane_memory: the CPU's line-model candidates
// and per-thread scratch) and what the sinks hold for one batch
// (ProfileSink::batch_bytes_per_frame: the PLY encoder's buffer). Against the
// device budget (CUDA): every lane's device buffers. Not counted (the stated
// fixed overhead): the process itself (libraries, threads, a CUDA context),
// the readers' row buffers, and what the outputs accumulate over a whole
// recording (the height map: 2 bytes per column per frame).
//
// The rule, in order (plan_batch_geometry):
//  1. the target frame count: batch_frames when set, else 300; either way at
//     most the frames the source says it holds (a file), so that nothing is
//     sized by more frames than the input has;
//  2. the buffers: at most the batches the source holds;
//  3. if the target does not fit: an explicit batch_frames is refused (one
//     line naming both keys, exit 2); an automatic one becomes the largest
//     count that fits;
//  4. if not even one frame fits and the method stores several slots per
//     column (all, local-max/adaptive with selection all), the slots become
//     the most that fit (points beyond them are counted as overflow, never
//     written);
//  5. otherwise: "too small for one frame", one line, exit 2.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "core/types.h"
#include "stages/backend.h"
#include "stages/chain.h"

namespace stripeline {

// Bytes; 0 = automatic (from the machine).
struct MemoryBudget {
  std::uint64_t host = 0;
  std::uint64_t device = 0;
};

// The automatic budgets: a quarter of the machine's memory (the smaller of
// physical RAM and the cgroup's limit), and half of the GPU's free memory
// when the CUDA backend runs (0 otherwise).
inline constexpr int kHostBudgetDivisor = 4;
inline constexpr int kDeviceBudgetDivisor = 2;
std::uint64_t machine_memory_bytes();
std::uint64_t default_host_budget();
std::uint64_t default_device_budget(Backend backend);

// "auto" (0), a number of bytes ("1073741824"), or a number with a binary
// unit: K, M, G, T, optionally followed by "i" and/or "B" ("512M", "1.5GiB",
// "64 MiB"); 1K = 1024. ConfigError naming `key` otherwise.
std::uint64_t parse_memory_size(const std::string& text, const char* key);
// The inverse for the reference and `settings`: "auto" for 0, else the
// largest exact unit ("512M", "2G"), else bytes.
std::string memory_size_text(std::uint64_t bytes);
// For people: "1.5 GiB", "340.0 MiB", "12 B".
std::string human_bytes(std::uint64_t bytes);

// The frames of a batch when nothing else decides (PipelineOptions::batch_frames = 0).
inline constexpr int kDefaultBatchFrames = 300;

struct GeometryRequest {
  BatchLayout frame;                 // width, frame_height, format (frames ignored)
  ChainConfig chain;                 // as the processors get it (calibration set: the points array)
  Backend backend = Backend::Cpu;    // resolved
  int batch_frames = 0;              // 0 = automatic
  int buffers = 4;                   // PipelineOptions::buffers
  int lanes = 0;                     // PipelineOptions::lanes (0 = buffers - 1, at least 1)
  bool even_frames = false;          // ambient = "alternate": laser-on/off pairs never straddle two batches
  std::optional<std::uint64_t> source_frames;  // what the source holds, when it says
  std::size_t direct_bytes = 0;      // a grabber's payload per batch (the pixels are at least this)
  std::size_t sink_bytes_per_slot = 0;  // what the sinks hold per frame of a batch and output slot per column
  MemoryBudget budget;               // 0 = automatic
};

struct BatchGeometry {
  int frames = 0;            // per batch
  int buffers = 0;           // pool slots
  int lanes = 0;             // processors
  int slots = 1;             // output slots per column
  int requested_slots = 1;   // what the method asked for (slots < requested: the budget cut them)
  bool frames_from_budget = false;  // the budget chose fewer frames than the target
  std::uint64_t host_budget = 0, device_budget = 0;  // bytes (device 0: CPU backend)
  std::uint64_t host_bytes = 0, device_bytes = 0;    // what the geometry takes
  // One line for logs: "300 frames x 4 buffers, 1 slot, 3 lanes: host 140.2 MiB of 6.0 GiB".
  std::string describe() const;
};

// The rule above. ConfigError (exit 2) for an explicit batch_frames that does
// not fit, and for a budget too small for one frame.
BatchGeometry plan_batch_geometry(const GeometryRequest& request);

// The chain with its output slots limited to `slots` (max_points for method
// all, max_peaks for selection all); unchanged for single-slot methods.
ChainConfig with_output_slots(ChainConfig chain, int slots);

// Host and device bytes of a geometry (what plan_batch_geometry compares
// with the budgets; tests check it against the pool's own count).
struct MemoryNeed {
  std::uint64_t host = 0, device = 0;
};
MemoryNeed memory_need(const GeometryRequest& request, int frames, int slots, int buffers, int lanes);

}  // namespace stripeline
