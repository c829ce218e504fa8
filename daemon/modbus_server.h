#pragma once
// A Modbus TCP server holding the latest part's results in the registers of
// measure/modbus_registers.h (docs/measure.md, "Modbus TCP"), as PLCs read
// them: function codes 3 (holding) and 4 (input registers) give the same
// words; writes are refused (exception "illegal data address"). libmodbus
// (Debian libmodbus-dev) on its own thread: select() over the listening
// socket, the clients (at most 8) and a wake-up pipe; a request is answered
// under the lock that publish() takes, so a read sees one part, never a mix.
// Unit identifiers (the MBAP header's byte 6): a server made without units
// answers every unit with its one register map (a daemon of one head); one
// made with units holds a map per unit and answers a request for another
// with exception 0x0B "gateway target device failed to respond", as a
// gateway does for a device it does not have (a daemon of several heads:
// docs/measure.md "Modbus TCP").
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace stripeline {

class ModbusServer {
 public:
  // Listens on address:port (port 0: any free one, see port()). Throws
  // InputError naming the address when it cannot listen.
  ModbusServer(const std::string& address, int port, std::vector<int> units = {});
  ~ModbusServer();
  ModbusServer(const ModbusServer&) = delete;
  ModbusServer& operator=(const ModbusServer&) = delete;

  int port() const { return port_; }
  // Replaces the registers (kModbusRegisters words) of `unit` (without
  // units: the one map). Any thread. InvalidArgument for a unit not served.
  void publish(const std::vector<std::uint16_t>& registers, int unit = 0);
  std::uint64_t requests() const { return requests_.load(); }

 private:
  void serve();

  void* ctx_ = nullptr;      // modbus_t
  void* map_of(int unit) const;  // nullptr: not served
  void* mapping_ = nullptr;  // modbus_mapping_t: without units, the one map
  std::vector<std::pair<int, void*>> units_;  // with units: unit -> modbus_mapping_t
  int listen_fd_ = -1, wake_[2] = {-1, -1}, port_ = 0;
  std::mutex mutex_;
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> requests_{0};
  std::thread thread_;
};

}  // namespace stripeline
