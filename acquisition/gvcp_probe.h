#pragma once
// A GigE Vision liveness probe with a timeout we choose. Aravis retries a
// control request for ~2.5 s before it gives up; to declare a camera lost
// within its heartbeat timeout the camera source asks one register itself
// (reads need no control privilege) with short, bounded waits.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace stripeline {

// GigE Vision bootstrap register: control channel privilege (CCP).
inline constexpr std::uint32_t kGvcpControlChannelPrivilege = 0x0A00;

// Sends a GVCP READREG for `address` to ip:3956 up to `tries` times, waiting
// `wait` for each answer. Returns the value, or nullopt if the camera did not
// answer (or answered with an error status).
std::optional<std::uint32_t> gvcp_read_register(const std::string& ip, std::uint32_t address, std::chrono::milliseconds wait,
                                                int tries, std::uint16_t port = 3956);

}  // namespace stripeline
