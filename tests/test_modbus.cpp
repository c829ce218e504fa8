// Modbus TCP (daemon/modbus_server.h, docs/measure.md "Modbus TCP"): a
// libmodbus client on loopback reads the documented registers after each
// part and sees that part's values and decisions.
#include <gtest/gtest.h>

#include <modbus/modbus.h>

#include <cerrno>
#include <cmath>
#include <memory>
#include <stdexcept>

#include "daemon/modbus_server.h"
#include "measure/modbus_registers.h"

namespace stripeline {
namespace {

using measure::Decision;

measure::PartResult part(std::uint64_t id, double gap, double flush, Decision gd, Decision fd) {
  measure::PartResult r;
  r.part = id;
  r.units = "mm";
  measure::ToolResult t;
  t.name = "gf";
  t.kind = measure::ToolKind::GapFlush;
  t.values = {{"gap", gap}, {"flush", flush}};
  t.value_decisions = {gd, fd};
  t.decision = (gd == Decision::Fail || fd == Decision::Fail) ? Decision::Fail : Decision::Pass;
  measure::ToolResult v;
  v.name = "vol";
  v.kind = measure::ToolKind::Volume;
  v.values = {{"volume", 1800.25}, {"area", std::nan("")}};
  v.value_decisions = {Decision::None, Decision::None};
  r.tools = {t, v};
  r.decision = t.decision;
  return r;
}

struct Client {
  modbus_t* ctx;
  explicit Client(int port) : ctx(modbus_new_tcp("127.0.0.1", port)) {}
  ~Client() {
    modbus_close(ctx);
    modbus_free(ctx);
  }
};

TEST(Modbus, AClientReadsEachPartsValuesAndDecisions) {
  ModbusServer server("127.0.0.1", 0);
  ASSERT_GT(server.port(), 0);
  Client client(server.port());
  ASSERT_NE(client.ctx, nullptr);
  ASSERT_EQ(modbus_connect(client.ctx), 0) << modbus_strerror(errno);
  measure::PartCounters counters;
  std::vector<std::uint16_t> regs;
  const double gaps[3] = {2.2004, 2.251, -0.0125};
  for (std::uint64_t id = 1; id <= 3; ++id) {
    const Decision gd = id == 2 ? Decision::Fail : Decision::Pass;
    const measure::PartResult r = part(id, gaps[id - 1], 0.3, gd, Decision::Pass);
    ++counters.parts;
    (r.decision == Decision::Pass ? counters.passed : counters.failed) += 1;
    measure::modbus_registers(r, counters, static_cast<std::uint16_t>(id), regs);
    server.publish(regs);

    std::uint16_t head[12], tool[2][16];
    ASSERT_EQ(modbus_read_registers(client.ctx, 0, 12, head), 12) << modbus_strerror(errno);
    ASSERT_EQ(modbus_read_input_registers(client.ctx, 100, 16, tool[0]), 16) << modbus_strerror(errno);
    ASSERT_EQ(modbus_read_registers(client.ctx, 116, 16, tool[1]), 16) << modbus_strerror(errno);
    EXPECT_EQ(measure::modbus_u32(head, 0), id);
    EXPECT_EQ(head[2], id == 2 ? 2 : 1);  // fail / pass
    EXPECT_EQ(head[3], 2);
    EXPECT_EQ(measure::modbus_u32(head, 4), id);
    EXPECT_EQ(measure::modbus_u32(head, 6), id == 1 ? 1u : id == 2 ? 1u : 2u);
    EXPECT_EQ(measure::modbus_u32(head, 8), id == 1 ? 0u : 1u);
    EXPECT_EQ(head[10], 1);  // mm
    EXPECT_EQ(head[11], id);
    EXPECT_EQ(tool[0][0], id == 2 ? 2 : 1);
    EXPECT_EQ(tool[0][1], 2);
    EXPECT_EQ(measure::modbus_f32(tool[0], 2), static_cast<float>(gaps[id - 1]));
    EXPECT_EQ(measure::modbus_i32(tool[0], 8), std::lround(gaps[id - 1] * 1000));  // um
    EXPECT_EQ(measure::modbus_i32(tool[0], 10), 300);
    EXPECT_EQ(tool[0][14], (id == 2 ? 2 : 1) | (1 << 2));
    EXPECT_EQ(tool[1][0], 0);  // no limits
    EXPECT_EQ(measure::modbus_f32(tool[1], 2), 1800.25f);
    EXPECT_EQ(measure::modbus_i32(tool[1], 8), 1800250);
    EXPECT_EQ(measure::modbus_u32(tool[1], 10), 0x80000000u);  // NaN
    EXPECT_TRUE(std::isnan(measure::modbus_f32(tool[1], 4)));
  }
  // Writes are refused; reads beyond the map too.
  EXPECT_EQ(modbus_write_register(client.ctx, 0, 7), -1);
  std::uint16_t beyond[4];
  EXPECT_EQ(modbus_read_registers(client.ctx, measure::kModbusRegisters - 2, 4, beyond), -1);
  EXPECT_GE(server.requests(), 9u);
}

// A server of several units (a daemon of several heads): each unit its own
// map, read with the client's unit identifier; a unit not served answers
// exception 0x0B (gateway target), a server without units answers every unit.
TEST(Modbus, EachUnitIdentifierHasItsOwnMapAndAnUnservedOneIsAGatewayException) {
  ModbusServer server("127.0.0.1", 0, {1, 2, 255});
  std::vector<std::uint16_t> regs;
  measure::PartCounters counters;
  for (int unit : {1, 2, 255}) {
    measure::modbus_registers(part(static_cast<std::uint64_t>(unit) * 10, 1.0, 0.3, Decision::Pass, Decision::Pass), counters, 1, regs);
    server.publish(regs, unit);
  }
  EXPECT_THROW(server.publish(regs, 3), std::invalid_argument);
  Client client(server.port());
  ASSERT_EQ(modbus_connect(client.ctx), 0) << modbus_strerror(errno);
  std::uint16_t head[2];
  for (int unit : {1, 2, 255}) {
    ASSERT_EQ(modbus_set_slave(client.ctx, unit), 0);
    ASSERT_EQ(modbus_read_registers(client.ctx, 0, 2, head), 2) << "unit " << unit << ": " << modbus_strerror(errno);
    EXPECT_EQ(measure::modbus_u32(head, 0), static_cast<std::uint32_t>(unit) * 10) << "unit " << unit;
  }
  for (int unit : {3, 9, 247}) {  // libmodbus sets 0..247 and 255
    ASSERT_EQ(modbus_set_slave(client.ctx, unit), 0);
    EXPECT_EQ(modbus_read_registers(client.ctx, 0, 2, head), -1) << "unit " << unit;
    EXPECT_EQ(errno, EMBXGTAR) << "unit " << unit << ": " << modbus_strerror(errno);
  }

  ModbusServer single("127.0.0.1", 0);
  single.publish(regs);
  Client any(single.port());
  ASSERT_EQ(modbus_connect(any.ctx), 0) << modbus_strerror(errno);
  for (int unit : {1, 7, 255}) {
    ASSERT_EQ(modbus_set_slave(any.ctx, unit), 0);
    ASSERT_EQ(modbus_read_registers(any.ctx, 0, 2, head), 2) << "unit " << unit << ": " << modbus_strerror(errno);
    EXPECT_EQ(measure::modbus_u32(head, 0), 2550u);
  }
}

TEST(Modbus, ABusyPortIsOneClearError) {
  ModbusServer first("127.0.0.1", 0);
  try {
    ModbusServer second("127.0.0.1", first.port());
    FAIL() << "a second server listened on the same port";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("cannot listen on 127.0.0.1:" + std::to_string(first.port())), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace stripeline
