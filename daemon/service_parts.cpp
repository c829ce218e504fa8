#include "daemon/service_parts.h"

#include <chrono>
#include <ctime>
#include <thread>

#include "app/outputs.h"
#include "core/errors.h"

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

std::unique_ptr<Publisher> bind_publisher(const PublisherConfig& config) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  while (true) {
    try {
      return std::make_unique<Publisher>(config);
    } catch (const ConfigError&) {
      throw;
    } catch (const InputError&) {
      if (std::chrono::steady_clock::now() > deadline) throw;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
}

DaemonSnapshot snapshot_of(const InstrumentedSource* source, Publisher* publisher, bool healthy, bool camera_connected,
                           std::optional<HttpServer::Stats> http) {
  DaemonSnapshot s;
  if (source) {
    s.has_source = true;
    s.frames = source->frames();
    s.missing = source->missing();
    s.in_flight = source->in_flight();
    s.acquisition = source->acquisition_counters();
  }
  if (publisher) {
    s.publisher = publisher->counters();
    s.subscribers = publisher->subscribers();
  }
  s.healthy = healthy;
  s.camera_connected = camera_connected;
  s.http = http;
  return s;
}

}  // namespace stripeline::daemon
