#pragma once
// The live path's persistent kernels (issue 24): a frame's chain and line
// model without a launch, a copy engine or a driver call per frame.
//
// Three kernels stay resident for the engine's life (stages/cuda/live_engine.h
// starts and stops them), each on its own stream:
//  - the copy (warp_chain.cu): one block per copy group of kLiveCopyGroup
//    strips. Block 0's first warp polls the host's mailbox (pinned, mapped)
//    for request n; then every block copies its group's columns from the
//    host's pinned frame into device memory (16-byte loads over the bus)
//    and says so (`copied`). It runs ahead of the chain: frame n + 1's copy
//    overlaps frame n's chain, up to three frames ahead of the model
//    (LiveChainArgs::copy_ahead false: no copy kernel; each chain block
//    copies its share first, the chain's block 0 polling);
//  - the chain (warp_chain.cu): one block per strip of kWarpChainColumns
//    columns, every block resident. Each waits for the copy groups its
//    strip reads and runs the warp chain's own code on its strip into the
//    candidates; then, once its left neighbour's strip is stored too,
//    stages its columns of the model's pass 0 (as the graphs' stage kernel
//    does);
//  - the line model (line_model_kernels.cu): kLiveModels blocks of
//    kLineBlockLanes taking the frames in turn; each waits for every chain
//    block's staging of its frame, copies it in, runs the block kernel's own
//    phases and writes the profiles into the request's pinned host arrays,
//    then the frame's number into the mailbox, which the host polls.
// The chain runs up to two frames ahead of the model: the candidates and
// the staged pass 0 are double-buffered (frame n in buffer n & 1), so the
// chain of frame n + 1 overlaps the model of frame n whole (and the other
// model block's frame n - 1), and its warps wait for frame n - 1's model
// (the buffer's last user) only before they store their columns. The
// pixels are triple-buffered (n % 3): the copy of frame n waits for the
// model's frame n - 3, by which every chain block had loaded frame n - 3's
// pixels.
//
// Every wait polls a counter that only grows (frame n: "at least n"), so no
// counter is ever reset; each also watches the stop flag (device memory, set
// by the host with a copy on a stream of its own), so a stop ends both
// kernels wherever they wait. The host never launches or copies per frame.
#include <cstdint>

#include <cuda_runtime_api.h>

#include "kernels/cuda/stripe_kernels.h"
#include "kernels/cuda/warp_chain_limits.h"
#include "kernels/line_model_lanes.h"

namespace stripeline::kernels::cuda {

inline constexpr int kLiveSlots = 16;  // requests in flight at most (the host's ring)
// Where a frame's device time goes (%globaltimer, ns), in LiveFinished::stamps:
// the request seen (the copy kernel's block 0), the chain's block 0 past its
// wait for the copy groups it reads, block 0's strip stored, every block's staging
// seen by the model, the profiles written (the model). device_ns ends there
// too: the release of the frame's number waits for those writes after it.
inline constexpr int kLiveStamps = 5;

// One frame asked of the engine, in the mailbox (host memory, written by the
// host: the fields and their check first, `seq` last, with release order).
// One 64-byte line, read by the copy kernel's block 0 in one load (eight lanes a
// word): a second round trip over the bus for the fields cost ~1.4 us a
// frame (H100). That load is not ordered word by word, so `check` (a hash
// of the ticket and the fields) tells a request read whole from one caught
// half-written: block 0 takes it only when seq and check agree.
struct alignas(64) LiveRequest {
  std::uint64_t seq = 0;            // t when this slot holds ticket t's request
  const void* pixels = nullptr;     // the frame: pinned host memory, device-readable
  LineModelArrays out;              // its profiles: pinned host arrays of one frame
  std::uint64_t check = 0;          // live_request_check(seq, &pixels as words)
};
static_assert(sizeof(LiveRequest) == 64, "a request is one 64-byte line, read in one load");

// The request's check: the XOR of a term a field, each the field mixed
// with the ticket and its place (splitmix64's finaliser), so a stale word
// from the slot's last ticket fails it. A term a lane on the device.
__host__ __device__ inline std::uint64_t live_check_term(std::uint64_t ticket, int field, std::uint64_t word) {
  std::uint64_t h = word ^ (ticket * 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(field) * 0xD1B54A32D192ED03ull);
  h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ull;
  h = (h ^ (h >> 27)) * 0x94D049BB133111EBull;
  return h ^ (h >> 31);
}
inline constexpr int kLiveRequestFields = 6;  // pixels and the five output arrays: words 1..6 of the line
static_assert(sizeof(LineModelArrays) == 5 * sizeof(std::uint64_t), "the request's output arrays are words 2..6 of its line");
// ticket's check of the fields (words 1..6 of the request's line).
__host__ __device__ inline std::uint64_t live_request_check(std::uint64_t ticket, const std::uint64_t* fields) {
  std::uint64_t check = 0;
  for (int i = 0; i < kLiveRequestFields; ++i) check ^= live_check_term(ticket, i + 1, fields[i]);
  return check;
}

// What the kernels write back for ticket t: one 64-byte line a slot, so
// the host's spin on `done` fetches the rest with it (no further miss a
// frame) and two threads waiting for their own tickets spin apart.
struct alignas(64) LiveFinished {
  std::uint64_t done = 0;       // the model writes t there once ticket t's profiles are in
  std::uint64_t device_ns = 0;  // its time on the device: request seen -> profiles written (globaltimer)
  std::uint64_t stamps[kLiveStamps] = {};  // kLiveStamps says which
};
static_assert(sizeof(LiveFinished) == 64, "a ticket's write-back is one 64-byte line");

// Pinned, mapped host memory shared by the host and the kernels.
struct LiveMailbox {
  LiveRequest request[kLiveSlots];      // ticket t in slot t % kLiveSlots
  LiveFinished finished[kLiveSlots];    // ticket t's, in slot t % kLiveSlots
  // The copy kernel's (or the chain's) block 0 writes t here when it ends
  // for want of ticket t (no request for LiveChainArgs::idle_ns), then
  // reads the slot once more; the host writes ticket t's seq, then reads
  // this (each a store, a full fence, a load: one of them sees the other).
  // The host that sees t here starts the kernels again; the kernel that
  // sees the request writes 0 and goes on.
  std::uint64_t parked = 0;
};

// The copy kernel copies the frame by column groups of this many chain
// blocks' strips (their columns of every row, 16-byte loads), and each
// chain block waits only for the groups its strip and the blur's halo
// read: a grid-wide barrier after the copy cost ~1.5 us more a frame
// (8-bit 2048x52 frames, H100, bench/live_copy_bench.cu).
inline constexpr int kLiveCopyGroup = 16;
inline constexpr int kLiveCopyThreads = 256;  // a copy kernel block's: an 8-bit 2048-wide frame's group (52 rows of 64 bytes) in one pass
// The most chain blocks (strips) the engine's state has counters for: more
// than any GPU holds resident (the engine needs every block resident).
inline constexpr int kLiveMaxBlocks = 2048;
// Frames in flight between the copy kernel's block 0 and the model: the state
// keeps this many requests (LiveState::current).
inline constexpr int kLiveCurrent = 4;
// The model's blocks, each on an SM of its own, taking the frames in turn
// (block b: frames b + 1, b + 1 + kLiveModels, ...): a frame's model (~17 us
// of one SM on an H100) overlaps the next frame's, so the chain, not the
// model, bounds the rate the engine sustains.
inline constexpr int kLiveModels = 2;
// LiveState::alive's top bit: a model block gave up waiting for the others
// to start (the host's check for every block started then fails for good).
inline constexpr std::uint32_t kLiveGaveUp = 1u << 31;

// Device memory of the kernels' own hand-overs (zeroed before the launch).
struct LiveState {
  std::uint64_t go = 0;        // the frame every copy block (copy_ahead false: chain block) may take (its block 0 raises it)
  std::uint64_t staged = 0;    // chain blocks that staged their share of the model's pass 0 (summed over frames)
  std::uint64_t modelled[kLiveModels] = {};  // model block b: the last frame it wrote (frame m is block (m - 1) % kLiveModels's)
  std::uint32_t stop = 0;      // the host raises it (a copy on its own stream) to end the kernels
  std::uint32_t alive = 0;     // blocks started (all three kernels; kLiveGaveUp): the host checks they are all resident
  struct Current {             // frame n's request as block 0 took it, at [n % kLiveCurrent]
    const void* pixels = nullptr;
    LineModelArrays out;
    std::uint64_t start_ns = 0;
  } current[kLiveCurrent];
  std::uint64_t copied[kLiveMaxBlocks / kLiveCopyGroup] = {};  // the last frame copy group g's block copied (copy_ahead false: its blocks' arrivals)
  std::uint64_t stored[kLiveMaxBlocks] = {};  // the last frame whose strip the block stored (its right neighbour stages after it)
};

// The chain kernel's arguments: `pixels` is device memory for three frames
// (frame n copied into the third n % 3), `candidates` the extraction's
// output (two frames, the line model's candidate slots: frame n into n & 1).
struct LiveChainArgs {
  LiveMailbox* mailbox = nullptr;  // device address of the mapped mailbox
  LiveState* state = nullptr;      // zeroed before each launch: the kernels count frames 1, 2, ... from it
  std::uint64_t first_ticket = 1;  // the request the launch's frame 1 is (the host's tickets run on across launches)
  unsigned char* pixels = nullptr;
  std::size_t frame_bytes = 0;     // width * height * bytes a pixel (the host's frame: 16-byte aligned)
  std::size_t frame_stride = 0;    // the frames' distance in `pixels`: a multiple of 16, at least frame_bytes
  int width = 0, height = 0;
  ChainParams chain;
  ProfileView candidates;
  int by_warp_up_to = kWarpEvaluatedCandidates;
  // The copy kernel copies each frame, up to three frames ahead of the
  // model; false: no copy kernel, each chain block first copies its share
  // of its copy group's columns (block 0 polling the mailbox), and
  // copied[g] counts the group's blocks summed over frames.
  bool copy_ahead = true;
  // The model's pass 0 staged by the chain's blocks, each its own columns
  // once its strip and its left neighbour's are stored (line_model_lanes.h, LineStageAhead: four threads a column), as
  // the stage kernel does for the graphs; bytes null: the model stages it.
  LineModelView view;  // the candidates (two frames), for the staging
  LineStageAhead ahead;  // two frames' bytes: frame n staged into frame n & 1's
  // Without a request for this long the kernels end (LiveMailbox::parked):
  // while they run, a cudaFree or cudaFreeHost anywhere on the device waits
  // for them, so an idle engine must not hold the device.
  std::uint64_t idle_ns = 10'000'000;
};

// The model kernel's: `view` is the candidates' layout (one frame); frame n
// reads candidates[n & 1] and writes its request's `out`.
struct LiveModelArgs {
  LiveMailbox* mailbox = nullptr;
  LiveState* state = nullptr;
  std::uint64_t first_ticket = 1;
  unsigned chain_blocks = 0;  // blocks of the chain kernel: frame n is in once `staged` reaches n times this
  unsigned copy_blocks = 0;   // blocks of the copy kernel (counted among those started)
  LineModelArrays candidates[2];  // the two buffers of the chain's candidates
  LineStageAhead ahead;       // LiveChainArgs::ahead's: the span the model copies, from frame n & 1's bytes (bytes null: it stages itself)
  // The other kernels' blocks not all started by then: the kernels end (the
  // host starts them again, with a longer wait). The chain's launch may be
  // held up by another thread's call that waits for the device, which waits
  // for this kernel.
  std::uint64_t start_wait_ns = 2'000'000;
};

// The chain kernel's blocks for frames of this width (one a strip), and
// the copy kernel's (one a copy group).
__host__ __device__ constexpr unsigned live_chain_blocks(int width) {
  return static_cast<unsigned>((width + kWarpChainColumns - 1) / kWarpChainColumns);
}
__host__ __device__ constexpr unsigned live_copy_blocks(int width) { return (live_chain_blocks(width) + kLiveCopyGroup - 1) / kLiveCopyGroup; }

// Loads the kernels now (cudaFuncGetAttributes): a first launch may have to
// load its kernel, which may wait for the context's running kernels, the
// other persistent ones among them (CUDA's lazy loading).
void load_live_kernels();

// Launches the persistent kernels (each returns once the state's stop is
// set): launch_live_chain the chain, then the copy kernel on `copy_stream`;
// launch_live_line_model the model's kLiveModels blocks, first (each takes
// an SM whole). ASYNCHRONOUS; the caller checks the blocks are all alive.
// The model needs configure_line_model (line_model_kernels.h) first; its
// view's `back` is the scratch for kLiveModels frames.
template <class T>
void launch_live_chain(const LiveChainArgs& args, cudaStream_t copy_stream, cudaStream_t stream);
void launch_live_line_model(const LineModelView& view, const LineModelParams& params, const LiveModelArgs& args, cudaStream_t stream);
void load_live_line_model_kernel();  // load_live_kernels' part in line_model_kernels.cu

}  // namespace stripeline::kernels::cuda
