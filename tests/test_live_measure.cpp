// The daemon measuring live (daemon/live_measure.h, docs/measure.md "Live"):
// a [measure] job on the synthetic head's rows, each part out as a
// measurement message (docs/wire-format.md), in the Prometheus counters and
// in the Modbus TCP registers ([modbus], read by a libmodbus client); a
// SIGHUP swaps the job while the rows go on (the series and its seq
// continue), and a bad job file is refused in one line naming its key, the
// old job kept.
#include <gtest/gtest.h>

#include <modbus/modbus.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>
#include <zmq.hpp>

#include "app/config.h"
#include "core/errors.h"
#include "measure/modbus_registers.h"
#include "streaming/wire_format.h"
#include "child_process.h"
#include "test_helpers.h"
#include "wire_receive.h"

using namespace stripeline;
using namespace std::chrono_literals;
using test::Child;
using test::http_get;
using test::parse_metrics;
using test::TempDir;
using test::write_text;
using steady = std::chrono::steady_clock;

namespace {

// Parts every 100 rows, 50 long (encoder mode on the motion axis: frames in px).
std::string job(const std::string& name, const std::string& tool, const std::string& extra = "") {
  std::ostringstream s;
  s << "[job]\nname = \"" << name << "\"\nunits = \"px\"\n"
    << "[detection]\nmode = \"encoder\"\npitch = 100.0\nlength = 50.0\nstart = 0.0\n"
    << "[[tool]]\nname = \"" << tool << "\"\ntype = \"height\"\nregion = { anchor = \"scan\", x = [0.0, 255.0] }\n"
    << "limits = { mean = [-1000000.0, 1000000.0] }\n"
    << "[[tool]]\nname = \"never\"\ntype = \"height\"\nregion = { anchor = \"scan\", x = [0.0, 255.0] }\nlimits = { mean = [-3.0, -2.0] }\n"
    << extra;
  return s.str();
}

std::string config(const TempDir& dir, const std::filesystem::path& job_file) {
  std::ostringstream s;
  s << "[synthetic]\nwidth = 256\nframe_height = 32\nframes = 0\n"
    << "[processing]\nbackend = \"cpu\"\nbatch_frames = 20\n"
    << "[output]\ndir = \"" << (dir / "scans").string() << "\"\nply = \"\"\nheightmap = \"\"\npreview = \"\"\nsummary = \"scan.json\"\n"
    << "[publisher]\nenabled = true\nendpoint = \"tcp://127.0.0.1:*\"\nrows_per_message = 5\ncontrol_timeout_ms = 5000\n"
    << "[daemon]\nscan_rows = 1000000\nrate = 2000.0\nstop_timeout = 20.0\n"
    << "[http]\nport = 0\nviewer = false\n"
    << "[measure]\njob = \"" << job_file.string() << "\"\n"
    << "[modbus]\nenabled = true\nport = 0\n";
  return s.str();
}

struct Stream {
  zmq::context_t ctx;
  zmq::socket_t sub;
  explicit Stream(const std::string& endpoint) : sub(ctx, zmq::socket_type::sub) {
    sub.set(zmq::sockopt::linger, 0);
    sub.connect(endpoint);
    sub.set(zmq::sockopt::subscribe, "");
  }
  // Receives until `n` measurement messages came (or the deadline); every message kept.
  std::vector<wire::Decoded> measurements(std::size_t n, std::chrono::seconds limit, std::vector<wire::Decoded>* all = nullptr) {
    std::vector<wire::Decoded> out;
    const auto deadline = steady::now() + limit;
    while (out.size() < n && steady::now() < deadline) {
      auto m = test::receive_decoded(sub, 50ms);
      if (!m) continue;
      if (m->topic == wire::Topic::Measurement) out.push_back(*m);
      if (all) all->push_back(std::move(*m));
    }
    return out;
  }
};

double metric(int port, const std::string& key) {
  const auto m = parse_metrics(http_get(port, "/metrics").second);
  const auto it = m.find(key);
  return it == m.end() ? -1.0 : it->second;
}

}  // namespace

TEST(LiveMeasure, DaemonMeasuresPartsAndSendsThemToTheStreamMetricsAndModbus) {
  TempDir dir;
  write_text(dir / "job.toml", job("first", "top"));
  write_text(dir / "d.toml", config(dir, dir / "job.toml"));
  Child d({test::binary_path(), "daemon", "--config", (dir / "d.toml").string()});
  const auto modbus_port = d.wait_for(R"(modbus: listening on 127\.0\.0\.1:([0-9]+))", 30s);
  ASSERT_TRUE(modbus_port) << d.output();
  const auto endpoint = d.wait_for(R"(publisher: bound (tcp://127\.0\.0\.1:[0-9]+))", 30s);
  const auto http_port = d.wait_for(R"(http: listening on http://127\.0\.0\.1:([0-9]+))", 30s);
  ASSERT_TRUE(endpoint && http_port && d.wait_for("daemon: ready", 30s)) << d.output();
  ASSERT_TRUE(d.wait_for("measure: job 'first'", 1s)) << d.output();

  Stream stream(*endpoint);
  const auto parts = stream.measurements(6, 20s);
  ASSERT_EQ(parts.size(), 6u) << d.output();
  std::map<std::uint64_t, nlohmann::json> by_id;
  for (const auto& m : parts) {
    const auto& p = m.header["part"];
    EXPECT_EQ(p["job"], "first");
    EXPECT_EQ(p["units"], "px");
    EXPECT_EQ(p["decision"], "fail");  // "never" fails every part
    ASSERT_EQ(p["tools"].size(), 2u);
    EXPECT_EQ(p["tools"][0]["name"], "top");
    EXPECT_EQ(p["tools"][0]["decision"], "pass");
    EXPECT_EQ(p["tools"][1]["decision"], "fail");
    const auto frames = p["frames"];
    EXPECT_EQ(frames[1].get<std::uint64_t>() - frames[0].get<std::uint64_t>(), 49u);  // 50 rows
    EXPECT_EQ(frames[0].get<std::uint64_t>() % 100, 0u);
    by_id[p["part"].get<std::uint64_t>()] = p;
  }

  // A PLC reads the latest part: one read of 125 words holds the head, tool 0 and tool 1's decision and first value.
  modbus_t* ctx = modbus_new_tcp("127.0.0.1", std::stoi(*modbus_port));
  ASSERT_NE(ctx, nullptr);
  ASSERT_EQ(modbus_connect(ctx), 0) << modbus_strerror(errno);
  bool matched = false;
  for (int attempt = 0; attempt < 100 && !matched; ++attempt) {
    std::uint16_t regs[125];
    ASSERT_EQ(modbus_read_registers(ctx, 0, 125, regs), 125) << modbus_strerror(errno);
    const std::uint32_t id = measure::modbus_u32(regs, 0);
    ASSERT_GT(id, 0u);
    EXPECT_EQ(regs[2], 2);   // the part failed
    EXPECT_EQ(regs[3], 2);   // two tools
    EXPECT_EQ(regs[10], 2);  // px
    EXPECT_GE(measure::modbus_u32(regs, 4), id);
    EXPECT_EQ(measure::modbus_u32(regs, 8), measure::modbus_u32(regs, 4));  // every part failed
    EXPECT_EQ(regs[100], 1);  // top: pass
    EXPECT_EQ(regs[116], 2);  // never: fail
    const float mean = measure::modbus_f32(regs, 102);
    EXPECT_NEAR(measure::modbus_i32(regs, 108) / 1000.0, mean, 0.0011);
    EXPECT_EQ(measure::modbus_f32(regs, 118), mean);  // the same region, the same mean
    // The same part on the stream: its values exactly.
    for (const auto& m : stream.measurements(1, 2s)) by_id[m.header["part"]["part"].get<std::uint64_t>()] = m.header["part"];
    if (const auto it = by_id.find(id); it != by_id.end()) {
      EXPECT_EQ(mean, static_cast<float>(it->second["tools"][0]["values"]["mean"].get<double>()));
      matched = true;
    }
  }
  EXPECT_TRUE(matched) << "no part read over Modbus was seen on the stream";
  modbus_close(ctx);
  modbus_free(ctx);

  const int port = std::stoi(*http_port);
  EXPECT_GE(metric(port, "stripeline_measure_parts_total{decision=\"fail\"}"), 6);
  EXPECT_EQ(metric(port, "stripeline_measure_parts_total{decision=\"pass\"}"), 0);
  EXPECT_GE(metric(port, "stripeline_measure_tool_results_total{tool=\"top\",result=\"pass\"}"), 6);
  EXPECT_GE(metric(port, "stripeline_measure_tool_results_total{tool=\"never\",result=\"fail\"}"), 6);
  EXPECT_EQ(metric(port, "stripeline_measure_parts_dropped_total"), 0);
  d.signal(SIGTERM);
  const auto code = d.wait_exit(25s);
  ASSERT_TRUE(code) << d.output();
  EXPECT_EQ(*code, 0) << d.output();
}

TEST(LiveMeasure, SighupSwapsTheJobWithoutARestartAndABadJobKeepsTheOldOne) {
  TempDir dir;
  write_text(dir / "job.toml", job("first", "top"));
  write_text(dir / "d.toml", config(dir, dir / "job.toml"));
  Child d({test::binary_path(), "daemon", "--config", (dir / "d.toml").string()});
  const auto endpoint = d.wait_for(R"(publisher: bound (tcp://127\.0\.0\.1:[0-9]+))", 30s);
  const auto http_port = d.wait_for(R"(http: listening on http://127\.0\.0\.1:([0-9]+))", 30s);
  ASSERT_TRUE(endpoint && http_port && d.wait_for("daemon: ready", 30s)) << d.output();
  const int port = std::stoi(*http_port);
  Stream stream(*endpoint);
  std::vector<wire::Decoded> all;
  ASSERT_EQ(stream.measurements(3, 20s, &all).size(), 3u) << d.output();

  // A bad job: one line naming the key; the running job goes on.
  write_text(dir / "job.toml", job("second", "top2", "[[tool]]\nname = \"bad\"\ntype = \"height\"\nregion = { anchor = \"scan\", x = [0.0, 255.0] }\nlimits = { mean = 3 }\n"));
  std::size_t mark = d.output().size();
  d.signal(SIGHUP);
  const auto rejected = d.wait_for("configuration rejected, keeping the running one: (.*)", 10s, mark);
  ASSERT_TRUE(rejected) << d.output();
  EXPECT_NE(rejected->find("job.toml"), std::string::npos) << *rejected;
  EXPECT_NE(rejected->find("limits.mean"), std::string::npos) << *rejected;
  for (const auto& m : stream.measurements(3, 20s, &all)) EXPECT_EQ(m.header["part"]["job"], "first");
  EXPECT_EQ(metric(port, "stripeline_config_reloads_total{result=\"rejected\"}"), 1);

  // A good job: swapped in, the rows go on (no new series, no seq gap, no scan ended by the reload).
  write_text(dir / "job.toml", job("second", "top2"));
  mark = d.output().size();
  d.signal(SIGHUP);
  ASSERT_TRUE(d.wait_for("job 'second' .* swapped in live", 10s, mark)) << d.output();
  bool second = false;
  const auto deadline = steady::now() + 20s;
  while (!second && steady::now() < deadline)
    for (const auto& m : stream.measurements(1, 2s, &all))
      if (m.header["part"]["job"] == "second") {
        second = true;
        EXPECT_EQ(m.header["part"]["tools"][0]["name"], "top2");
      }
  ASSERT_TRUE(second) << d.output();
  EXPECT_GE(metric(port, "stripeline_measure_tool_results_total{tool=\"top2\",result=\"pass\"}"), 1);
  EXPECT_EQ(metric(port, "stripeline_config_reloads_total{result=\"applied\"}"), 1);
  EXPECT_EQ(d.output().find("ended (reload)"), std::string::npos) << d.output();
  // One series throughout, every message numbered in turn.
  std::size_t first = 0;
  while (first < all.size() && all[first].series != all.back().series) ++first;
  EXPECT_EQ(first, 0u) << "a new series started: the pipeline was restarted";
  for (std::size_t i = 1; i < all.size(); ++i) EXPECT_EQ(all[i].seq, all[i - 1].seq + 1) << "a message was lost at " << i;
  // Part ids go on counting across the swap.
  std::uint64_t last = 0;
  for (const auto& m : all)
    if (m.topic == wire::Topic::Measurement) {
      const auto id = m.header["part"]["part"].get<std::uint64_t>();
      EXPECT_GT(id, last);
      last = id;
    }
  d.signal(SIGTERM);
  const auto code = d.wait_exit(25s);
  ASSERT_TRUE(code) << d.output();
  EXPECT_EQ(*code, 0) << d.output();
}

// Format 1.3's measurement message on its own: what the publisher encodes decodes; what lacks a record's fields is refused in one line.
TEST(WireMeasurement, DecodesARecordAndRefusesMalformedOnes) {
  nlohmann::json part = {{"part", 3}, {"job", "j"}, {"decision", "pass"}, {"units", "mm"},
                         {"tools", nlohmann::json::array({{{"name", "gap"}, {"type", "gap_flush"}, {"decision", "pass"}}})}};
  nlohmann::json h = wire::base_header(wire::Topic::Measurement, "0d1c0a5e-1111-4222-8333-444455556666", 7);
  h["part"] = part;
  const auto d = wire::decode(wire::encode_control(wire::Topic::Measurement, h).strings());
  EXPECT_EQ(d.topic, wire::Topic::Measurement);
  EXPECT_EQ(d.seq, 7u);
  EXPECT_EQ(d.header["htype"], std::string("stripeline-measurement-") + wire::kFormatVersion);
  EXPECT_EQ(d.header["part"]["tools"][0]["name"], "gap");
  auto refused = [&](nlohmann::json bad, std::vector<std::string> extra = {}) {
    nlohmann::json hb = h;
    hb["part"] = std::move(bad);
    auto parts = wire::encode_control(wire::Topic::Measurement, hb).strings();
    for (auto& e : extra) parts.push_back(e);
    try {
      wire::decode(parts);
    } catch (const wire::MalformedMessage& e) {
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
      return true;
    }
    return false;
  };
  EXPECT_TRUE(refused(nlohmann::json::array()));
  nlohmann::json no_job = part;
  no_job.erase("job");
  EXPECT_TRUE(refused(no_job));
  nlohmann::json bad_tools = part;
  bad_tools["tools"] = nlohmann::json::array({3});
  EXPECT_TRUE(refused(bad_tools));
  EXPECT_TRUE(refused(part, {"extra"}));
  EXPECT_FALSE(refused(part));
}

// Per head ([head.measure]): head "a" measures, "b" does not; its counters are labelled head="a"; a SIGHUP
// changing a's job swaps it in (the head goes on), a bad one is refused naming its key.
TEST(LiveMeasure, EachHeadAppliesItsOwnJob) {
  TempDir dir;
  write_text(dir / "job.toml", job("first", "top"));
  std::ostringstream s;
  s << "[synthetic]\nwidth = 256\nframe_height = 32\nframes = 0\n"
    << "[processing]\nbackend = \"cpu\"\nbatch_frames = 20\n"
    << "[output]\ndir = \"" << (dir / "scans").string() << "\"\nply = \"\"\nheightmap = \"\"\npreview = \"\"\nsummary = \"\"\n"
    << "[publisher]\nenabled = true\n"
    << "[daemon]\nscan_rows = 1000000\nrate = 2000.0\n[http]\nport = 0\nviewer = false\n";
  for (const char* name : {"a", "b"}) {
    s << "[[head]]\nname = \"" << name << "\"\n[head.publisher]\nendpoint = \"ipc://" << (dir / (std::string(name) + ".sock")).string() << "\"\n";
    if (name[0] == 'a') s << "[head.measure]\njob = \"" << (dir / "job.toml").string() << "\"\n";
  }
  write_text(dir / "d.toml", s.str());
  Child d({test::binary_path(), "daemon", "--config", (dir / "d.toml").string()});
  const auto http_port = d.wait_for(R"(http: listening on http://127\.0\.0\.1:([0-9]+))", 30s);
  ASSERT_TRUE(http_port && d.wait_for("head a: ready", 30s) && d.wait_for("head b: ready", 30s)) << d.output();
  const int port = std::stoi(*http_port);
  Stream stream("ipc://" + (dir / "a.sock").string());
  ASSERT_EQ(stream.measurements(2, 20s).size(), 2u) << d.output();
  const auto deadline = steady::now() + 10s;
  while (metric(port, "stripeline_measure_parts_total{head=\"a\",decision=\"fail\"}") < 2 && steady::now() < deadline) std::this_thread::sleep_for(50ms);
  EXPECT_GE(metric(port, "stripeline_measure_parts_total{head=\"a\",decision=\"fail\"}"), 2);
  EXPECT_GE(metric(port, "stripeline_measure_tool_results_total{head=\"a\",tool=\"top\",result=\"pass\"}"), 2);
  EXPECT_EQ(metric(port, "stripeline_measure_parts_total{head=\"b\",decision=\"fail\"}"), -1);  // b has no job

  write_text(dir / "job.toml", job("second", "top2", "[[tool]]\nname = \"bad\"\ntype = \"height\"\nregion = { anchor = \"scan\", x = [0.0, 255.0] }\nlimits = { mean = 3 }\n"));
  std::size_t mark = d.output().size();
  d.signal(SIGHUP);
  const auto rejected = d.wait_for("configuration rejected, keeping the running one: (.*)", 10s, mark);
  ASSERT_TRUE(rejected) << d.output();
  EXPECT_NE(rejected->find("limits.mean"), std::string::npos) << *rejected;
  write_text(dir / "job.toml", job("second", "top2"));
  mark = d.output().size();
  d.signal(SIGHUP);
  ASSERT_TRUE(d.wait_for("head a: SIGHUP: job 'second' swapped in live", 10s, mark)) << d.output();
  bool second = false;
  for (int i = 0; i < 10 && !second; ++i)
    for (const auto& m : stream.measurements(1, 2s)) second = second || m.header["part"]["job"] == "second";
  EXPECT_TRUE(second) << d.output();
  EXPECT_EQ(d.output().find("ended (reload)", mark), std::string::npos) << d.output();
  d.signal(SIGTERM);
  const auto code = d.wait_exit(25s);
  ASSERT_TRUE(code) << d.output();
  EXPECT_EQ(*code, 0) << d.output();
}

// [measure] and [modbus] keys are checked like every other; a bad job at start is one line naming its key, exit 2.
TEST(LiveMeasure, BadSettingsAndABadJobAtStartAreOneLineAndExitTwo) {
  auto error_of = [](const std::string& text) {
    try {
      parse_config(text, "d.toml");
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error_of("[measure]\nqueue_parts = 0\n").find("measure.queue_parts"), std::string::npos);
  EXPECT_NE(error_of("[modbus]\nport = 70000\n").find("modbus.port"), std::string::npos);
  EXPECT_NE(error_of("[modbus]\nprot = 1\n").find("modbus.prot: unknown key"), std::string::npos);
  EXPECT_NE(error_of("[[head]]\nname = \"a\"\n[head.measure]\nqueue_parts = -1\n").find("queue_parts"), std::string::npos);
  EXPECT_EQ(error_of("[measure]\njob = \"j.toml\"\nqueue_parts = 4\n[modbus]\nenabled = true\nport = 0\n"), "");

  TempDir dir;
  write_text(dir / "job.toml", job("first", "top", "[[tool]]\nname = \"bad\"\ntype = \"height\"\nregion = { anchor = \"scan\", x = [0.0, 255.0] }\nlimits = { mean = 3 }\n"));
  write_text(dir / "d.toml", config(dir, dir / "job.toml"));
  Child d({test::binary_path(), "daemon", "--config", (dir / "d.toml").string()});
  const auto code = d.wait_exit(30s);
  ASSERT_TRUE(code) << d.output();
  EXPECT_EQ(*code, 2) << d.output();
  EXPECT_NE(d.output().find("limits.mean"), std::string::npos) << d.output();
}
