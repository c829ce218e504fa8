// GenTLCamera::fill(): delivered buffers into batches, with no copy (the
// direct path) or frame by frame through the BatchAssembler; losses counted
// by cause and marked.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>

#include "acquisition/gentl/gentl_camera_impl.h"

namespace stripeline::gentl_detail {

std::uint64_t GenTLCameraImpl::frame_id(const Delivered& d, int k) const {
  if (d.records) return d.records[k].frame_id;
  return d.buffer_id * static_cast<std::uint64_t>(d.frames) + static_cast<std::uint64_t>(k);
}

std::int64_t GenTLCameraImpl::frame_timestamp(const Delivered& d, int k) const {
  if (d.records) return d.records[k].timestamp_ns;
  return d.timestamp_ns + static_cast<std::int64_t>(std::llround(frame_period_ns_ * k));
}

// Direct path: one batch is one grabber buffer, or the missing rows of a gap.
bool GenTLCameraImpl::fill_direct(Batch& batch, int capacity) {
  const std::size_t fb = frame_bytes_;
  if (!pending_) {
    while (!pending_) {
      poll_error_events();
      if (stop_.load()) {
        end_ = SourceEnd::Stopped;
        return false;
      }
      if (lost_.load()) {
        end_ = SourceEnd::DeviceLost;
        return false;
      }
      pending_ = wait_buffer(std::chrono::milliseconds(static_cast<long>(gentl_.event_timeout * 1000)));
    }
    // The frame ids skipped since the last buffer are lost frames.
    const std::uint64_t first = frame_id(*pending_, 0);
    const std::int64_t ts = frame_timestamp(*pending_, 0);
    if (have_previous_ && first > next_id_) {
      const std::uint64_t gap = first - next_id_;
      const std::uint64_t limit = config_.gap_fill_limit ? config_.gap_fill_limit : static_cast<std::uint64_t>(batch_frames_);
      gap_rows_left_ = std::min(gap, limit);
      gap_rows_written_ = 0;
      gap_first_id_ = next_id_;
      gap_total_ = gap;
      gap_ts0_ = previous_ts_;
      gap_ts1_ = ts;
      direct_counters_.lost_gap += gap - gap_rows_left_;  // the rest as their rows are written (AcquisitionCounters::lost_gap)
      direct_counters_.gap_not_inserted += gap - gap_rows_left_;
      spdlog::warn("GenTL camera {}: {} frames lost before frame id {} ({} inserted as missing rows)", settings_.id, gap, first, gap_rows_left_);
    } else if (have_previous_ && first < next_id_) {
      spdlog::warn("GenTL camera {}: frame id {} after {}: the grabber's counter restarted; no gap counted", settings_.id, first, next_id_ - 1);
    }
  }
  if (gap_rows_left_ > 0) {
    // Missing rows go into the batch's own buffer (it is not the grabber's).
    const int rows = static_cast<int>(std::min<std::uint64_t>(gap_rows_left_, static_cast<std::uint64_t>(capacity)));
    for (int i = 0; i < rows; ++i) {
      const std::uint64_t k = gap_rows_written_ + static_cast<std::uint64_t>(i) + 1;
      const std::int64_t t =
          gap_ts0_ + static_cast<std::int64_t>(static_cast<double>(gap_ts1_ - gap_ts0_) * static_cast<double>(k) / static_cast<double>(gap_total_ + 1));
      std::memset(batch.frame_data(i), 0, fb);
      batch.meta[i] = FrameMeta{};
      batch.meta[i].frame_id = gap_first_id_ + k - 1;
      batch.meta[i].timestamp_ns = t;
      batch.meta[i].missing = true;
    }
    batch.frames = rows;
    gap_rows_left_ -= static_cast<std::uint64_t>(rows);
    gap_rows_written_ += static_cast<std::uint64_t>(rows);
    direct_counters_.lost_gap += static_cast<std::uint64_t>(rows);
    // The ids of the rows not inserted (beyond gap_fill_limit) are skipped.
    return true;
  }

  // Hand the delivered buffer on as this batch: swap the memories.
  Delivered d = *pending_;
  pending_.reset();
  auto it = owned_.find(d.base);
  HostBuffer filled = std::move(it->second);
  owned_.erase(it);
  std::byte* freed = batch.pixels.data();
  if (!announced_.count(freed)) {
    owned_.emplace(d.base, std::move(filled));
    throw RuntimeFailure("gentl: fill() was given a batch that was not attached (zero-copy path)");
  }
  HostBuffer previous = std::move(batch.pixels);
  batch.pixels = std::move(filled);
  owned_.emplace(freed, std::move(previous));
  queue(freed);
  ++buffers_direct_;
  last_direct_base_ = d.base;

  const int n = std::min(d.frames, capacity);
  for (int k = 0; k < n; ++k) {
    FrameMeta& m = batch.meta[k];
    m = FrameMeta{};
    m.frame_id = frame_id(d, k);
    m.timestamp_ns = frame_timestamp(d, k);
    if (d.records && (d.records[k].flags & gentl::kFrameHasEncoder)) {
      m.has_encoder = true;
      m.encoder = d.records[k].encoder;
    }
    const bool arrived = k < d.valid;
    if (arrived && !frame_failed(d, k)) {
      ++direct_counters_.frames_complete;
      continue;
    }
    m.missing = true;
    std::memset(batch.frame_data(k), 0, fb);
    if (!d.geometry_ok || (arrived && frame_failed(d, k)))
      ++direct_counters_.lost_failed;
    else
      ++direct_counters_.lost_incomplete;
  }
  batch.frames = n;
  have_previous_ = true;
  next_id_ = frame_id(d, d.frames - 1) + 1;
  previous_ts_ = frame_timestamp(d, d.frames - 1);
  return true;
}

// Assemble path: copy frames into the batch until it is full or flushed.
bool GenTLCameraImpl::fill_assembled(Batch& batch, int capacity) {
  std::optional<clock::time_point> flush_at;
  bool full = false, flushed = false;
  const auto poll = std::chrono::milliseconds(static_cast<long>(gentl_.event_timeout * 1000));
  while (true) {
    poll_error_events();
    if (!pending_) {
      if (stop_.load()) {
        end_ = SourceEnd::Stopped;
        break;
      }
      if (lost_.load()) {
        end_ = SourceEnd::DeviceLost;
        break;
      }
      auto wait = poll;
      if (flush_at) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*flush_at - clock::now());
        if (left.count() <= 0) {
          flushed = true;
          break;
        }
        wait = std::min(wait, left);
      }
      pending_ = wait_buffer(wait);
      if (!pending_) continue;
    }
    Delivered& d = *pending_;
    bool batch_full = false;
    for (; d.next < d.frames; ++d.next) {
      const int k = d.next;
      ArrivedFrame f;
      f.frame_id = frame_id(d, k);
      f.timestamp_ns = frame_timestamp(d, k);
      if (d.records && (d.records[k].flags & gentl::kFrameHasEncoder)) f.encoder = d.records[k].encoder;
      f.status = !d.geometry_ok ? FrameStatus::Failed
                 : k >= d.valid ? FrameStatus::MissingPackets
                 : frame_failed(d, k) ? FrameStatus::Failed
                                      : FrameStatus::Complete;
      f.width = layout_.width;
      f.height = layout_.frame_height;
      f.format = layout_.format;
      f.data = d.base + static_cast<std::size_t>(k) * frame_bytes_;
      f.bytes = frame_bytes_;
      const auto complete_before = assembler_.counters().frames_complete;
      if (assembler_.add(batch, f, capacity) == BatchAssembler::Result::BatchFull) {
        batch_full = true;
        break;
      }
      frames_copied_ += assembler_.counters().frames_complete - complete_before;
    }
    if (d.next >= d.frames) {
      queue(d.base);
      pending_.reset();
    }
    if (!flush_at && batch.frames > 0 && config_.flush_timeout > 0)
      flush_at = clock::now() + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(config_.flush_timeout));
    if (batch_full || batch.frames >= capacity) {
      full = true;
      break;
    }
  }
  if (full) ++batches_full_;
  if (flushed) ++batches_flushed_;
  return batch.frames > 0;
}

bool GenTLCameraImpl::fill(Batch& batch) {
  batch.frames = 0;
  if (!stream_) {
    end_ = SourceEnd::Stopped;  // detached
    return false;
  }
  int capacity = batch.layout.frames;
  if (config_.frames) {
    if (rows_delivered_ >= config_.frames) {
      end_ = SourceEnd::Exhausted;
      return false;
    }
    capacity = static_cast<int>(std::min<std::uint64_t>(static_cast<std::uint64_t>(capacity), config_.frames - rows_delivered_));
  }
  if (!started_) start(batch);
  bool got = false;
  if (direct_) {
    got = fill_direct(batch, capacity);
    if (got) ++(batch.frames >= batch.layout.frames ? batches_full_ : batches_flushed_);
  } else {
    got = fill_assembled(batch, capacity);
  }
  rows_delivered_ += static_cast<std::uint64_t>(batch.frames);
  publish();
  return got && batch.frames > 0;
}

void GenTLCameraImpl::publish() {
  poll_error_events();  // an error the producer raised before the last buffer counts now
  AcquisitionCounters c = assembler_.counters();
  const AcquisitionCounters& d = direct_counters_;
  c.frames_complete += d.frames_complete;
  c.lost_gap += d.lost_gap;
  c.lost_incomplete += d.lost_incomplete;
  c.lost_timeout += d.lost_timeout;
  c.lost_failed += d.lost_failed;
  c.gap_not_inserted += d.gap_not_inserted;
  c.batches_full = batches_full_;
  c.batches_flushed = batches_flushed_;
  c.device_errors = error_events_;
  // Before the first fill the path is the one start() will take (attached
  // buffers that fit, or not); start() revises it if the producer refuses them.
  const bool direct = started_ ? direct_ : !attached_.empty() && why_not_direct(*attached_.front()).empty();
  c.path = direct ? AcquisitionPath::Direct : AcquisitionPath::Copy;
  c.bytes_copied = frames_copied_ * frame_bytes_;  // the direct path copies nothing (a gap's missing rows are zeroed, not copied)
  if (stream_) {
    std::uint64_t underruns = 0;
    std::size_t size = sizeof underruns;
    INFO_DATATYPE t = 0;
    if (producer_->api().DSGetInfo(stream_, STREAM_INFO_NUM_UNDERRUN, &t, &underruns, &size) == GC_ERR_SUCCESS) c.underruns = underruns;
  }
  std::lock_guard lock(published_mu_);
  published_ = c;
  stats_.buffers = buffers_;
  stats_.buffers_direct = buffers_direct_;
  stats_.frames_copied = frames_copied_;
  stats_.error_events = error_events_;
  stats_.last_error_event = last_error_event_;
  stats_.payload_bytes = payload_;
  stats_.frames_per_buffer = frames_per_buffer_;
  stats_.direct = direct_;
  stats_.last_direct_base = last_direct_base_;
}

}  // namespace stripeline::gentl_detail
