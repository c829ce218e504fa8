#include "daemon/modbus_server.h"

#include <modbus/modbus.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <vector>

#include <spdlog/spdlog.h>

#include "core/errors.h"
#include "measure/modbus_registers.h"

namespace stripeline {

namespace {

constexpr int kMaxClients = 8;

modbus_t* as_ctx(void* p) { return static_cast<modbus_t*>(p); }
modbus_mapping_t* as_map(void* p) { return static_cast<modbus_mapping_t*>(p); }

}  // namespace

ModbusServer::ModbusServer(const std::string& address, int port, std::vector<int> units) {
  const std::string where = address + ":" + std::to_string(port);
  ctx_ = modbus_new_tcp(address.c_str(), port);
  if (!ctx_) throw InputError("modbus " + where + ": " + modbus_strerror(errno));
  const auto free_maps = [this] {
    if (mapping_) modbus_mapping_free(as_map(mapping_));
    for (auto& [unit, map] : units_) modbus_mapping_free(as_map(map));
  };
  const auto new_map = [&] {
    void* m = modbus_mapping_new(0, 0, measure::kModbusRegisters, measure::kModbusRegisters);
    if (!m) {
      free_maps();
      modbus_free(as_ctx(ctx_));
      throw std::runtime_error("modbus: cannot allocate the register map");
    }
    return m;
  };
  if (units.empty()) mapping_ = new_map();
  for (int u : units) units_.emplace_back(u, new_map());
  listen_fd_ = modbus_tcp_listen(as_ctx(ctx_), kMaxClients);
  if (listen_fd_ < 0 || ::pipe(wake_) != 0) {
    const std::string why = modbus_strerror(errno);
    if (listen_fd_ >= 0) ::close(listen_fd_);
    free_maps();
    modbus_free(as_ctx(ctx_));
    throw InputError("modbus: cannot listen on " + where + ": " + why + " (expected a free port on a local address)");
  }
  sockaddr_in sa{};
  socklen_t len = sizeof sa;
  if (::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&sa), &len) == 0) port_ = ntohs(sa.sin_port);
  thread_ = std::thread([this] { serve(); });
}

ModbusServer::~ModbusServer() {
  stop_ = true;
  const char b = 1;
  if (::write(wake_[1], &b, 1) < 0) spdlog::warn("modbus: cannot wake the server thread: {}", std::strerror(errno));
  if (thread_.joinable()) thread_.join();
  ::close(listen_fd_);
  ::close(wake_[0]);
  ::close(wake_[1]);
  if (mapping_) modbus_mapping_free(as_map(mapping_));
  for (auto& [unit, map] : units_) modbus_mapping_free(as_map(map));
  modbus_free(as_ctx(ctx_));
}

void* ModbusServer::map_of(int unit) const {
  if (mapping_) return mapping_;
  for (const auto& [u, map] : units_)
    if (u == unit) return map;
  return nullptr;
}

void ModbusServer::publish(const std::vector<std::uint16_t>& regs, int unit) {
  std::lock_guard<std::mutex> lock(mutex_);
  modbus_mapping_t* m = as_map(map_of(unit));
  if (!m) throw std::invalid_argument("modbus: unit " + std::to_string(unit) + " is not served");
  const std::size_t n = std::min<std::size_t>(regs.size(), measure::kModbusRegisters);
  std::copy(regs.begin(), regs.begin() + static_cast<long>(n), m->tab_registers);
  std::copy(regs.begin(), regs.begin() + static_cast<long>(n), m->tab_input_registers);
}

void ModbusServer::serve() {
  std::vector<int> clients;
  std::vector<std::uint8_t> query(MODBUS_TCP_MAX_ADU_LENGTH);
  while (!stop_) {
    fd_set set;
    FD_ZERO(&set);
    FD_SET(listen_fd_, &set);
    FD_SET(wake_[0], &set);
    int top = std::max(listen_fd_, wake_[0]);
    for (int c : clients) FD_SET(c, &set), top = std::max(top, c);
    if (::select(top + 1, &set, nullptr, nullptr, nullptr) < 0) {
      if (errno == EINTR) continue;
      spdlog::error("modbus: select failed: {}", std::strerror(errno));
      break;
    }
    if (stop_) break;
    if (FD_ISSET(listen_fd_, &set)) {
      const int c = ::accept(listen_fd_, nullptr, nullptr);
      if (c >= 0 && static_cast<int>(clients.size()) < kMaxClients) clients.push_back(c);
      else if (c >= 0) ::close(c);  // full: the PLC retries
    }
    for (auto it = clients.begin(); it != clients.end();) {
      if (!FD_ISSET(*it, &set)) {
        ++it;
        continue;
      }
      modbus_set_socket(as_ctx(ctx_), *it);
      const int rc = modbus_receive(as_ctx(ctx_), query.data());
      if (rc > 0) {
        const int header = modbus_get_header_length(as_ctx(ctx_));
        const int function = query[header];
        std::lock_guard<std::mutex> lock(mutex_);
        modbus_mapping_t* map = as_map(map_of(query[header - 1]));  // the unit identifier ends the MBAP header
        if (!map)
          modbus_reply_exception(as_ctx(ctx_), query.data(), MODBUS_EXCEPTION_GATEWAY_TARGET);
        else if (function == MODBUS_FC_READ_HOLDING_REGISTERS || function == MODBUS_FC_READ_INPUT_REGISTERS)
          modbus_reply(as_ctx(ctx_), query.data(), rc, map);
        else
          modbus_reply_exception(as_ctx(ctx_), query.data(), MODBUS_EXCEPTION_ILLEGAL_DATA_ADDRESS);
        ++requests_;
        ++it;
      } else if (rc == -1) {  // closed or broken: drop the client
        ::close(*it);
        it = clients.erase(it);
      } else {
        ++it;  // not for us (another unit id): ignored
      }
    }
  }
  for (int c : clients) ::close(c);
}

}  // namespace stripeline
