#include "acquisition/gvcp_probe.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstring>

namespace stripeline {

namespace {

class Socket {
 public:
  Socket() : fd_(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) {}
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  ~Socket() {
    if (fd_ >= 0) ::close(fd_);
  }
  int fd() const { return fd_; }

 private:
  int fd_;
};

void put16(std::uint8_t* p, std::uint16_t v) {
  p[0] = static_cast<std::uint8_t>(v >> 8);
  p[1] = static_cast<std::uint8_t>(v);
}
std::uint16_t get16(const std::uint8_t* p) { return static_cast<std::uint16_t>(p[0] << 8 | p[1]); }
std::uint32_t get32(const std::uint8_t* p) {
  return static_cast<std::uint32_t>(p[0]) << 24 | static_cast<std::uint32_t>(p[1]) << 16 | static_cast<std::uint32_t>(p[2]) << 8 | p[3];
}

std::atomic<std::uint16_t> next_request_id{0x7000};

}  // namespace

std::optional<std::uint32_t> gvcp_read_register(const std::string& ip, std::uint32_t address, std::chrono::milliseconds wait, int tries,
                                                std::uint16_t port) {
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(port);
  if (::inet_pton(AF_INET, ip.c_str(), &to.sin_addr) != 1) return std::nullopt;
  Socket s;
  if (s.fd() < 0) return std::nullopt;

  for (int attempt = 0; attempt < tries; ++attempt) {
    std::uint16_t id = next_request_id.fetch_add(1);
    if (id == 0) id = next_request_id.fetch_add(1);  // 0 is not a valid request id
    // Header: key 0x42, flags 0x01 (acknowledge), command READREG_CMD, length 4, request id; then the address.
    std::array<std::uint8_t, 12> cmd{0x42, 0x01};
    put16(&cmd[2], 0x0080);
    put16(&cmd[4], 4);
    put16(&cmd[6], id);
    const std::uint32_t be = htonl(address);
    std::memcpy(&cmd[8], &be, 4);
    if (::sendto(s.fd(), cmd.data(), cmd.size(), 0, reinterpret_cast<const sockaddr*>(&to), sizeof to) != static_cast<ssize_t>(cmd.size()))
      continue;
    const auto deadline = std::chrono::steady_clock::now() + wait;
    while (true) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
      if (left <= 0) break;
      pollfd p{s.fd(), POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left)) <= 0) break;
      std::array<std::uint8_t, 64> ack{};
      const ssize_t n = ::recv(s.fd(), ack.data(), ack.size(), 0);
      // Ack: status, READREG_ACK, length, our id, value. Anything else is stale.
      if (n >= 12 && get16(&ack[2]) == 0x0081 && get16(&ack[6]) == id) {
        if (get16(&ack[0]) != 0) return std::nullopt;
        return get32(&ack[8]);
      }
    }
  }
  return std::nullopt;
}

}  // namespace stripeline
