#pragma once
// Test helpers for driving the real `stripeline` binary (and other programs)
// as child processes: a Child with its output collected, a minimal HTTP GET,
// a Prometheus text parser and a stand-in for systemd's NOTIFY_SOCKET.
// Shared by the daemon and camera tests.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <cmath>
#include <map>
#include <mutex>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace stripeline::test {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

// A child process with its stdout+stderr collected on a thread.
class Child {
 public:
  Child(const std::vector<std::string>& args, const std::vector<std::string>& env = {}) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe");
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(fds[1], 1);
      ::dup2(fds[1], 2);
      for (const auto& e : env) ::putenv(const_cast<char*>(e.c_str()));
      std::vector<char*> argv;
      for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(fds[1]);
    fd_ = fds[0];
    reader_ = std::thread([this] {
      char buf[4096];
      while (true) {
        const ssize_t n = ::read(fd_, buf, sizeof buf);
        if (n <= 0) break;
        std::lock_guard lock(mu_);
        out_.append(buf, static_cast<std::size_t>(n));
      }
    });
  }
  ~Child() {
    if (pid_ > 0 && !exited_) {
      ::kill(pid_, SIGKILL);
      int st;
      ::waitpid(pid_, &st, 0);
    }
    if (reader_.joinable()) reader_.join();
    ::close(fd_);
  }
  std::string output() {
    std::lock_guard lock(mu_);
    return out_;
  }
  // Waits until the output matches; returns the first capture group (or the match).
  std::optional<std::string> wait_for(const std::string& pattern, std::chrono::milliseconds timeout, std::size_t from = 0) {
    const std::regex re(pattern);
    const auto deadline = steady::now() + timeout;
    while (steady::now() < deadline) {
      std::smatch m;
      const std::string out = output();
      const std::string tail = from < out.size() ? out.substr(from) : "";
      if (std::regex_search(tail, m, re)) return m.size() > 1 ? m[1].str() : m[0].str();
      if (exited_or_check()) break;
      std::this_thread::sleep_for(20ms);
    }
    return std::nullopt;
  }
  void signal(int sig) { ::kill(pid_, sig); }
  pid_t pid() const { return pid_; }
  // Exit code, or nullopt if still running at the deadline.
  std::optional<int> wait_exit(std::chrono::milliseconds timeout) {
    const auto deadline = steady::now() + timeout;
    while (steady::now() < deadline) {
      if (exited_or_check()) return code_;
      std::this_thread::sleep_for(20ms);
    }
    return std::nullopt;
  }

 private:
  bool exited_or_check() {
    if (exited_) return true;
    int st = 0;
    if (::waitpid(pid_, &st, WNOHANG) == pid_) {
      exited_ = true;
      code_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      if (reader_.joinable()) reader_.join();
    }
    return exited_;
  }
  pid_t pid_ = -1;
  int fd_ = -1;
  std::thread reader_;
  std::mutex mu_;
  std::string out_;
  bool exited_ = false;
  int code_ = -1;
};

// GET http://127.0.0.1:port/path -> (status, body). Plain sockets: no client library needed.
inline std::pair<int, std::string> http_get(int port, const std::string& path) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return {-1, ""};
  }
  const std::string req = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  (void)!::write(fd, req.data(), req.size());
  std::string resp;
  char buf[8192];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) resp.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  const auto sp = resp.find(' ');
  const auto body = resp.find("\r\n\r\n");
  if (sp == std::string::npos || body == std::string::npos) return {-1, resp};
  return {std::stoi(resp.substr(sp + 1, 3)), resp.substr(body + 4)};
}

// Prometheus text -> {"name{labels}": value}; fails the test on a malformed line.
inline std::map<std::string, double> parse_metrics(const std::string& text) {
  std::map<std::string, double> m;
  std::istringstream in(text);
  std::string line;
  const std::regex sample(R"(^([a-zA-Z_:][a-zA-Z0-9_:]*(\{[^}]*\})?) (\S+)$)");
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::smatch s;
    if (!std::regex_match(line, s, sample)) {
      ADD_FAILURE() << "malformed metrics line: " << line;
      continue;
    }
    m[s[1]] = s[3] == "NaN" ? std::nan("") : std::stod(s[3]);
  }
  return m;
}


// A unix datagram socket standing in for systemd's NOTIFY_SOCKET. It reads
// on a thread of its own, as systemd does: an unread queue (10 datagrams by
// default) would block the daemon's sd_notify.
class FakeSystemd {
 public:
  explicit FakeSystemd(const std::filesystem::path& path) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) throw std::runtime_error("bind notify socket");
    reader_ = std::thread([this] {
      char buf[4096];
      while (!stop_) {
        pollfd p{fd_, POLLIN, 0};
        if (::poll(&p, 1, 20) <= 0) continue;
        const ssize_t n = ::recv(fd_, buf, sizeof buf, MSG_DONTWAIT);
        if (n <= 0) continue;
        std::lock_guard lock(mu_);
        messages_.emplace_back(buf, static_cast<std::size_t>(n));
      }
    });
  }
  ~FakeSystemd() {
    stop_ = true;
    reader_.join();
    ::close(fd_);
  }
  // Everything received so far, in order.
  std::vector<std::string> messages() {
    std::lock_guard lock(mu_);
    return messages_;
  }
  int index_of(const std::string& what) {
    const auto m = messages();
    for (std::size_t i = 0; i < m.size(); ++i)
      if (m[i].find(what) != std::string::npos) return static_cast<int>(i);
    return -1;
  }
  std::size_t count(const std::string& what, std::size_t from = 0) {
    const auto m = messages();
    std::size_t n = 0;
    for (std::size_t i = from; i < m.size(); ++i) n += m[i].find(what) != std::string::npos ? 1 : 0;
    return n;
  }

 private:
  int fd_;
  std::atomic<bool> stop_{false};
  std::thread reader_;
  std::mutex mu_;
  std::vector<std::string> messages_;
};

}  // namespace stripeline::test
