#pragma once
// Fan-out of a stripeline stream with ZeroMQ's own proxy (zmq_proxy_steerable,
// XSUB -> XPUB): consumers on other hosts, or many local ones, read one
// publisher's stream without loading the daemon (docs/wire-format.md,
// "Fan-out"). Messages pass through unchanged (seq numbers included, so a
// consumer still sees every gap); subscriptions travel upstream. Each hop
// may be CURVE: upstream as a client of the publisher, downstream as a
// server with its own allow-list.
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include <zmq.hpp>

#include "streaming/curve.h"
#include "streaming/zmq_context.h"

namespace stripeline {

struct ProxyConfig {
  std::string frontend;                          // the publisher (or another proxy) to connect to
  std::string backend = "tcp://127.0.0.1:5560";  // where consumers connect (bound; tcp://host:* = ephemeral port)
  std::string server_key, client_key;            // upstream CURVE: the publisher's public key file, this proxy's secret key file
  CurveConfig backend_curve;                     // downstream CURVE (server secret key, allowed client keys)
  int hwm = 1000;                                // messages queued per peer on each side
  ThreadScheduling scheduling;                   // the proxy's thread and its I/O thread (docs/scale-out.md)
};

// zmq_proxy_steerable's STATISTICS: messages and bytes per socket and direction.
struct ProxyCounters {
  std::uint64_t frontend_messages_in = 0, frontend_bytes_in = 0, frontend_messages_out = 0, frontend_bytes_out = 0;
  std::uint64_t backend_messages_in = 0, backend_bytes_in = 0, backend_messages_out = 0, backend_bytes_out = 0;
};

// The proxy on its own thread from construction to destruction (or stop()).
// Not thread-safe: statistics() and stop() from the owner's thread.
class StreamProxy {
 public:
  explicit StreamProxy(const ProxyConfig& config);  // InputError/ConfigError for a bad endpoint or key
  ~StreamProxy();
  StreamProxy(const StreamProxy&) = delete;
  StreamProxy& operator=(const StreamProxy&) = delete;

  const std::string& backend_endpoint() const { return backend_endpoint_; }  // as bound (the port resolved)
  ProxyCounters statistics();
  std::uint64_t denied() const;  // downstream CURVE clients refused
  void stop();                   // TERMINATE; idempotent

 private:
  zmq::context_t ctx_;  // made first (the sockets below are made from it)
  zmq::socket_t frontend_{ctx_, zmq::socket_type::xsub}, backend_{ctx_, zmq::socket_type::xpub};
  zmq::socket_t control_{ctx_, zmq::socket_type::pair}, steer_{ctx_, zmq::socket_type::pair};
  std::unique_ptr<ZapHandler> zap_;
  std::string backend_endpoint_;
  std::thread thread_;
};

}  // namespace stripeline
