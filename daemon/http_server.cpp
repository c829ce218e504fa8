#include "daemon/http_server.h"

#include <httplib.h>
#include <spdlog/spdlog.h>

#include <thread>

#include "core/errors.h"

namespace stripeline::daemon {

class HttpServer::Impl {
 public:
  httplib::Server server;
  std::thread thread;
  int port = 0;
};

HttpServer::HttpServer(const std::string& address, int port, Metrics metrics, Health health) : impl_(std::make_unique<Impl>()) {
  auto& s = impl_->server;
  s.new_task_queue = [] { return new httplib::ThreadPool(2); };
  s.set_read_timeout(5, 0);
  s.set_write_timeout(5, 0);
  s.Get("/metrics", [metrics](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics(), "text/plain; version=0.0.4; charset=utf-8");
  });
  s.Get("/healthz", [health](const httplib::Request&, httplib::Response& res) {
    const auto [ok, text] = health();
    res.status = ok ? 200 : 503;
    res.set_content(text, "text/plain; charset=utf-8");
  });
  if (port == 0)
    impl_->port = s.bind_to_any_port(address);
  else
    impl_->port = s.bind_to_port(address, port) ? port : -1;
  if (impl_->port <= 0)
    throw InputError("http: cannot listen on " + address + ":" + std::to_string(port) + " (address in use or not local; see http.address/http.port)");
  impl_->thread = std::thread([this] { impl_->server.listen_after_bind(); });
  spdlog::info("http: listening on http://{}:{} (/healthz, /metrics)", address, impl_->port);
}

HttpServer::~HttpServer() {
  impl_->server.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

int HttpServer::port() const { return impl_->port; }

}  // namespace stripeline::daemon
