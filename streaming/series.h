#pragma once
// The series state machine of a publisher. A series is one scan:
//   closed --start()--> open (series-start sent) --close()--> closed (series-end sent)
// While open it numbers every message of the series (seq, across topics)
// and counts the profile rows it was given, sent and dropped by reason, which
// series-end and the stats messages report.
#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "streaming/sender.h"
#include "streaming/wire_format.h"

namespace stripeline {

struct SeriesCounters {
  std::uint64_t rows_in = 0;           // profile rows handed to the publisher in this series
  std::uint64_t rows_published = 0;    // profile rows sent
  std::uint64_t profile_messages = 0;  // profile messages sent
  std::array<std::uint64_t, kDropReasons> rows_dropped{};
};

class Series {
 public:
  bool open() const { return open_; }
  const std::string& id() const { return id_; }
  // Messages numbered so far (the next seq).
  std::uint64_t messages() const { return seq_; }
  const SeriesCounters& counters() const { return counters_; }

  // Opens a new series: a new UUID, seq from 0, counters zeroed.
  void start();
  // Closes it; the annotations are cleared for the next one.
  void close();
  std::uint64_t take_seq() { return seq_++; }
  void add_rows_in(std::uint64_t rows) { counters_.rows_in += rows; }
  // The outcome of one message carrying `rows` profile rows (0 for other topics).
  void record(wire::Topic topic, std::uint64_t rows, std::optional<DropReason> dropped);

  // Annotations for the next series-start / series-end (the daemon's scan
  // number, the reason a scan ended).
  nlohmann::json annotations = nlohmann::json::object();

 private:
  bool open_ = false;
  std::string id_;
  std::uint64_t seq_ = 0;
  SeriesCounters counters_;
};

// {"hwm": .., "no_subscriber": .., "error": ..}
nlohmann::json drops_json(const std::array<std::uint64_t, kDropReasons>& dropped);

}  // namespace stripeline
