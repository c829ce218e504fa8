#include "streaming/proxy.h"

#include <array>
#include <cstring>

#include <spdlog/spdlog.h>

#include "core/errors.h"

namespace stripeline {

namespace {

std::string control_endpoint(const void* self) {
  return "inproc://stripeline-proxy-" + std::to_string(reinterpret_cast<std::uintptr_t>(self));
}

}  // namespace

StreamProxy::StreamProxy(const ProxyConfig& c) : ctx_(make_zmq_context(c.scheduling, "proxy")) {
  if (c.frontend.empty()) throw InputError("proxy: no frontend endpoint (the publisher to connect to)");
  for (zmq::socket_t* s : {&frontend_, &backend_}) {
    s->set(zmq::sockopt::sndhwm, c.hwm);
    s->set(zmq::sockopt::rcvhwm, c.hwm);
    s->set(zmq::sockopt::linger, 0);
  }
  if (!c.server_key.empty() || !c.client_key.empty()) make_curve_client(frontend_, c.server_key, c.client_key);
  if (c.backend_curve.enabled) {
    c.backend_curve.validate();
    zap_ = make_curve_server(ctx_, backend_, c.backend_curve);
  }
  try {
    backend_.bind(c.backend);
  } catch (const zmq::error_t& e) {
    throw InputError(c.backend + ": cannot bind the proxy's backend (" + e.what() + ")");
  }
  backend_endpoint_ = backend_.get(zmq::sockopt::last_endpoint);
  try {
    frontend_.connect(c.frontend);
  } catch (const zmq::error_t& e) {
    throw InputError(c.frontend + ": cannot connect the proxy's frontend (" + e.what() + ")");
  }
  const std::string control = control_endpoint(this);
  steer_.bind(control);
  control_.connect(control);
  // The sockets move to the proxy's thread (starting it is the memory barrier ZeroMQ asks for).
  thread_ = std::thread([this, scheduling = c.scheduling] {
    try {  // checked when the context was made: a refusal now is the kernel's change of mind
      apply_to_current_thread(scheduling, "proxy");
    } catch (const std::exception& e) {
      spdlog::error("{} (the proxy runs with the default scheduling)", e.what());
    }
    try {
      zmq::proxy_steerable(frontend_, backend_, zmq::socket_ref(), steer_);
    } catch (const zmq::error_t& e) {
      if (e.num() != ETERM) spdlog::error("proxy: {}", e.what());
    }
  });
  spdlog::info("proxy: {} -> {}{}", c.frontend, backend_endpoint_, c.scheduling.is_default() ? "" : " (scheduling: " + c.scheduling.describe() + ")");
}

StreamProxy::~StreamProxy() { stop(); }

void StreamProxy::stop() {
  if (!thread_.joinable()) return;
  control_.send(zmq::str_buffer("TERMINATE"), zmq::send_flags::none);
  thread_.join();
}

ProxyCounters StreamProxy::statistics() {
  ProxyCounters c;
  if (!thread_.joinable()) return c;
  control_.send(zmq::str_buffer("STATISTICS"), zmq::send_flags::none);
  std::array<std::uint64_t, 8> v{};
  for (std::uint64_t& x : v) {
    zmq::message_t m;
    if (!control_.recv(m) || m.size() != sizeof(std::uint64_t)) throw RuntimeFailure("proxy: malformed STATISTICS reply");
    std::memcpy(&x, m.data(), sizeof x);
  }
  c.frontend_messages_in = v[0], c.frontend_bytes_in = v[1], c.frontend_messages_out = v[2], c.frontend_bytes_out = v[3];
  c.backend_messages_in = v[4], c.backend_bytes_in = v[5], c.backend_messages_out = v[6], c.backend_bytes_out = v[7];
  return c;
}

std::uint64_t StreamProxy::denied() const { return zap_ ? zap_->denied() : 0; }

}  // namespace stripeline
