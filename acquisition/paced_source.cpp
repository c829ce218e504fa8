#include "acquisition/paced_source.h"

#include <algorithm>
#include <cmath>

#include "core/errors.h"

namespace stripeline {

PacedSource::PacedSource(SyntheticConfig config, std::vector<PacedSegment> segments)
    : scanner_((config.frames = 0, config)), segments_(std::move(segments)) {
  double t = 0;
  for (const PacedSegment& s : segments_) {
    if (!(s.rate > 0)) throw ConfigError("paced source: rate " + std::to_string(s.rate) + " is out of range (expected > 0 frames per second)");
    segment_start_s_.push_back(t);
    t += static_cast<double>(s.frames) / s.rate;
    total_ += s.frames;
  }
}

std::chrono::steady_clock::time_point PacedSource::arrival(std::uint64_t i) const {
  double t = 0;
  for (std::size_t k = 0; k < segments_.size(); ++k) {
    if (i < segments_[k].frames || k + 1 == segments_.size()) {
      t = segment_start_s_[k] + static_cast<double>(i) / segments_[k].rate;
      break;
    }
    i -= segments_[k].frames;
  }
  return start_ + std::chrono::nanoseconds(static_cast<std::int64_t>(std::llround(t * 1e9)));
}

std::uint64_t PacedSource::due_by(std::chrono::steady_clock::time_point t) const {
  if (!started_ || t < start_) return 0;
  const double s = std::chrono::duration<double>(t - start_).count();
  std::uint64_t before = 0;
  for (std::size_t k = 0; k < segments_.size(); ++k) {
    const double end = segment_start_s_[k] + static_cast<double>(segments_[k].frames) / segments_[k].rate;
    if (s < end) return before + std::min(segments_[k].frames, static_cast<std::uint64_t>((s - segment_start_s_[k]) * segments_[k].rate) + 1);
    before += segments_[k].frames;
  }
  return total_;
}

std::optional<std::uint64_t> PacedSource::pending_frames() const {
  const std::uint64_t due = due_by(clock::now());
  return due > next_ ? due - next_ : 0;
}

std::uint64_t PacedSource::drop_pending(std::uint64_t n) {
  const std::uint64_t k = std::min(n, pending_frames().value_or(0));
  next_ += k;
  dropped_ += k;
  return k;
}

std::int64_t PacedSource::arrival_ns(const FrameMeta& frame) const {
  return started_ ? std::chrono::duration_cast<std::chrono::nanoseconds>(arrival(frame.frame_id).time_since_epoch()).count() : 0;
}

bool PacedSource::fill(Batch& b) {
  check_fill_target(b, frame_layout(), "paced source");
  if (next_ >= total_) return false;
  // As the fill begins: what the consumer left waiting, from the end of the
  // warm-up tenth on (the bench's latency figures skip it too: the first
  // sight of each pool buffer renders it, a backlog no steady state has).
  if (next_ >= total_ / 10) largest_backlog_ = std::max(largest_backlog_, pending_frames().value_or(0));
  if (std::find(rendered_.begin(), rendered_.end(), b.pixels.data()) == rendered_.end()) {
    // First sight of this buffer: real stripe content in every frame it can hold.
    const int capacity = static_cast<int>(b.pixels.size() / (b.layout.frame_pixels() * bytes_per_pixel(b.layout.format)));
    const BatchLayout asked = b.layout;
    b.layout.frames = std::min<int>(capacity, static_cast<int>(b.meta.size()));
    scanner_.fill(b);
    b.layout = asked;
    rendered_.push_back(b.pixels.data());
  }
  if (!started_) {
    start_ = clock::now() + std::chrono::milliseconds(20);  // the first frame arrives a little after the run begins
    started_ = true;
  }
  const int k = static_cast<int>(std::min<std::uint64_t>(static_cast<std::uint64_t>(b.layout.frames), total_ - next_));
  const auto due = arrival(next_ + static_cast<std::uint64_t>(k) - 1);
  while (clock::now() < due) {  // spin: the harness emulates a camera to the microsecond
  }
  b.frames = k;
  for (int i = 0; i < k; ++i) {
    const std::uint64_t id = next_ + static_cast<std::uint64_t>(i);
    FrameMeta m;
    m.frame_id = id;
    b.meta[static_cast<std::size_t>(i)] = m;
  }
  next_ += static_cast<std::uint64_t>(k);
  return true;
}

std::string PacedSource::describe() const {
  std::string s = "paced synthetic " + std::to_string(frame_layout().width) + "x" + std::to_string(frame_layout().frame_height);
  for (const PacedSegment& g : segments_) s += ", " + std::to_string(g.frames) + " frames at " + std::to_string(static_cast<long>(g.rate)) + "/s";
  return s;
}

}  // namespace stripeline
