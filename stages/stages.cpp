#include "stages/stages.h"

#include <string>

#include "core/errors.h"
#include "stages/chain.h"
#include "stages/factory.h"

namespace stripeline {

void check_batch(const BatchLayout& expected, const Batch& b, const char* stage) {
  if (!(b.layout == expected)) throw RuntimeFailure(std::string(stage) + ": batch layout differs from the one the stage was set up for");
  if (b.frames < 0 || b.frames > b.layout.frames)
    throw RuntimeFailure(std::string(stage) + ": batch holds " + std::to_string(b.frames) + " frames, capacity is " +
                         std::to_string(b.layout.frames));
  if (b.pixels.size() < b.layout.bytes() || b.meta.size() < static_cast<std::size_t>(b.layout.frames))
    throw RuntimeFailure(std::string(stage) + ": batch buffers are smaller than its layout");
}

void check_profiles(const BatchLayout& l, int slots, const Batch& in, const ProfileBatch& out, const char* stage) {
  if (out.width != l.width || out.capacity < in.frames || out.slots != slots)
    throw RuntimeFailure(std::string(stage) + ": profile batch does not match the stage's layout");
}

void copy_frame_header(const Batch& in, ProfileBatch& out) {
  out.frames = in.frames;
  out.sequence = in.sequence;
  out.first_index = in.first_index;
  for (int i = 0; i < in.frames; ++i) out.meta[i] = in.meta[i];
}

void PixelStage::run(const Batch& in, Batch& out) {
  check_batch(layout_, in, name_);
  check_batch(layout_, out, name_);
  do_run(in, out);
  out.copy_header_from(in);
}

void ExtractStage::run(const Batch& in, ProfileBatch& out) {
  check_batch(layout_, in, "extract");
  check_profiles(layout_, params_.slots, in, out, "extract");
  do_run(in, out);
  copy_frame_header(in, out);
}

void BatchProcessor::submit(const Batch& in, ProfileBatch& out) {
  if (pending_) throw RuntimeFailure("process: a batch was submitted while the previous one was still pending (call wait() first)");
  check_batch(layout_, in, "process");
  check_profiles(layout_, params_.slots, in, out, "process");
  if (maps_points() != (out.xyz != nullptr))
    throw RuntimeFailure(maps_points() ? "process: the chain maps calibrated points but the profile batch has no points array"
                                       : "process: the profile batch has a points array but the chain has no calibration to fill it");
  copy_frame_header(in, out);
  enqueue(in, out);
  pending_ = &out;
}

void BatchProcessor::wait() {
  if (!pending_) return;
  ProfileBatch& out = *pending_;
  pending_ = nullptr;
  complete();
  // A frame that never arrived (a camera's frame-id gap, an incomplete
  // buffer) is an empty profile, never a row of whatever its pixels held.
  for (int f = 0; f < out.frames; ++f)
    if (out.meta[f].missing) out.clear_frame(f);
}

const BackendFactory& backend_factory(Backend b) {
  switch (b) {
    case Backend::Cpu: return cpu::factory();
    case Backend::Cuda:
#if STRIPELINE_HAVE_CUDA
      return cuda::factory();
#else
      throw_no_cuda_backend();
#endif
    case Backend::Auto: break;
  }
  throw RuntimeFailure("backend_factory: the backend must be resolved (cpu or cuda) before use");
}

std::unique_ptr<PixelStage> make_blur_stage(Backend b, const BatchLayout& l, const kernels::GaussianTaps& taps) {
  return backend_factory(b).blur(l, taps);
}
std::unique_ptr<PixelStage> make_threshold_stage(Backend b, const BatchLayout& l, std::uint32_t t) {
  return backend_factory(b).threshold(l, t);
}
std::unique_ptr<ExtractStage> make_extract_stage(Backend b, const BatchLayout& l, const kernels::ColumnParams& p) {
  return backend_factory(b).extract(l, p);
}

}  // namespace stripeline
