#include "pipeline/live_batching.h"

#include <algorithm>
#include <limits>

#include <spdlog/spdlog.h>

namespace stripeline {

void LatencyHistogram::observe(double us) {
  std::size_t i = 0;
  while (i < kBoundsUs.size() && us > kBoundsUs[i]) ++i;
  ++counts[i];
  sum_us += us;
  ++count;
}

double LatencyHistogram::quantile_bound_us(double q) const {
  if (count == 0) return 0.0;
  const double need = q * static_cast<double>(count);
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < kBoundsUs.size(); ++i) {
    seen += counts[i];
    if (static_cast<double>(seen) >= need) return kBoundsUs[i];
  }
  return std::numeric_limits<double>::infinity();
}

void StageTimes::observe(std::int64_t arrival, std::int64_t filled, std::int64_t processed, std::int64_t counted, std::int64_t sunk) {
  const std::int64_t at[kStages + 1] = {arrival, filled, processed, counted, sunk};
  for (int s = 0; s < kStages; ++s) {
    const std::int64_t quarters = std::max<std::int64_t>(0, at[s + 1] - at[s]) * kPerUs / 1000;
    ++counts[static_cast<std::size_t>(s)][static_cast<std::size_t>(std::min<std::int64_t>(quarters, kBuckets - 1))];
  }
  ++batches;
}

double StageTimes::median_us(Stage s) const {
  std::uint64_t seen = 0;
  for (int i = 0; i < kBuckets; ++i) {
    seen += counts[static_cast<std::size_t>(s)][static_cast<std::size_t>(i)];
    if (2 * seen > batches) return (i + 0.5) / kPerUs;
  }
  return 0.0;
}

LiveBatcher::LiveBatcher(int configured, int max_batch, std::uint64_t max_waiting) {
  stats_.active = true;
  stats_.configured_batch = configured;
  stats_.max_batch = std::max(configured, max_batch);
  stats_.max_waiting = max_waiting;
  stats_.current_batch = configured;
}

// One line a second at most for the switches to batching; "caught up" is
// logged for a switch that was.
bool LiveBatcher::log_now(clock::time_point& last) {
  const auto now = clock::now();
  if (last != clock::time_point{} && now - last < std::chrono::seconds(1)) return false;
  last = now;
  return true;
}

LiveBatcher::Decision LiveBatcher::decide(std::optional<std::uint64_t> waiting) {
  const std::uint64_t w = waiting.value_or(0);
  waiting_ = w;
  stats_.queue_depth = w;
  stats_.largest_queue_depth = std::max(stats_.largest_queue_depth, w);
  Decision d{stats_.configured_batch, 0};
  if (stats_.max_waiting > 0 && w > stats_.max_waiting) d.drop = w - stats_.max_waiting;
  const std::uint64_t kept = w - d.drop;
  d.take = static_cast<int>(std::clamp<std::uint64_t>(kept, static_cast<std::uint64_t>(stats_.configured_batch),
                                                      static_cast<std::uint64_t>(stats_.max_batch)));
  const bool batching = d.take > stats_.configured_batch;
  if (batching && !stats_.batching) {
    ++stats_.to_batching;
    if (log_now(last_log_)) {
      spdlog::warn("live path: {} frames waiting: batching up to {} (the path is slower than the source; {} switches so far)", w,
                   stats_.max_batch, stats_.to_batching);
      logged_batching_ = true;
    }
  } else if (!batching && stats_.batching) {
    ++stats_.caught_up;
    if (logged_batching_) spdlog::info("live path: caught up: batches of {} again ({} frames waiting)", stats_.configured_batch, w);
    logged_batching_ = false;
  }
  stats_.batching = batching;
  stats_.current_batch = d.take;
  stats_.largest_batch = std::max(stats_.largest_batch, d.take);
  return d;
}

void LiveBatcher::dropped(std::uint64_t n, std::uint64_t asked) {
  stats_.dropped += n;
  // What stays waiting: the bound, or more when the source could not discard.
  stats_.largest_kept_depth = std::max(stats_.largest_kept_depth, waiting_ - std::min(waiting_, n));
  if (asked == 0) return;
  if (n == 0) {
    if (!said_cannot_drop_)
      spdlog::warn("live path: {} frames waiting, more than live_max_waiting = {}: this source cannot discard frames (its own ring bounds the backlog)",
                   waiting_, stats_.max_waiting);
    said_cannot_drop_ = true;
    return;
  }
  unlogged_drops_ += n;
  if (log_now(last_drop_log_)) {
    spdlog::warn("live path: {} frames waiting, more than live_max_waiting = {}: dropping the oldest ({} dropped since the last line, {} in all)",
                 waiting_, stats_.max_waiting, unlogged_drops_, stats_.dropped);
    unlogged_drops_ = 0;
  }
}

}  // namespace stripeline
