#pragma once
// The individual stages, each with a CPU and a CUDA implementation behind one
// interface. The default chain runs fused (BatchProcessor, stages/chain.h);
// these exist for the other compositions, for debugging, and so that every
// stage's CUDA version is tested against its CPU oracle on its own.
//
// All take and return host batches; the CUDA versions upload, run and
// download on their own lane (synchronously), so they can be swapped in
// anywhere. A stage is set up for one layout and never allocates in run().
// As for processors, the checks and the frame header are handled once, in
// the non-virtual run(); backends implement do_run().
#include <memory>

#include "core/batch.h"
#include "core/profile.h"
#include "kernels/column_extract.h"
#include "kernels/gaussian.h"
#include "stages/backend.h"

namespace stripeline {

// The layout checks every stage (and processor) applies to its batches.
// Throws RuntimeFailure: a batch that does not match is a programming error.
void check_batch(const BatchLayout& expected, const Batch& batch, const char* stage);
void check_profiles(const BatchLayout& expected, int slots, const Batch& in, const ProfileBatch& out, const char* stage);
// What a stage that writes profiles from a batch copies across: frame count,
// batch number, frame index and per-frame metadata.
void copy_frame_header(const Batch& in, ProfileBatch& out);

// A stage from pixels to pixels: the blur (each frame on its own, borders
// replicated at each frame's edges) and the threshold (in >= threshold ? in :
// 0; in and out may be the same batch). Both batches have the set-up layout.
class PixelStage {
 public:
  virtual ~PixelStage() = default;
  void run(const Batch& in, Batch& out);

 protected:
  PixelStage(const char* name, const BatchLayout& layout) : name_(name), layout_(layout) {}
  const BatchLayout& layout() const { return layout_; }
  virtual void do_run(const Batch& in, Batch& out) = 0;

 private:
  const char* name_;
  BatchLayout layout_;
};

class ExtractStage {
 public:
  virtual ~ExtractStage() = default;
  // Per-column extraction of every filled frame of `in` into `out`.
  void run(const Batch& in, ProfileBatch& out);

 protected:
  ExtractStage(const BatchLayout& layout, const kernels::ColumnParams& params) : layout_(layout), params_(params) {}
  const BatchLayout& layout() const { return layout_; }
  const kernels::ColumnParams& params() const { return params_; }
  virtual void do_run(const Batch& in, ProfileBatch& out) = 0;

 private:
  BatchLayout layout_;
  kernels::ColumnParams params_;
};

std::unique_ptr<PixelStage> make_blur_stage(Backend backend, const BatchLayout& layout, const kernels::GaussianTaps& taps);
std::unique_ptr<PixelStage> make_threshold_stage(Backend backend, const BatchLayout& layout, std::uint32_t threshold);
// params.slots must be set (validate_chain does it).
std::unique_ptr<ExtractStage> make_extract_stage(Backend backend, const BatchLayout& layout, const kernels::ColumnParams& params);

}  // namespace stripeline
