#pragma once
// The individual stages, each with a CPU and a CUDA implementation behind one
// interface. The default chain runs fused (BatchProcessor, stages/chain.h);
// these exist for the other compositions, for debugging, and so that every
// stage's CUDA version is tested against its CPU oracle on its own.
//
// All take and return host batches; the CUDA versions upload, run and
// download on their own stream (synchronously), so they can be swapped in
// anywhere. A stage is set up for one layout and never allocates in run().
#include <memory>

#include "core/batch.h"
#include "core/profile.h"
#include "kernels/column_extract.h"
#include "kernels/gaussian.h"
#include "stages/backend.h"

namespace stripeline {

class BlurStage {
 public:
  virtual ~BlurStage() = default;
  // out.layout == in.layout; blurs each frame on its own (frame-edge borders replicate).
  virtual void run(const Batch& in, Batch& out) = 0;
};

class ThresholdStage {
 public:
  virtual ~ThresholdStage() = default;
  // out = in where in >= threshold, else 0. in and out may be the same batch.
  virtual void run(const Batch& in, Batch& out) = 0;
};

class ExtractStage {
 public:
  virtual ~ExtractStage() = default;
  // Per-column extraction of every filled frame of `in` into `out`.
  virtual void run(const Batch& in, ProfileBatch& out) = 0;
};

std::unique_ptr<BlurStage> make_blur_stage(Backend backend, const BatchLayout& layout, const kernels::GaussianTaps& taps);
std::unique_ptr<ThresholdStage> make_threshold_stage(Backend backend, const BatchLayout& layout, std::uint32_t threshold);
// params.slots must be set (validate_chain does it).
std::unique_ptr<ExtractStage> make_extract_stage(Backend backend, const BatchLayout& layout, const kernels::ColumnParams& params);

// Copies what the extraction does not compute (frames, sequence, meta) from batch to profiles.
void copy_batch_header(const Batch& in, ProfileBatch& out);

}  // namespace stripeline
