#include "daemon/service_parts.h"

#include <ctime>

#include "app/outputs.h"

namespace stripeline::daemon {

std::string utc_stamp() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

HttpLimits http_limits(const HttpConfig& h) {
  HttpLimits l;
  l.max_connections = h.max_connections;
  l.request_timeout = std::chrono::milliseconds(static_cast<long long>(h.request_timeout * 1000));
  l.idle_timeout = std::chrono::milliseconds(static_cast<long long>(h.idle_timeout * 1000));
  return l;
}

std::optional<PublisherConfig> stream_of(const Config& c) {
  if (!c.publish) return std::nullopt;
  return publisher_for_outputs(c.publisher, c.output, c.pipeline.backend);
}

}  // namespace stripeline::daemon
