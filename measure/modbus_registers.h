#pragma once
// The latest part's results as 16-bit Modbus registers, as a PLC reads them
// (docs/measure.md, "Modbus TCP"): the register map, built here and served
// by daemon/modbus_server.h. Holding registers from address 0:
//
//   0-1    part id (uint32)             2    part decision: 0 none, 1 pass, 2 fail
//   3      tools in the job (n <= 32)   4-5  parts measured (uint32)
//   6-7    parts passed (uint32)        8-9  parts failed (uint32)
//   10     units: 1 mm, 2 px            11   update counter (uint16, wraps): changes with every part
//   100 + 16 k .. (tool k, k < 32):
//     +0   decision (0 none, 1 pass, 2 fail)   +1 values (<= 3)
//     +2.. value i as float32 at +2 + 2 i (i < 3)
//     +8.. value i as int32 in thousandths of the unit (um with mm) at +8 + 2 i;
//          0x80000000 where the value is NaN or beyond int32
//     +14  value decisions, 2 bits each (value i at bits 2i..2i+1)
// 32-bit values: the high word first (big-endian words, Modbus' usual order).
#include <cstdint>
#include <vector>

#include "measure/tools.h"

namespace stripeline::measure {

inline constexpr int kModbusRegisters = 100 + 16 * 32;
inline constexpr int kModbusToolBase = 100, kModbusToolStride = 16, kModbusMaxTools = 32;

struct PartCounters {
  std::uint64_t parts = 0, passed = 0, failed = 0;
};

// Fills `regs` (resized to kModbusRegisters) with r and the counters.
void modbus_registers(const PartResult& r, const PartCounters& counters, std::uint16_t update, std::vector<std::uint16_t>& regs);

// Readers' side (tests, tools): the words of a uint32 / float32 / int32 at `at`.
std::uint32_t modbus_u32(const std::uint16_t* regs, int at);
float modbus_f32(const std::uint16_t* regs, int at);
std::int32_t modbus_i32(const std::uint16_t* regs, int at);

}  // namespace stripeline::measure
