#include "stages/stages.h"

#include "core/errors.h"
#include "stages/cpu/cpu_stages.h"
#if STRIPELINE_HAVE_CUDA
#include "stages/cuda/cuda_stages.h"
#endif

namespace stripeline {

void copy_batch_header(const Batch& in, ProfileBatch& out) {
  out.frames = in.frames;
  out.sequence = in.sequence;
  out.first_index = in.first_index;
  for (int i = 0; i < in.frames; ++i) out.meta[i] = in.meta[i];
}

namespace {
[[noreturn, maybe_unused]] void no_cuda() { throw ConfigError("backend 'cuda' requested but this build has no CUDA backend"); }
}  // namespace

std::unique_ptr<BlurStage> make_blur_stage(Backend b, const BatchLayout& l, const kernels::GaussianTaps& taps) {
  if (b == Backend::Cuda) {
#if STRIPELINE_HAVE_CUDA
    return cuda::make_blur_stage(l, taps);
#else
    no_cuda();
#endif
  }
  return cpu::make_blur_stage(l, taps);
}

std::unique_ptr<ThresholdStage> make_threshold_stage(Backend b, const BatchLayout& l, std::uint32_t t) {
  if (b == Backend::Cuda) {
#if STRIPELINE_HAVE_CUDA
    return cuda::make_threshold_stage(l, t);
#else
    no_cuda();
#endif
  }
  return cpu::make_threshold_stage(l, t);
}

std::unique_ptr<ExtractStage> make_extract_stage(Backend b, const BatchLayout& l, const kernels::ColumnParams& p) {
  if (b == Backend::Cuda) {
#if STRIPELINE_HAVE_CUDA
    return cuda::make_extract_stage(l, p);
#else
    no_cuda();
#endif
  }
  return cpu::make_extract_stage(l, p);
}

}  // namespace stripeline
