#include "measure/modbus_registers.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace stripeline::measure {

namespace {

std::uint16_t code(Decision d) { return d == Decision::Pass ? 1 : d == Decision::Fail ? 2 : 0; }

void put_u32(std::vector<std::uint16_t>& r, int at, std::uint32_t v) {
  r[at] = static_cast<std::uint16_t>(v >> 16);
  r[at + 1] = static_cast<std::uint16_t>(v & 0xffffu);
}

}  // namespace

void modbus_registers(const PartResult& r, const PartCounters& c, std::uint16_t update, std::vector<std::uint16_t>& regs) {
  regs.assign(kModbusRegisters, 0);
  put_u32(regs, 0, static_cast<std::uint32_t>(r.part));
  regs[2] = code(r.decision);
  const int n = static_cast<int>(std::min<std::size_t>(r.tools.size(), kModbusMaxTools));
  regs[3] = static_cast<std::uint16_t>(n);
  put_u32(regs, 4, static_cast<std::uint32_t>(c.parts));
  put_u32(regs, 6, static_cast<std::uint32_t>(c.passed));
  put_u32(regs, 8, static_cast<std::uint32_t>(c.failed));
  regs[10] = r.units == "mm" ? 1 : 2;
  regs[11] = update;
  for (int k = 0; k < n; ++k) {
    const ToolResult& t = r.tools[static_cast<std::size_t>(k)];
    const int base = kModbusToolBase + kModbusToolStride * k;
    regs[base] = code(t.decision);
    const int values = static_cast<int>(std::min<std::size_t>(t.values.size(), 3));
    regs[base + 1] = static_cast<std::uint16_t>(values);
    std::uint16_t bits = 0;
    for (int i = 0; i < values; ++i) {
      const double v = t.values[static_cast<std::size_t>(i)].second;
      const float f = static_cast<float>(v);
      std::uint32_t w;
      std::memcpy(&w, &f, 4);
      put_u32(regs, base + 2 + 2 * i, w);
      const double milli = std::round(v * 1000.0);
      const bool fits = std::isfinite(milli) && milli > -2147483648.0 && milli < 2147483648.0;
      put_u32(regs, base + 8 + 2 * i, fits ? static_cast<std::uint32_t>(static_cast<std::int32_t>(milli)) : 0x80000000u);
      bits = static_cast<std::uint16_t>(bits | (code(t.value_decisions[static_cast<std::size_t>(i)]) << (2 * i)));
    }
    regs[base + 14] = bits;
  }
}

std::uint32_t modbus_u32(const std::uint16_t* r, int at) { return (static_cast<std::uint32_t>(r[at]) << 16) | r[at + 1]; }

float modbus_f32(const std::uint16_t* r, int at) {
  const std::uint32_t w = modbus_u32(r, at);
  float f;
  std::memcpy(&f, &w, 4);
  return f;
}

std::int32_t modbus_i32(const std::uint16_t* r, int at) { return static_cast<std::int32_t>(modbus_u32(r, at)); }

}  // namespace stripeline::measure
