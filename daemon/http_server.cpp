// One thread, poll(2), non-blocking sockets: see http_server.h for why and
// for the limits. A connection's life:
//   accepted -> reading (idle_timeout until the first byte, then
//   request_timeout for the whole head) -> writing (write_timeout) ->
//   reading again (keep-alive) or closed.
#include "daemon/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <list>
#include <thread>
#include <vector>

#include "core/errors.h"

namespace stripeline::daemon {

namespace {

using clock = std::chrono::steady_clock;

const char* reason_phrase(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 431: return "Request Header Fields Too Large";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Unknown";
  }
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

struct Connection {
  int fd = -1;
  std::string in;   // bytes received, not yet a complete request
  std::string out;  // response bytes not yet written
  std::size_t written = 0;
  bool close_after_write = false;
  bool got_first_byte = false;
  bool draining = false;  // response sent and write side shut: reading what the client still sends until it closes
  bool handed_over = false;  // taken by a stream route: forgotten, not closed
  clock::time_point deadline;
  clock::time_point last_activity;
};

}  // namespace

class HttpServer::Impl {
 public:
  Impl(std::map<std::string, Handler> r, HttpLimits l, std::map<std::string, StreamHandler> s)
      : routes(std::move(r)), streams(std::move(s)), limits(l) {}
  ~Impl() {
    for (auto& c : conns) ::close(c.fd);
    if (listen_fd >= 0) ::close(listen_fd);
    if (wake_fd >= 0) ::close(wake_fd);
  }

  void bind(const std::string& address, int port_wanted) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    addrinfo* res = nullptr;
    const std::string service = std::to_string(port_wanted);
    const auto fail = [&](const std::string& why) {
      return InputError("http: cannot listen on " + address + ":" + std::to_string(port_wanted) + " (" + why +
                        "; see http.address/http.port)");
    };
    if (::getaddrinfo(address.c_str(), service.c_str(), &hints, &res) != 0 || !res) throw fail("not an address");
    std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> guard(res, &::freeaddrinfo);
    listen_fd = ::socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (listen_fd < 0) throw fail(std::strerror(errno));
    const int one = 1;
    ::setsockopt(listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(listen_fd, res->ai_addr, res->ai_addrlen) != 0) throw fail(std::string("address in use or not local: ") + std::strerror(errno));
    if (::listen(listen_fd, SOMAXCONN) != 0) throw fail(std::strerror(errno));
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    ::getsockname(listen_fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&a)->sin6_port : reinterpret_cast<sockaddr_in*>(&a)->sin_port);
    wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wake_fd < 0) throw fail(std::string("eventfd: ") + std::strerror(errno));
  }

  void stop() {
    stopping = true;
    const std::uint64_t one = 1;
    (void)!::write(wake_fd, &one, sizeof one);
  }

  void loop() {
    std::vector<pollfd> fds;
    std::vector<std::list<Connection>::iterator> index;
    while (!stopping.load()) {
      fds.clear();
      index.clear();
      fds.push_back({wake_fd, POLLIN, 0});
      fds.push_back({listen_fd, POLLIN, 0});
      auto next = clock::now() + std::chrono::milliseconds(500);
      for (auto it = conns.begin(); it != conns.end(); ++it) {
        fds.push_back({it->fd, static_cast<short>(it->out.empty() ? POLLIN : POLLOUT), 0});
        index.push_back(it);
        next = std::min(next, it->deadline);
      }
      const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next - clock::now()).count();
      const int n = ::poll(fds.data(), fds.size(), static_cast<int>(std::clamp<long long>(wait + 1, 0, 500)));
      if (n < 0 && errno != EINTR) {
        spdlog::error("http: poll failed: {}", std::strerror(errno));
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        continue;
      }
      if (stopping.load()) break;
      // Existing connections first: a probe whose bytes are here is answered
      // before new connections can evict anything.
      for (std::size_t i = 2; i < fds.size(); ++i) {
        if (!fds[i].revents) continue;
        auto it = index[i - 2];
        if (!service(*it, fds[i].revents)) close_conn(it);
      }
      if (fds[1].revents & POLLIN) accept_all();
      const auto now = clock::now();
      for (auto it = conns.begin(); it != conns.end();) {
        auto cur = it++;
        if (now >= cur->deadline) {
          if (!cur->draining) ++timed_out;
          close_conn(cur);
        }
      }
      open.store(static_cast<int>(conns.size()));
    }
  }

  void accept_all() {
    while (true) {
      const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno == EMFILE || errno == ENFILE) {
          // Out of descriptors: make room by closing the longest-idle connection, try once more.
          if (!evict_one()) {
            if (emfile_logged++ < 5) spdlog::warn("http: out of file descriptors; a connection waits in the backlog");
            return;
          }
          continue;
        }
        return;  // EAGAIN: all accepted
      }
      if (static_cast<int>(conns.size()) >= limits.max_connections) evict_one();
      const int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      Connection c;
      c.fd = fd;
      c.last_activity = clock::now();
      c.deadline = c.last_activity + limits.idle_timeout;
      conns.push_back(std::move(c));
    }
  }

  // Closes the connection that has been quiet the longest (the oldest
  // activity); a connection being answered is evicted only if nothing else is open.
  bool evict_one() {
    if (conns.empty()) return false;
    auto victim = conns.end();
    for (auto it = conns.begin(); it != conns.end(); ++it)
      if (it->out.empty() && (victim == conns.end() || it->last_activity < victim->last_activity)) victim = it;
    if (victim == conns.end()) victim = conns.begin();
    ++evicted;
    if (evicted_logged++ < 5)
      spdlog::warn("http: {} connections open (http limit): closing the longest-idle one (counted in stripeline_http_connections_evicted_total)",
                   conns.size());
    close_conn(victim);
    return true;
  }

  void close_conn(std::list<Connection>::iterator it) {
    if (!it->handed_over) ::close(it->fd);
    conns.erase(it);
  }

  // false: close the connection.
  bool service(Connection& c, short revents) {
    if (c.draining) {  // discard until the client closes (or the short deadline)
      char sink[4096];
      while (true) {
        const ssize_t n = ::recv(c.fd, sink, sizeof sink, 0);
        if (n > 0) continue;
        if (n < 0 && errno == EINTR) continue;
        return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
      }
    }
    if (!c.out.empty()) {
      if (revents & (POLLERR | POLLHUP | POLLNVAL)) return false;
      return write_some(c);
    }
    if (revents & POLLNVAL) return false;
    char buf[4096];
    while (true) {
      const ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
      if (n == 0) return false;  // the client closed
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) break;
        return false;
      }
      const auto now = clock::now();
      c.last_activity = now;
      if (!c.got_first_byte) {
        c.got_first_byte = true;
        c.deadline = now + limits.request_timeout;  // never extended by more bytes: a trickle cannot keep it
      }
      c.in.append(buf, static_cast<std::size_t>(n));
      if (c.in.size() > limits.max_request_bytes + 4) break;
      if (static_cast<std::size_t>(n) < sizeof buf) break;
    }
    return handle_requests(c);
  }

  // Answers the complete request at the front of c.in, if there is one.
  bool handle_requests(Connection& c) {
    const auto end = c.in.find("\r\n\r\n");
    if (end == std::string::npos) {
      if (c.in.size() > limits.max_request_bytes) return respond(c, {431, "request head too large\n"}, true, false);
      return true;  // wait for the rest
    }
    if (end + 4 > limits.max_request_bytes + 4) return respond(c, {431, "request head too large\n"}, true, false);
    const std::string head = c.in.substr(0, end + 2);
    c.in.erase(0, end + 4);
    const auto line_end = head.find("\r\n");
    const std::string line = head.substr(0, line_end);
    const auto sp1 = line.find(' ');
    const auto sp2 = sp1 == std::string::npos ? std::string::npos : line.find(' ', sp1 + 1);
    if (sp2 == std::string::npos || line.find(' ', sp2 + 1) != std::string::npos) return respond(c, {400, "bad request line\n"}, true, false);
    const std::string method = line.substr(0, sp1), target = line.substr(sp1 + 1, sp2 - sp1 - 1), version = line.substr(sp2 + 1);
    if (version != "HTTP/1.1" && version != "HTTP/1.0") {
      if (version.rfind("HTTP/", 0) != 0) return respond(c, {400, "bad request line\n"}, true, false);
      return respond(c, {505, "HTTP/1.0 or HTTP/1.1 expected\n"}, true, false);
    }
    const std::string headers = lower(head.substr(line_end + 2));
    // A request body (Content-Length / Transfer-Encoding) is not expected on these endpoints: refuse and close.
    const bool has_body = headers.find("\ntransfer-encoding:") != std::string::npos || headers.rfind("transfer-encoding:", 0) == 0 ||
                          ((headers.find("\ncontent-length:") != std::string::npos || headers.rfind("content-length:", 0) == 0) &&
                           headers.find("content-length: 0\r") == std::string::npos && headers.find("content-length:0\r") == std::string::npos);
    bool keep_alive = version == "HTTP/1.1";
    {
      const auto pos = headers.rfind("connection:", 0) == 0 ? 0 : headers.find("\nconnection:");
      if (pos != std::string::npos) {
        const auto eol = headers.find('\r', pos);
        const std::string value = headers.substr(pos, eol - pos);
        if (value.find("close") != std::string::npos) keep_alive = false;
        if (value.find("keep-alive") != std::string::npos && version == "HTTP/1.0") keep_alive = true;
      }
    }
    ++requests;
    if (has_body) return respond(c, {400, "no request body expected\n"}, true, false);
    if (method != "GET" && method != "HEAD") {
      HttpResponse r{405, "only GET and HEAD\n"};
      return respond(c, r, true, false, "Allow: GET, HEAD\r\n");
    }
    const std::string path = target.substr(0, target.find('?'));
    if (const auto stream = streams.find(path); stream != streams.end() && method == "GET") {
      std::optional<HttpResponse> refusal;
      try {
        refusal = stream->second(c.fd);
      } catch (const std::exception& e) {
        refusal = HttpResponse{503, std::string("error: ") + e.what() + "\n"};
      }
      if (refusal) return respond(c, *refusal, true, false);
      c.handed_over = true;  // the stream's owner writes, reads and closes it from now on
      return false;
    }
    const auto route = routes.find(path);
    HttpResponse r;
    if (route == routes.end()) {
      r = {404, "not found (endpoints: /, /events, /healthz, /livez, /readyz, /metrics)\n"};
    } else {
      try {
        r = route->second();
      } catch (const std::exception& e) {
        r = {503, std::string("error: ") + e.what() + "\n"};
      }
    }
    return respond(c, r, !keep_alive, method == "HEAD");
  }

  bool respond(Connection& c, const HttpResponse& r, bool close, bool head_only, const char* extra = "") {
    if (r.status == 400 || r.status == 431 || r.status == 505) ++bad_requests;
    c.out = fmt::format("HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n{}{}Connection: {}\r\n\r\n", r.status,
                        reason_phrase(r.status), r.content_type, r.body.size(), extra, kSecurityHeaders, close ? "close" : "keep-alive");
    if (!head_only) c.out += r.body;
    c.written = 0;
    c.close_after_write = close;
    c.deadline = clock::now() + limits.write_timeout;
    return write_some(c);
  }

  bool write_some(Connection& c) {
    while (c.written < c.out.size()) {
      const ssize_t n = ::send(c.fd, c.out.data() + c.written, c.out.size() - c.written, MSG_NOSIGNAL);
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return true;  // POLLOUT next time
        return false;
      }
      c.written += static_cast<std::size_t>(n);
    }
    c.out.clear();
    c.written = 0;
    if (c.close_after_write) {
      // Lingering close: closing with unread bytes (a body, the rest of a
      // slow request) would send a reset that can destroy the response
      // before the client reads it.
      ::shutdown(c.fd, SHUT_WR);
      c.draining = true;
      c.in.clear();
      c.deadline = clock::now() + std::chrono::milliseconds(1000);
      return true;
    }
    // Kept alive: a pipelined request may already be here.
    c.last_activity = clock::now();
    c.got_first_byte = !c.in.empty();
    c.deadline = c.last_activity + (c.got_first_byte ? limits.request_timeout : limits.idle_timeout);
    if (c.got_first_byte) return handle_requests(c);
    return true;
  }

  std::map<std::string, Handler> routes;
  std::map<std::string, StreamHandler> streams;
  HttpLimits limits;
  int listen_fd = -1, wake_fd = -1;
  int port = 0;
  std::list<Connection> conns;  // the server thread only
  std::atomic<bool> stopping{false};
  std::atomic<std::uint64_t> requests{0}, evicted{0}, timed_out{0}, bad_requests{0};
  std::atomic<int> open{0};
  int evicted_logged = 0, emfile_logged = 0;
  std::thread thread;
};

HttpServer::HttpServer(const std::string& address, int port, std::map<std::string, Handler> routes, HttpLimits limits,
                       std::map<std::string, StreamHandler> streams)
    : impl_(std::make_unique<Impl>(std::move(routes), limits, std::move(streams))) {
  impl_->bind(address, port);
  impl_->thread = std::thread([this] { impl_->loop(); });
  std::string paths;
  for (const auto& [p, h] : impl_->routes) paths += (paths.empty() ? "" : ", ") + p;
  for (const auto& [p, h] : impl_->streams) paths += (paths.empty() ? "" : ", ") + p;
  spdlog::info("http: listening on http://{}:{} ({})", address, impl_->port, paths);
}

HttpServer::~HttpServer() {
  impl_->stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

int HttpServer::port() const { return impl_->port; }

HttpServer::Stats HttpServer::stats() const {
  return {impl_->requests.load(), impl_->evicted.load(), impl_->timed_out.load(), impl_->bad_requests.load(), impl_->open.load()};
}

}  // namespace stripeline::daemon
