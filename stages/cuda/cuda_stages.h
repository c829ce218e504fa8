#pragma once
// CUDA implementations of the stages and of the fused chain. Same interfaces
// and bit-identical results as the CPU ones (stages/cpu/), which are their
// test oracle.
//
// Every object owns its stream, its events and its device buffers, all made in
// the constructor for layout.frames frames; run()/process() never allocate.
// Host batches in, host results out: the filled frames go up
// (cudaMemcpyAsync), the kernels run, the results come down, all on the
// object's own non-blocking stream, then the object waits on its own event —
// never on the default stream, never cudaDeviceSynchronize. Host buffers from
// allocate_pinned (stages/cuda/cuda_runtime.h) make the copies asynchronous
// and fast; pageable ones work too, slower.
//
// Not thread-safe: one thread per object at a time (the pipeline runs one
// processor per lane).
#include <cuda_runtime_api.h>

#include <memory>

#include "stages/chain.h"
#include "stages/stages.h"

namespace stripeline::cuda {

std::unique_ptr<BlurStage> make_blur_stage(const BatchLayout& layout, const kernels::GaussianTaps& taps);
std::unique_ptr<ThresholdStage> make_threshold_stage(const BatchLayout& layout, std::uint32_t threshold);
// params.slots must be set (validate_chain does it).
std::unique_ptr<ExtractStage> make_extract_stage(const BatchLayout& layout, const kernels::ColumnParams& params);

// The CUDA BatchProcessor, with the asynchronous interface the pipeline and
// the benchmark use.
class CudaProcessor : public BatchProcessor {
 public:
  Backend backend() const override { return Backend::Cuda; }
  // submit + wait.
  void process(const Batch& in, ProfileBatch& out) override {
    submit(in, out);
    wait();
  }
  // Enqueue H2D of the filled frames, the kernels and the D2H of the profiles
  // on stream(), and return at once. out's header (frames, sequence, meta) is
  // set now; its arrays are complete after wait(). Neither in nor out may be
  // touched, nor another batch submitted, until wait() returns.
  virtual void submit(const Batch& in, ProfileBatch& out) = 0;
  // Block until the submitted batch is done (cudaEventSynchronize on a
  // blocking-sync event: the thread sleeps, no polling). No-op if none is pending.
  virtual void wait() = 0;
  // Run the kernels on the first `frames` frames already on the device (the
  // last submitted batch's), synchronously; returns the kernel time in ms.
  // For compute-only benchmarks: no copies. Waits for a pending batch first.
  virtual double compute_only(int frames) = 0;
  virtual cudaStream_t stream() const = 0;
  // True when the fused kernel runs; false when the frame is too tall for its
  // shared memory (or fusion was turned off) and the per-stage kernels run
  // through a device scratch buffer.
  virtual bool fused() const = 0;
};

struct CudaProcessorOptions {
  bool allow_fused = true;  // false: always the per-stage path (tests compare both)
};

// Validates config against layout (ConfigError), then sets up. Throws
// CudaError when the device lacks memory or CUDA is unusable.
std::unique_ptr<CudaProcessor> make_cuda_processor_ex(const BatchLayout& layout, const ChainConfig& config,
                                                      const CudaProcessorOptions& options = {});
std::unique_ptr<BatchProcessor> make_cuda_processor(const BatchLayout& layout, const ChainConfig& config);

}  // namespace stripeline::cuda
