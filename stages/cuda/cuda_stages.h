#pragma once
// CUDA implementations of the stages and of the fused chain. Same interfaces
// and bit-identical results as the CPU ones (stages/cpu/), which are their
// test oracle.
//
// Every object owns its lane (core/cuda/device_lane.h: stream and events) and
// its device buffers, all made in the constructor for layout.frames frames;
// running never allocates.
// Host batches in, host results out: the filled frames go up
// (cudaMemcpyAsync), the kernels run, the results come down, all on the
// object's own non-blocking stream, then the object waits on its own event —
// never on the default stream, never cudaDeviceSynchronize. Host buffers from
// allocate_pinned (core/cuda/runtime.h) make the copies asynchronous
// and fast; pageable ones work too, slower.
//
// Not thread-safe: one thread per object at a time (the pipeline runs one
// processor per lane).
#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>

#include "stages/chain.h"
#include "stages/stages.h"

namespace stripeline::cuda {

// The CUDA BatchProcessor: submit() enqueues the H2D copy of the filled
// frames, the kernels and the D2H copy of the profiles on its lane and
// returns at once; wait() blocks on the lane's event (a sleeping thread, or a
// spinning one for batches of <= 16 frames: the low-latency mode).
class CudaProcessor : public BatchProcessor {
 public:
  Backend backend() const override { return Backend::Cuda; }
  // Run the kernels on the first `frames` frames already on the device (the
  // last submitted batch's), synchronously; returns the kernel time in ms.
  // For compute-only benchmarks: no copies. Waits for a pending batch first.
  virtual double compute_only(int frames) = 0;
  virtual cudaStream_t stream() const = 0;
  // True when the fused kernel runs; false when the frame is too tall for its
  // shared memory (or fusion was turned off) and the per-stage kernels run
  // through a device scratch buffer.
  virtual bool fused() const = 0;
  // CUDA graphs captured so far: the low-latency mode replays one per pool
  // slot and batch size (ChainConfig::cuda_graphs); 0 when off, or after a
  // capture failed (then batches are enqueued call by call).
  virtual int graphs() const = 0;
  // Times the device's persistent engine (CudaProcessorOptions::persistent_live)
  // launched its kernels for this processor's frames and others': 0 when
  // this processor's frames have not gone to one.
  virtual std::uint64_t live_launches() const = 0;
  // Where the persistent engine's frames spent their device time
  // (LiveEngine::phase_report); empty without one.
  virtual std::string live_report() const = 0;

 protected:
  using BatchProcessor::BatchProcessor;
};

struct CudaProcessorOptions {
  bool allow_fused = true;  // false: always the per-stage path (tests compare both)
  // Batches of at most this many frames run the warp-per-column kernel
  // (kernels::cuda::warp_chain) where it supports the chain, larger ones the
  // fused kernel; -1: kernels::cuda::kWarpChainMaxFrames, 0: never (tests
  // force either).
  int warp_chain_max_frames = -1;
  // Low-latency batches whose last step is the line model, into pinned host
  // profiles: the line model's kernel writes them itself, over the bus, and
  // the download is left out (one graph node fewer a frame; its stores are
  // coalesced, unlike an extraction kernel's column by column). false: the
  // download as for every other batch (the bench compares).
  bool line_model_to_host = true;
  // Low-latency batches (of at most 16 frames) time their kernels at most one
  // batch in `time_every` and at most once in `time_interval_ms` (the first
  // always): the two timing events cost a frame ~5 us on an H100 (two graph
  // nodes), and one batch in 32 timed showed in the p99 of a frame alone
  // (docs/cuda.md). last_compute_ms() is then the most recent timed batch's.
  // time_every = 1 with time_interval_ms = 0: every batch timed.
  int time_every = 1;
  double time_interval_ms = 100.0;
  // Batches the warp chain extracts, where the line model's block kernel
  // follows with its link table: a kernel of its own stages the model's
  // pass 0 on every SM first (kernels::LineStageAhead; four threads a
  // column), which the model's single block did on one SM (~6 us a frame on
  // an H100). false: the model stages (the bench compares).
  bool stage_line_ahead = true;
  // The warp chain evaluates a column's few candidates (at most
  // kernels::cuda::kWarpEvaluatedCandidates) with the whole warp, each walk a
  // ballot or a reduction over 32 rows; false: a lane each, one row after the
  // other (the bench compares).
  bool warp_evaluation = true;
  // The persistent engine's frames copied into device memory by a kernel of
  // their own, up to three frames ahead of the model, so frame n + 1's copy
  // overlaps frame n's chain (what bounds the rate it sustains); false: each
  // chain block copies its share of the frame first (the bench compares).
  bool live_copy_ahead = true;
  // Batches of one frame whose profiles the line model writes to the host
  // (line_model_to_host) go to the device's persistent engine
  // (stages/cuda/live_engine.h): resident kernels fed through pinned memory,
  // no launch, copy or event a frame. Where it cannot run (another
  // configuration holds the device, its blocks not all resident) the graphs
  // as before; a larger batch holds it (its kernels ended) while it runs.
  // Needs ChainConfig::persistent_engine too; false: the graphs (the bench
  // compares).
  bool persistent_live = true;
};

// Validates config against layout (ConfigError), then sets up. Throws
// CudaError when the device lacks memory or CUDA is unusable.
// (The stages themselves come from cuda::factory(), stages/factory.h.)
std::unique_ptr<CudaProcessor> make_cuda_processor_ex(const BatchLayout& layout, const ChainConfig& config,
                                                      const CudaProcessorOptions& options = {});

}  // namespace stripeline::cuda
