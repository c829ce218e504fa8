#include "streaming/sender.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <thread>

#include "core/errors.h"

namespace stripeline {

const char* to_string(DropReason r) {
  switch (r) {
    case DropReason::Hwm: return "hwm";
    case DropReason::NoSubscriber: return "no_subscriber";
    case DropReason::Error: return "error";
  }
  return "?";
}

Sender::Sender(const SenderOptions& options) : options_(options) {
  if (options_.curve.enabled) zap_ = make_curve_server(ctx_, socket_, options_.curve);
  socket_.set(zmq::sockopt::sndhwm, options_.send_hwm);
  socket_.set(zmq::sockopt::linger, options_.linger_ms);
  socket_.set(zmq::sockopt::xpub_nodrop, 1);
  socket_.set(zmq::sockopt::xpub_verboser, 1);
  try {
    socket_.bind(options_.endpoint);
  } catch (const zmq::error_t& e) {
    throw InputError("publisher.endpoint: cannot bind '" + options_.endpoint + "' (" + e.what() + ")");
  }
  endpoint_ = socket_.get(zmq::sockopt::last_endpoint);
}

Sender::~Sender() {
  try {
    socket_.close();  // lingers up to linger_ms in the context's threads
    zap_.reset();
    ctx_.close();
  } catch (const std::exception& e) {
    spdlog::warn("publisher: close failed: {}", e.what());
  }
}

void Sender::drain_subscriptions() {
  zmq::message_t m;
  while (true) {
    zmq::recv_result_t r;
    try {
      r = socket_.recv(m, zmq::recv_flags::dontwait);
    } catch (const zmq::error_t&) {
      return;
    }
    if (!r) return;
    if (m.size() == 0) continue;
    const char* d = static_cast<const char*>(m.data());
    const std::string topic(d + 1, m.size() - 1);
    if (d[0] == 1) {
      ++subscriptions_[topic];
    } else if (d[0] == 0) {
      auto it = subscriptions_.find(topic);
      if (it != subscriptions_.end() && --it->second <= 0) subscriptions_.erase(it);
    }
  }
}

int Sender::matching(const std::string& topic) const {
  int n = 0;
  for (const auto& [prefix, count] : subscriptions_)
    if (topic.compare(0, prefix.size(), prefix) == 0) n += count;
  return n;
}

void Sender::log_error(const std::string& what) {
  if (errors_logged_++ < 10) spdlog::error("publisher: {}", what);
}

std::optional<DropReason> Sender::send(wire::Message& message, bool control) {
  using clock = std::chrono::steady_clock;
  auto& parts = message.parts;
  if (parts.empty()) return DropReason::Error;
  if (matching(parts[0].to_string()) == 0) return DropReason::NoSubscriber;
  const auto deadline = clock::now() + std::chrono::milliseconds(control ? options_.control_timeout_ms : 0);
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const auto flags = i + 1 < parts.size() ? zmq::send_flags::dontwait | zmq::send_flags::sndmore : zmq::send_flags::dontwait;
    const auto part_deadline = i == 0 ? deadline : clock::now() + std::chrono::seconds(1);
    while (true) {
      try {
        if (socket_.send(parts[i], flags)) break;
      } catch (const zmq::error_t& err) {
        log_error(std::string("send failed: ") + err.what() + (i ? " (in the middle of a message)" : ""));
        return DropReason::Error;
      }
      // EAGAIN: the high-water mark. Data messages never wait.
      if (i == 0 && !control) return DropReason::Hwm;
      if (clock::now() >= part_deadline) {
        if (i == 0) return DropReason::Hwm;
        log_error("send of a later part timed out in the middle of a message");
        return DropReason::Error;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
  }
  return std::nullopt;
}

}  // namespace stripeline
