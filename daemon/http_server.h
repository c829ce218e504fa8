#pragma once
// The daemon's HTTP endpoint (cpp-httplib): GET /healthz and GET /metrics
// (Prometheus text format). Listens on one address and port, loopback by
// default; port 0 picks an ephemeral port (port() tells which).
#include <functional>
#include <memory>
#include <string>
#include <utility>

namespace stripeline::daemon {

class HttpServer {
 public:
  using Metrics = std::function<std::string()>;
  using Health = std::function<std::pair<bool, std::string>()>;  // (healthy, text)
  // Binds and starts serving on its own thread. Throws InputError when the
  // address/port cannot be bound.
  HttpServer(const std::string& address, int port, Metrics metrics, Health health);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;
  int port() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace stripeline::daemon
