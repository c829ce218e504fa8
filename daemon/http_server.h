#pragma once
// The daemon's HTTP endpoint: GET (and HEAD) of a few fixed paths
// (/healthz, /livez, /readyz, /metrics), answered from one thread that
// multiplexes every connection with poll(2) on non-blocking sockets. No
// thread is dedicated to a connection, so idle keep-alive connections and
// slow ("slowloris") clients cannot hold the workers a probe needs: a probe
// is answered as soon as its request has arrived (docs/daemon.md, "Limits").
//
// Why not cpp-httplib (Debian 12: 0.11.4), used before: it serves a
// connection per worker thread until the connection closes, and its timeouts
// are per read, so a client trickling a header byte at a time holds a worker
// for as long as it likes; 200 idle connections or 50 slow clients left no
// worker for /healthz (issue 14). Debian 12's event-driven alternatives
// (libmicrohttpd, libevent, Boost.Beast) would be new dependencies for two
// GET endpoints; the request grammar needed here is small and parsed
// strictly (anything else: 400, 405 or 431, and the connection closed).
//
// Limits (Limits below): at most max_connections open at once (a new
// connection beyond it closes the one idle the longest, so the newest, a
// probe, is always taken); a request head must arrive whole within
// request_timeout of its first byte, at most max_request_bytes; an idle
// keep-alive connection is closed after idle_timeout; a response not taken by
// the client within write_timeout is abandoned. Handlers run on the server's
// thread: they must be quick and never wait on the pipeline.
//
// Thread-safety: the constructor starts the thread, the destructor stops it;
// port() may be called from any thread.
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

namespace stripeline::daemon {

struct HttpResponse {
  int status = 200;
  std::string body;
  std::string content_type = "text/plain; charset=utf-8";
};

// Sent with every response (the viewer's pages included): the page may load
// only what this server serves, is never framed, and leaks no referrer.
inline constexpr const char* kSecurityHeaders =
    "Content-Security-Policy: default-src 'self'\r\nX-Content-Type-Options: nosniff\r\nX-Frame-Options: DENY\r\n"
    "Referrer-Policy: no-referrer\r\n";

struct HttpLimits {
  int max_connections = 256;                                  // open at once, idle ones evicted beyond
  std::chrono::milliseconds request_timeout{2000};            // first byte -> end of the request head
  std::chrono::milliseconds idle_timeout{5000};               // connection open (or kept alive) with no request byte
  std::chrono::milliseconds write_timeout{5000};              // a response not read by then is dropped
  std::size_t max_request_bytes = 8192;                       // request line + headers
};

class HttpServer {
 public:
  using Handler = std::function<HttpResponse()>;
  // A long-lived response (the viewer's /events): given the connection's
  // socket after a GET, it takes it (nullopt: the server forgets the socket
  // without closing it) or answers a refusal the server sends.
  using StreamHandler = std::function<std::optional<HttpResponse>(int fd)>;
  // Binds `address:port` (port 0: ephemeral, see port()) and starts serving
  // `routes` and `streams` (exact paths; a query string is ignored). Throws
  // InputError when the address/port cannot be bound.
  HttpServer(const std::string& address, int port, std::map<std::string, Handler> routes, HttpLimits limits = {},
             std::map<std::string, StreamHandler> streams = {});
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;
  int port() const;

  // Counters for the daemon's metrics (read from any thread).
  struct Stats {
    std::uint64_t requests = 0, evicted = 0, timed_out = 0, bad_requests = 0;
    int open = 0;
  };
  Stats stats() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace stripeline::daemon
