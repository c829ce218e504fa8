#pragma once
// The publisher's socket: a bound XPUB that never blocks the pipeline.
// XPUB_NODROP makes a send to a subscriber at its high-water mark fail with
// EAGAIN instead of being dropped silently, so every message that does not go
// out is known and counted by reason; XPUB_VERBOSER delivers every
// subscribe/unsubscribe, so the subscriptions are tracked per topic.
// Not thread-safe: the publisher calls it under its own lock.
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <zmq.hpp>

#include "streaming/curve.h"
#include "streaming/wire_format.h"
#include "streaming/zmq_context.h"

namespace stripeline {

enum class DropReason : int { Hwm = 0, NoSubscriber = 1, Error = 2 };
inline constexpr int kDropReasons = 3;
const char* to_string(DropReason r);

struct SenderOptions {
  std::string endpoint;
  int send_hwm = 500;
  int linger_ms = 1000;
  int control_timeout_ms = 1000;
  CurveConfig curve;
  ThreadScheduling scheduling;  // the socket's I/O thread (the merge's output: docs/scale-out.md)
};

class Sender {
 public:
  // Binds (with CURVE and its ZAP handler when enabled). Throws ConfigError
  // for a bad key file, InputError when the endpoint cannot be bound.
  explicit Sender(const SenderOptions& options);
  ~Sender();
  Sender(const Sender&) = delete;
  Sender& operator=(const Sender&) = delete;

  // The endpoint actually bound (an ephemeral port resolved).
  const std::string& endpoint() const { return endpoint_; }
  // Reads the subscribe/unsubscribe messages waiting on the socket.
  void drain_subscriptions();
  // Subscriptions whose prefix matches `topic`.
  int matching(const std::string& topic) const;
  // Sends the message, or says why not. Data messages never wait: a
  // subscriber at its high-water mark makes them a drop (Hwm). Control
  // messages (series-start, series-end) wait up to control_timeout_ms for room.
  std::optional<DropReason> send(wire::Message& message, bool control);

 private:
  void log_error(const std::string& what);

  SenderOptions options_;
  zmq::context_t ctx_{make_zmq_context(options_.scheduling, "publisher")};
  std::unique_ptr<ZapHandler> zap_;
  zmq::socket_t socket_{ctx_, zmq::socket_type::xpub};
  std::string endpoint_;
  std::map<std::string, int> subscriptions_;  // topic prefix -> subscribers
  int errors_logged_ = 0;
};

}  // namespace stripeline
