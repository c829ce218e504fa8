#include "streaming/subscriber.h"

#include <algorithm>
#include <cmath>
#include <zmq_addon.hpp>

#include "core/errors.h"
#include "streaming/curve.h"

namespace stripeline {

Subscriber::Subscriber(const SubscriberOptions& o, zmq::context_t* shared)
    : own_ctx_(shared ? nullptr : std::make_unique<zmq::context_t>(1)), socket_(shared ? *shared : *own_ctx_, zmq::socket_type::sub) {
  socket_.set(zmq::sockopt::rcvhwm, o.rcv_hwm);
  socket_.set(zmq::sockopt::linger, 0);
  if (!o.server_key.empty() || !o.client_key.empty()) make_curve_client(socket_, o.server_key, o.client_key);
  try {
    socket_.connect(o.endpoint);
  } catch (const zmq::error_t& e) {
    throw InputError(o.endpoint + ": cannot connect (" + e.what() + ")");
  }
  socket_.set(zmq::sockopt::subscribe, "");
}

std::optional<wire::Decoded> Subscriber::receive(std::chrono::milliseconds wait) {
  zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
  if (zmq::poll(&item, 1, wait) <= 0) return std::nullopt;
  std::vector<zmq::message_t> parts;
  if (!zmq::recv_multipart(socket_, std::back_inserter(parts), zmq::recv_flags::dontwait)) return std::nullopt;
  for (const auto& p : parts) bytes_ += p.size();
  try {
    return wire::decode(parts);
  } catch (const wire::MalformedMessage& e) {
    count_malformed(e);
    return std::nullopt;
  }
}

void Subscriber::count_malformed(const wire::MalformedMessage& e) {
  ++malformed_;
  ++by_reason_[e.reason()];
  last_malformed_ = e.what();
  last_reason_ = e.reason();
}

void SeriesRebuilder::start(const wire::Decoded& d) {
  if (started_ || begun_) throw wire::MalformedMessage("repeated", "a second series-start for this series (seq " + std::to_string(d.seq) + ")");
  started_ = true;
  start_rows_per_message_ = d.header.value("rows_per_message", std::uint64_t{0});
  rows_per_message_ = std::max(rows_per_message_, start_rows_per_message_);
  info_.layout.width = d.header.value("width", 0);
  info_.layout.frame_height = d.header.value("frame_height", 0);
  info_.source = d.header.value("source", std::string("stream"));
  info_.sheet = override_ ? override_ : wire::sheet_calibration_from_json(d.header.value("sheet_calibration", nlohmann::json()));
  try {
    info_.chain.column.method = parse_method(d.header.value("method", std::string("cog")));
  } catch (const ConfigError&) {
  }
}

void SeriesRebuilder::begin(const wire::RowBlock& b, const ProfileMapping& mapping) {
  info_.layout.width = b.width;
  info_.layout.frames = 1;
  info_.profile_slots = b.slots;
  info_.calibration = mapping.calibration();
  if (info_.source.empty()) info_.source = "stream";
  std::size_t begun = 0;
  try {
    for (; begun < sinks_.size(); ++begun) sinks_[begun]->begin(info_);
  } catch (...) {
    for (std::size_t i = 0; i < begun; ++i) sinks_[i]->abort();
    throw;
  }
  begun_ = true;
  next_row_ = b.series_row;  // a late joiner starts where it joined
}

void SeriesRebuilder::feed_empty(std::uint64_t rows, std::uint64_t index) {
  constexpr std::uint64_t kChunk = 1024;
  while (rows > 0) {
    const int n = static_cast<int>(std::min(rows, kChunk));
    const std::size_t per_row = static_cast<std::size_t>(info_.profile_slots) * info_.layout.width;
    position_.assign(per_row * n, kNoPeak);
    intensity_.assign(per_row * n, 0);
    width_.assign(per_row * n, 0);
    quality_.assign(per_row * n, 0);
    count_.assign(static_cast<std::size_t>(info_.layout.width) * n, 0);
    meta_.assign(n, FrameMeta{});
    ProfileSpan s;
    s.first_index = index;
    s.frames = n;
    s.width = info_.layout.width;
    s.slots = info_.profile_slots;
    s.meta = meta_.data();
    s.position = position_.data();
    s.intensity = intensity_.data();
    s.stripe_width = width_.data();
    s.quality = quality_.data();
    s.count = count_.data();
    for (ProfileSink* sink : sinks_) sink->consume(s);
    rows -= static_cast<std::uint64_t>(n);
    index += static_cast<std::uint64_t>(n);
    next_row_ += static_cast<std::uint64_t>(n);
  }
}

void SeriesRebuilder::rows(const wire::RowBlock& b, const ProfileMapping& mapping, std::uint64_t seq) {
  if (b.rows <= 0) return;
  if (b.width < 1 || b.slots < 1 || b.z.size() != static_cast<std::size_t>(b.rows) * b.slots * b.width ||
      b.frame_ids.size() != static_cast<std::size_t>(b.rows) || b.timestamps_ns.size() != b.frame_ids.size() ||
      b.encoder.size() != b.frame_ids.size() || b.missing.size() != b.frame_ids.size() || b.intensity.size() != b.z.size() ||
      b.stripe_width.size() != b.z.size() || b.quality.size() != b.z.size() ||
      (b.has_points() && (b.points.size() != 3 * b.z.size() || b.motion_y.size() != b.frame_ids.size())))
    throw wire::MalformedMessage("shape", "a row block's arrays do not match its shape");
  if (start_rows_per_message_ && static_cast<std::uint64_t>(b.rows) > start_rows_per_message_)
    throw wire::MalformedMessage("shape", "a block of " + std::to_string(b.rows) + " rows (series-start said at most " +
                                              std::to_string(start_rows_per_message_) + " per message)");
  if (begun_) {
    if (b.width != info_.layout.width || b.slots != info_.profile_slots)
      throw wire::MalformedMessage("geometry", "a block of " + std::to_string(b.width) + " columns x " + std::to_string(b.slots) +
                                                   " slots in a series of " + std::to_string(info_.layout.width) + " x " +
                                                   std::to_string(info_.profile_slots));
    if (b.series_row < next_row_)
      throw wire::MalformedMessage("overlap", "series_row " + std::to_string(b.series_row) + ".." + std::to_string(b.series_row + b.rows - 1) +
                                                  " repeats rows already received (expected " + std::to_string(next_row_) + " on)");
    if (b.series_row > next_row_) {
      // Rows can only be missing in messages that are missing.
      const std::uint64_t missed = last_seq_ && seq > *last_seq_ ? seq - *last_seq_ - 1 : 0;
      const std::uint64_t per = std::max<std::uint64_t>(rows_per_message_, static_cast<std::uint64_t>(b.rows));
      const std::uint64_t skip = b.series_row - next_row_;
      // And the rows filled in over the whole series stay within what was
      // received (or kMaxSkippedElements): skipped rows cost a sender nothing.
      const std::uint64_t per_row = static_cast<std::uint64_t>(b.width) * b.slots;
      const std::uint64_t budget = std::max(kMaxSkippedElements, received_elements_ + per_row * b.rows);
      const std::uint64_t room = budget > skipped_elements_ ? (budget - skipped_elements_) / per_row : 0;
      const std::uint64_t limit = std::min(per * std::min<std::uint64_t>(missed, std::uint64_t{1} << 20), room);
      if (skip > limit)
        throw wire::MalformedMessage("series-row", "series_row " + std::to_string(b.series_row) + " skips " + std::to_string(skip) + " rows after " +
                                                       std::to_string(missed) + " missed messages (expected at most " + std::to_string(limit) + ")");
    }
  } else {
    begin(b, mapping);
  }
  last_seq_ = seq;
  if (!start_rows_per_message_) rows_per_message_ = std::max<std::uint64_t>(rows_per_message_, static_cast<std::uint64_t>(b.rows));
  const std::uint64_t elements_per_row = static_cast<std::uint64_t>(b.width) * b.slots;
  received_elements_ += elements_per_row * static_cast<std::uint64_t>(b.rows);
  if (b.series_row > next_row_) {
    skipped_elements_ += elements_per_row * (b.series_row - next_row_);
    feed_empty(b.series_row - next_row_, b.index - (b.series_row - next_row_));
  }
  const std::size_t per_row = static_cast<std::size_t>(b.slots) * b.width, n = per_row * b.rows;
  position_.resize(n);
  count_.assign(static_cast<std::size_t>(b.width) * b.rows, 0);
  meta_.resize(b.rows);
  for (int r = 0; r < b.rows; ++r) {
    for (int s = 0; s < b.slots; ++s)
      for (int x = 0; x < b.width; ++x) {
        const std::size_t i = r * per_row + static_cast<std::size_t>(s) * b.width + x;
        const bool filled = !std::isnan(b.z[i]);
        position_[i] = filled ? mapping.position_from_z(b.z[i]) : kNoPeak;
        // Slots fill from 0: the count is the first empty slot.
        std::uint8_t& c = count_[static_cast<std::size_t>(r) * b.width + x];
        if (filled && c == s) c = static_cast<std::uint8_t>(s + 1);
      }
    FrameMeta& m = meta_[r];
    m.frame_id = b.frame_ids[r];
    m.timestamp_ns = b.timestamps_ns[r];
    m.has_encoder = b.encoder[r].has_value();
    m.encoder = b.encoder[r].value_or(0);
    m.missing = b.missing[r] != 0;
  }
  ProfileSpan s;
  s.first_index = b.index;
  s.frames = b.rows;
  s.width = b.width;
  s.slots = b.slots;
  s.meta = meta_.data();
  s.position = position_.data();
  s.intensity = b.intensity.data();
  s.stripe_width = b.stripe_width.data();
  s.quality = b.quality.data();
  s.count = count_.data();
  // The publisher's points (the processor's X, dY, Z) when it carried them and
  // the rows are mapped with the series' own model; the sinks add each row's
  // motion position from that model, the same double as the carried motion_y.
  if (b.has_points() && info_.sheet && !override_) s.xyz = b.points.data();
  for (ProfileSink* sink : sinks_) sink->consume(s);
  next_row_ = b.series_row + static_cast<std::uint64_t>(b.rows);
}

bool SeriesRebuilder::finish() {
  if (!begun_) return false;
  for (ProfileSink* sink : sinks_) sink->finish();
  return true;
}

void SeriesRebuilder::abort() noexcept {
  if (!begun_) return;
  for (ProfileSink* sink : sinks_) sink->abort();
}

}  // namespace stripeline
