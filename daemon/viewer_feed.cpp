#include "daemon/viewer_feed.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace stripeline::daemon {

namespace {
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
}

ViewerFeed::ViewerFeed(int max_columns, double rate)
    : max_columns_(std::max(1, max_columns)),
      period_(std::chrono::nanoseconds(static_cast<long long>(1e9 / std::max(1.0, rate)))) {}

void ViewerFeed::begin(const ScanInfo& info) {
  scan_ = info;
  const int width = info.layout.width;
  const bool sheet = info.sheet != nullptr;
  const LinearCalibration& cal = info.calibration;
  ViewerInfo v;
  v.width = width;
  v.bins = std::clamp(width, 1, max_columns_);
  const double per_bin = static_cast<double>(width) / v.bins;
  v.frame_height = info.layout.frame_height;
  v.unit = sheet ? "mm" : cal.unit();
  v.x0 = cal.x(0.5 * per_bin - 0.5);
  v.dx = cal.x(per_bin) - cal.x(0.0);
  v.calibration = sheet ? "sheet " + info.sheet->id : cal.enabled ? "linear" : "none";
  start_run(std::move(v), sheet);
}

void ViewerFeed::begin_grid(int cells, double x0, double dx, const std::string& unit, const std::string& calibration) {
  scan_ = ScanInfo{};
  scan_.layout.width = std::max(1, cells);
  ViewerInfo v;
  v.width = scan_.layout.width;
  v.bins = std::clamp(v.width, 1, max_columns_);
  const double per_bin = static_cast<double>(v.width) / v.bins;
  v.unit = unit;
  v.x0 = x0 + dx * (0.5 * per_bin - 0.5);
  v.dx = dx * per_bin;
  v.calibration = calibration;
  start_run(std::move(v), false);
}

void ViewerFeed::start_run(ViewerInfo v, bool with_x) {
  bins_ = v.bins;
  ViewerRow blank;
  blank.heights.assign(static_cast<std::size_t>(bins_), kNaN);
  blank.intensity.assign(static_cast<std::size_t>(bins_), kNaN);
  blank.quality.assign(static_cast<std::size_t>(bins_), kNaN);
  blank.x.assign(with_x ? static_cast<std::size_t>(bins_) : 0, kNaN);
  scratch_.assign(kRing, blank);
  live_before_ = LiveStats{};
  std::lock_guard lock(mu_);
  v.generation = info_.generation + 1;
  info_ = std::move(v);
  ring_.assign(kRing, blank);  // sized for this run
  run_first_ = newest_ + 1;    // rows of the run before are not taken any more
}

void ViewerFeed::decimate(const ProfileSpan& p, int frame, ViewerRow& out) const {
  const int width = p.width;
  const LinearCalibration& cal = scan_.calibration;
  out.index = p.index(frame);
  out.frame_id = p.meta[frame].frame_id;
  for (int b = 0; b < bins_; ++b) {
    const int c0 = static_cast<int>(static_cast<long long>(b) * width / bins_);
    const int c1 = static_cast<int>(static_cast<long long>(b + 1) * width / bins_);
    double h = 0, x = 0, in = 0;
    int n = 0;
    double q = std::numeric_limits<double>::infinity();
    for (int c = c0; c < c1; ++c) {
      if (p.peaks(frame, c) == 0) continue;
      const std::size_t i = p.slot_index(frame, 0, c);
      double z;
      if (p.xyz) {
        z = p.xyz[i * 3 + 2];
        if (std::isnan(z)) continue;
        x += p.xyz[i * 3 + 0];
      } else {
        z = cal.z(p.position[i] / 256.0);
      }
      h += z;
      in += p.intensity[i];
      if (p.quality) q = std::min(q, static_cast<double>(p.quality[i]));
      ++n;
    }
    const auto at = static_cast<std::size_t>(b);
    out.heights[at] = n ? static_cast<float>(h / n) : kNaN;
    out.intensity[at] = n ? static_cast<float>(in / n) : kNaN;
    out.quality[at] = n && p.quality ? static_cast<float>(q) : kNaN;
    if (!out.x.empty()) out.x[at] = n ? static_cast<float>(x / n) : kNaN;
  }
}

int ViewerFeed::due(int available) {
  const auto now = std::chrono::steady_clock::now();
  const auto since = now - last_take_;
  if (since < period_ || available <= 0) return 0;
  last_take_ = now;
  return static_cast<int>(std::min<long long>({since / period_, kRing, available}));
}

void ViewerFeed::hand_over(int n) {
  std::unique_lock lock(mu_, std::try_to_lock);
  if (!lock) {  // the viewer's thread is copying a row: skip these
    skipped_.fetch_add(static_cast<std::uint64_t>(n), std::memory_order_relaxed);
    return;
  }
  for (int i = 0; i < n; ++i) std::swap(ring_[(newest_ + static_cast<std::uint64_t>(i)) % kRing], scratch_[static_cast<std::size_t>(i)]);
  newest_ += static_cast<std::uint64_t>(n);
}

void ViewerFeed::consume(const ProfileSpan& p) {
  if (p.frames <= 0 || scratch_.empty()) return;
  rows_.fetch_add(static_cast<std::uint64_t>(p.frames), std::memory_order_relaxed);
  if (p.width != scan_.layout.width || (p.xyz != nullptr) != !scratch_[0].x.empty()) return;  // not the layout begin() saw
  // As many rows as the time since the last take holds, spread over the span, its last profile last.
  const int n = due(p.frames);
  for (int i = 0; i < n; ++i) decimate(p, static_cast<int>(static_cast<long long>(i + 1) * p.frames / n) - 1, scratch_[static_cast<std::size_t>(i)]);
  if (n > 0) hand_over(n);
}

void ViewerFeed::consume_grid(std::uint64_t first_index, const std::uint64_t* frame_ids, const float* z, int rows, int cells,
                              const std::uint8_t* missing) {
  if (rows <= 0 || scratch_.empty() || cells != scan_.layout.width) return;
  rows_.fetch_add(static_cast<std::uint64_t>(rows), std::memory_order_relaxed);
  const int n = due(rows);
  int taken = 0;
  for (int i = 0; i < n; ++i) {
    const int r = static_cast<int>(static_cast<long long>(i + 1) * rows / n) - 1;  // spread over the block, its last row last
    if (missing && missing[r]) continue;
    ViewerRow& out = scratch_[static_cast<std::size_t>(taken++)];
    out.index = first_index + static_cast<std::uint64_t>(r);
    out.frame_id = frame_ids[r];
    const float* row = z + static_cast<std::size_t>(r) * static_cast<std::size_t>(cells);
    for (int b = 0; b < bins_; ++b) {
      const int c0 = static_cast<int>(static_cast<long long>(b) * cells / bins_);
      const int c1 = static_cast<int>(static_cast<long long>(b + 1) * cells / bins_);
      double h = 0;
      int found = 0;
      for (int c = c0; c < c1; ++c)
        if (!std::isnan(row[c])) h += row[c], ++found;
      out.heights[static_cast<std::size_t>(b)] = found ? static_cast<float>(h / found) : kNaN;
    }
  }
  if (taken > 0) hand_over(taken);
}

void ViewerFeed::on_batch(const PipelineStats& s, std::optional<double> latency_seconds) {
  std::uint64_t frames = 0;
  for (std::size_t i = 0; i < s.live.latency.counts.size() && i < live_before_.latency.counts.size(); ++i)
    frames += s.live.latency.counts[i] - live_before_.latency.counts[i];
  if (frames > 0)
    latency_ms_.store((s.live.latency.sum_us - live_before_.latency.sum_us) / 1000.0 / static_cast<double>(frames), std::memory_order_relaxed);
  else if (latency_seconds)
    latency_ms_.store(*latency_seconds * 1000.0, std::memory_order_relaxed);
  live_before_ = s.live;
}

std::uint64_t ViewerFeed::take(std::uint64_t seen, ViewerRow& out) {
  std::lock_guard lock(mu_);
  if (ring_.empty() || seen >= newest_) return 0;
  const std::uint64_t next = std::max({seen + 1, newest_ >= kRing ? newest_ - kRing + 1 : 1, run_first_});  // older ones were overwritten
  out = ring_[(next - 1) % kRing];
  return next;
}

ViewerInfo ViewerFeed::info() const {
  std::lock_guard lock(mu_);
  return info_;
}

}  // namespace stripeline::daemon
