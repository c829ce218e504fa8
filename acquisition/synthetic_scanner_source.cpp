// The SyntheticScanner class: a FrameSource over the scene functions of
// synthetic_scanner.cpp (frames rendered in parallel with TBB). A file of its
// own: the GenTL producer renders the same scene through
// render_synthetic_frame and its own threads (gentl/producer/render_team.h),
// and links none of this, nor TBB.
#include <cstring>
#include <mutex>
#include <sstream>
#include <vector>

#include "acquisition/stripe_render.h"
#include "acquisition/synthetic_scanner.h"

namespace stripeline {

// Frames 0..N-1, each rendered by the first fill that needs it (fills may
// render a batch's frames in parallel: two frames of one slot in one batch
// wait for the same render).
struct SyntheticScanner::FrameCache {
  FrameCache(std::size_t frames, std::size_t frame_bytes) : bytes(frames * frame_bytes), rendered(new std::once_flag[frames]), frame_bytes(frame_bytes) {}
  std::vector<std::byte> bytes;
  std::unique_ptr<std::once_flag[]> rendered;
  std::size_t frame_bytes;
};

SyntheticScanner::SyntheticScanner(SyntheticConfig config) : config_(config) {
  config_.validate();
  if (config_.cached_frames > 0) {
    const std::size_t frame_bytes = static_cast<std::size_t>(config_.width) * config_.frame_height * bytes_per_pixel(config_.format);
    cache_ = std::make_shared<FrameCache>(static_cast<std::size_t>(config_.cached_frames), frame_bytes);
  }
}

std::uint64_t SyntheticScanner::scene_frame(std::uint64_t frame) const {
  return config_.cached_frames > 0 ? frame % static_cast<std::uint64_t>(config_.cached_frames) : frame;
}

BatchLayout SyntheticScanner::frame_layout() const {
  return BatchLayout{config_.width, config_.frame_height, 0, config_.format};
}

std::optional<std::uint64_t> SyntheticScanner::total_frames() const {
  if (config_.frames == 0) return std::nullopt;
  return config_.frames;
}

std::string SyntheticScanner::describe() const {
  std::ostringstream s;
  s << "synthetic scanner " << config_.width << "x" << config_.frame_height << " " << to_string(config_.format)
    << ", seed " << config_.seed << ", ";
  if (config_.frames == 0)
    s << "endless";
  else
    s << config_.frames << " frames";
  s << " at " << config_.frame_rate << " fps";
  return s.str();
}

SignificantBits SyntheticScanner::significant_bits() const {
  return {config_.bits != 0 ? config_.bits : (config_.format == PixelFormat::Mono8 ? 8 : 16), BitsOrigin::Synthetic};
}

double SyntheticScanner::truth(std::uint64_t frame, int column) const { return synthetic_truth(config_, scene_frame(frame), column); }
double SyntheticScanner::reflection_row(std::uint64_t frame, int column) const {
  return synthetic_reflection_row(config_, scene_frame(frame), column);
}
double SyntheticScanner::second_row(std::uint64_t frame, int column) const { return synthetic_second_row(config_, scene_frame(frame), column); }

std::uint32_t SyntheticScanner::max_value() const {
  if (config_.format == PixelFormat::Mono8) return 255u;
  return config_.bits == 0 ? 65535u : (1u << config_.bits) - 1u;
}

void SyntheticScanner::render(std::uint64_t frame, std::byte* dst) const {
  if (!cache_) {
    render_synthetic_frame(config_, frame, dst);
    return;
  }
  const std::uint64_t slot = scene_frame(frame);
  std::byte* cached = cache_->bytes.data() + slot * cache_->frame_bytes;
  std::call_once(cache_->rendered[slot], [&] { render_synthetic_frame(config_, slot, cached); });
  std::memcpy(dst, cached, cache_->frame_bytes);
}

bool SyntheticScanner::fill(Batch& batch) {
  check_fill_target(batch, frame_layout(), "synthetic scanner");
  return render::fill_frames(batch, next_, config_.frames, config_.frame_rate, config_.encoder_step,
                             [this](std::uint64_t index, std::byte* dst) { render(index, dst); });
}

}  // namespace stripeline
