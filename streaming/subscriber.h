#pragma once
// The receiving side of the stream: a SUB socket (a CURVE client when keys
// are given) that hands out decoded messages, and the rebuilding of a series
// into profiles, so that a subscriber writes its files with the very sinks a
// replay writes with (app/outputs.h).
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "core/profile.h"
#include "core/profile_mapping.h"
#include "pipeline/sink.h"
#include "streaming/wire_format.h"

namespace stripeline {

struct SubscriberOptions {
  std::string endpoint;
  int rcv_hwm = 1000;
  std::string server_key;  // CURVE: the publisher's public key file
  std::string client_key;  // CURVE: this client's secret key file (mode 0600)
};

class Subscriber {
 public:
  // Connects and subscribes to every topic. Throws InputError for a bad
  // endpoint or key file.
  // `shared`: a context whose I/O thread this socket shares with the
  // caller's others (the caller keeps it alive longer); nullptr = its own.
  explicit Subscriber(const SubscriberOptions& options, zmq::context_t* shared = nullptr);
  // The next message, decoded; nullopt when none came within `wait`. A
  // message that does not follow the format is skipped and counted (by
  // wire::MalformedMessage::reason()), and its problem is in last_malformed().
  std::optional<wire::Decoded> receive(std::chrono::milliseconds wait);
  // The socket's handle, to poll several subscribers at once (zmq::poll; MergeService).
  void* poll_handle() { return socket_.handle(); }
  std::uint64_t bytes() const { return bytes_; }
  std::uint64_t malformed() const { return malformed_; }
  const std::string& last_malformed() const { return last_malformed_; }
  const std::string& last_malformed_reason() const { return last_reason_; }
  // Counts a message found malformed after decoding (SeriesRebuilder::rows).
  void count_malformed(const wire::MalformedMessage& e);
  const std::map<std::string, std::uint64_t>& malformed_by_reason() const { return by_reason_; }

 private:
  std::unique_ptr<zmq::context_t> own_ctx_;  // unless a shared one is given
  zmq::socket_t socket_;
  std::uint64_t bytes_ = 0, malformed_ = 0;
  std::string last_malformed_, last_reason_;
  std::map<std::string, std::uint64_t> by_reason_;
};

// Rebuilds profiles from the row messages of one series (the inverse of the
// publisher's row encoding: z back to fixed-point positions through the
// series' ProfileMapping) and feeds them to sinks in series order. Rows
// never received (gaps) become empty profiles, so a height map keeps its
// geometry. The sinks begin at the first rows and finish at finish().
class SeriesRebuilder {
 public:
  explicit SeriesRebuilder(std::vector<ProfileSink*> sinks) : sinks_(std::move(sinks)) {}
  // series-start: what the header says of the scan (frame height, source,
  // method). A second one (or one after rows) is wire::MalformedMessage ("repeated").
  // Its `sheet_calibration` (if any) maps the rebuilt points, unless
  // use_calibration() was given one (subscribe --calibration).
  void start(const wire::Decoded& series_start);
  void use_calibration(std::shared_ptr<const AppliedCalibration> sheet) { override_ = std::move(sheet); }
  // A profile message's rows (its calibration and height code in `mapping`),
  // `seq` its message number. Points the block carries (RowBlock::points)
  // are the ones the sinks write, unless use_calibration() replaced the
  // series' model; without them the sinks map the rows with the model. Checked against the series before anything is
  // written; wire::MalformedMessage (nothing fed) for a block whose geometry
  // is not the series' ("geometry"), that repeats or overlaps rows already fed
  // ("overlap"), or that starts further on than the messages missed since the
  // last block could hold ("series-row": rows_per_message, or the largest block
  // seen, per missed message), so that a received offset never sizes memory.
  // The rows filled in for skips, over the whole series, are also bounded:
  // at most as many elements (rows x width x slots) as were received, or
  // kMaxSkippedElements (64 Mi: a 128 MiB height map) if that is more.
  void rows(const wire::RowBlock& block, const ProfileMapping& mapping, std::uint64_t seq);
  static constexpr std::uint64_t kMaxSkippedElements = std::uint64_t{1} << 26;
  // Finishes the sinks if any rows came; returns whether they did.
  bool finish();
  void abort() noexcept;
  std::uint64_t rows_fed() const { return next_row_; }

 private:
  void begin(const wire::RowBlock& first, const ProfileMapping& mapping);
  void feed_empty(std::uint64_t rows, std::uint64_t index);

  std::vector<ProfileSink*> sinks_;
  ScanInfo info_;
  std::shared_ptr<const AppliedCalibration> override_;
  bool begun_ = false, started_ = false;
  std::uint64_t next_row_ = 0;  // series row expected next
  std::optional<std::uint64_t> last_seq_;  // of the last block fed
  std::uint64_t rows_per_message_ = 0;     // series-start's rows_per_message, or the largest block seen
  std::uint64_t start_rows_per_message_ = 0;
  std::uint64_t received_elements_ = 0, skipped_elements_ = 0;
  // One block's profiles (reused).
  std::vector<std::int32_t> position_;
  std::vector<std::uint16_t> intensity_, width_, quality_;
  std::vector<std::uint8_t> count_;
  std::vector<FrameMeta> meta_;
};

}  // namespace stripeline
