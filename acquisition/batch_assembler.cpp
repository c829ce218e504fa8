#include "acquisition/batch_assembler.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>

namespace stripeline {

namespace {
// GigE Vision 1.x block ids: 16 bits, 0 reserved, so 1..65535 then 1 again.
constexpr std::uint64_t kShortIdMax = 65535;
}  // namespace

BatchAssembler::BatchAssembler(BatchLayout frame, std::uint64_t gap_fill_limit)
    : frame_(frame), frame_bytes_(frame.frame_pixels() * bytes_per_pixel(frame.format)), gap_fill_limit_(gap_fill_limit) {
  frame_.frames = 0;
}

BatchAssembler::IdStep BatchAssembler::classify(std::uint64_t previous, std::uint64_t next) {
  if (previous <= kShortIdMax && next >= 1 && next <= kShortIdMax) {
    const std::uint64_t d = (next + kShortIdMax - previous) % kShortIdMax;  // forward distance on the 1..65535 circle
    if (d == 0 || d >= kShortIdMax - kLateWindow) return {IdStep::Late, 0};
    return {IdStep::Ahead, d};
  }
  if (next > previous) return {IdStep::Ahead, next - previous};
  if (previous - next <= kLateWindow) return {IdStep::Late, 0};
  return {IdStep::Reset, 0};
}

std::uint64_t BatchAssembler::id_distance(std::uint64_t previous, std::uint64_t next) {
  const IdStep s = classify(previous, next);
  return s.kind == IdStep::Ahead ? s.distance : 0;
}

void BatchAssembler::restart_sequence() {
  have_previous_ = false;
  gap_known_ = false;
}

bool BatchAssembler::geometry_matches(const ArrivedFrame& f) const {
  return f.width == frame_.width && f.height == frame_.frame_height && f.format == frame_.format && f.data != nullptr &&
         f.bytes >= frame_bytes_;
}

void BatchAssembler::write_missing_row(Batch& batch, std::uint64_t frame_id, std::int64_t timestamp_ns) {
  const int i = batch.frames++;
  std::memset(batch.frame_data(i), 0, frame_bytes_);
  FrameMeta& m = batch.meta[i];
  m = FrameMeta{};
  m.frame_id = frame_id;
  m.timestamp_ns = timestamp_ns;
  m.missing = true;
}

BatchAssembler::Result BatchAssembler::add(Batch& batch, const ArrivedFrame& f, int rows) {
  const int capacity = std::min(rows, batch.layout.frames);
  if (!gap_known_) {
    // First look at this frame: place it in the sequence and count the gap
    // in front of it, once.
    gap_ = 0;
    id_ = f.frame_id;
    if (have_previous_) {
      const IdStep step = classify(previous_raw_, f.frame_id);
      if (step.kind == IdStep::Late) {
        ++counters_.arrived_late;
        spdlog::debug("camera: frame id {} arrived after {}: its row is already missing; dropped", f.frame_id, previous_raw_);
        return Result::Placed;
      }
      if (step.kind == IdStep::Reset)
        spdlog::warn("camera: frame id {} after {}: the camera's counter restarted; no gap counted", f.frame_id, previous_raw_);
      gap_ = step.kind == IdStep::Ahead ? step.distance - 1 : 0;
      id_ = previous_id_ + gap_ + 1;
    }
    gap_rows_ = std::min(gap_, gap_fill_limit_);
    gap_rows_written_ = 0;
    counters_.lost_gap += gap_ - gap_rows_;  // the rest as their rows are written (AcquisitionCounters::lost_gap)
    counters_.gap_not_inserted += gap_ - gap_rows_;
    if (gap_ > gap_rows_)
      spdlog::warn("camera: {} frames lost before frame id {}; {} inserted as missing rows (camera.gap_fill_limit)", gap_, f.frame_id,
                   gap_rows_);
    gap_known_ = true;
  }
  // The missing rows of the gap, with ids and timestamps spread evenly
  // between the frames around it.
  while (gap_rows_written_ < gap_rows_) {
    if (batch.frames >= capacity) return Result::BatchFull;
    const std::uint64_t k = gap_rows_written_ + 1;
    const std::int64_t ts =
        previous_ts_ + static_cast<std::int64_t>((static_cast<double>(f.timestamp_ns - previous_ts_) * static_cast<double>(k)) /
                                                 static_cast<double>(gap_ + 1));
    write_missing_row(batch, previous_id_ + k, ts);
    ++gap_rows_written_;
    ++counters_.lost_gap;
  }
  if (batch.frames >= capacity) return Result::BatchFull;

  const std::uint64_t id = id_;
  const bool whole = f.status == FrameStatus::Complete && geometry_matches(f);
  if (whole) {
    const int i = batch.frames++;
    std::memcpy(batch.frame_data(i), f.data, frame_bytes_);
    FrameMeta& m = batch.meta[i];
    m = FrameMeta{};
    m.frame_id = id;
    m.timestamp_ns = f.timestamp_ns;
    m.has_encoder = f.encoder.has_value();
    m.encoder = f.encoder.value_or(0);
    ++counters_.frames_complete;
  } else {
    write_missing_row(batch, id, f.timestamp_ns);
    switch (f.status) {
      case FrameStatus::MissingPackets: ++counters_.lost_incomplete; break;
      case FrameStatus::Timeout: ++counters_.lost_timeout; break;
      case FrameStatus::Complete:  // wrong geometry or size: the camera changed under us
      case FrameStatus::Failed: ++counters_.lost_failed; break;
    }
  }
  have_previous_ = true;
  previous_raw_ = f.frame_id;
  previous_id_ = id;
  previous_ts_ = f.timestamp_ns;
  gap_known_ = false;
  return Result::Placed;
}

}  // namespace stripeline
