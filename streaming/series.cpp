#include "streaming/series.h"

namespace stripeline {

void Series::start() {
  open_ = true;
  id_ = wire::new_uuid();
  seq_ = 0;
  counters_ = SeriesCounters{};
}

void Series::close() {
  open_ = false;
  annotations = nlohmann::json::object();
}

void Series::record(wire::Topic topic, std::uint64_t rows, std::optional<DropReason> dropped) {
  if (topic != wire::Topic::Profile) return;
  if (dropped) {
    counters_.rows_dropped[static_cast<int>(*dropped)] += rows;
  } else {
    counters_.rows_published += rows;
    ++counters_.profile_messages;
  }
}

nlohmann::json drops_json(const std::array<std::uint64_t, kDropReasons>& d) {
  return {{"hwm", d[0]}, {"no_subscriber", d[1]}, {"error", d[2]}};
}

}  // namespace stripeline
