// A job on the merged scan of a daemon of several heads (docs/measure.md
// "Measuring the merged scan", [merge.measure]) and [modbus] there: the real
// `stripeline daemon` with three heads reading slices of one recording,
// merged; the merged job's parts (the stream's measurement messages) equal
// what `stripeline measure` gives on the merged range map the daemon wrote
// (the same rows through the same code: exactly); head="merged" in
// /metrics; a libmodbus client reads the merged job's registers (unit 255)
// and a head's job's (unit 1) and gets exception 0x0B for a unit not served;
// a bad merged job is one line naming its key, exit 2; SIGHUP swaps it; and
// without [merge], each head's job on its own unit. Loopback/ipc only;
// every wait has a deadline. (Short test names: the temporary directory,
// named after the test, holds ipc:// sockets, whose paths are limited to 107 bytes.)
#include <gtest/gtest.h>

#include <modbus/modbus.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <thread>
#include <zmq.hpp>

#include "acquisition/synthetic_scanner.h"
#include "io/recording.h"
#include "measure/modbus_registers.h"
#include "streaming/wire_format.h"
#include "child_process.h"
#include "heads_fixtures.h"
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

constexpr int kWhole = 640, kW = 256, kH = 32, kFrames = 48;

// Parts every 1 mm of motion, 0.5 mm long (5 rows at the calibration's 0.1 mm):
// five parts in the 48 rows. `extra`: more TOML at the end.
std::string merged_job(const std::string& extra = "") {
  return "[job]\nname = \"merged-job\"\nunits = \"mm\"\n"
         "[detection]\nmode = \"encoder\"\npitch = 1.0\nlength = 0.5\nstart = 0.0\n"
         "[[tool]]\nname = \"level\"\ntype = \"height\"\nregion = { anchor = \"scan\", x = [-50.0, 50.0] }\nlimits = { mean = [-1000.0, 1000.0] }\n"
         "[[tool]]\nname = \"flat\"\ntype = \"flatness\"\nregion = { anchor = \"scan\", x = [-45.0, 45.0] }\n"
         "[[tool]]\nname = \"vol\"\ntype = \"volume\"\nregion = { anchor = \"scan\", x = [-50.0, 50.0] }\n" +
         extra;
}

// Three heads, each 256 columns of one 640-column recording of the synthetic
// scene (as tests/test_heads.cpp's ThreeHeadsMergedRangeMapAndPlyEqualTheWholeViewScan),
// merged with align = "frame", the merged range map written; `more`: more
// TOML for the top level (before the heads), `head_a`: more for head a.
std::string three_heads(const TempDir& dir, const std::string& more, const std::string& head_a = "") {
  const int x0[3] = {0, 192, 384};
  SyntheticConfig sc;
  sc.width = kWhole, sc.frame_height = kH, sc.frames = kFrames, sc.seed = 11;
  const SyntheticScanner scene(sc);
  std::vector<std::uint8_t> whole(static_cast<std::size_t>(kWhole) * kH * kFrames);
  for (int f = 0; f < kFrames; ++f)
    scene.render(static_cast<std::uint64_t>(f), reinterpret_cast<std::byte*>(whole.data()) + static_cast<std::size_t>(f) * kWhole * kH);
  for (int h = 0; h < 3; ++h) {
    std::vector<std::uint8_t> part(static_cast<std::size_t>(kW) * kH * kFrames);
    for (std::size_t r = 0; r < static_cast<std::size_t>(kH) * kFrames; ++r) std::copy_n(whole.data() + r * kWhole + x0[h], kW, part.data() + r * kW);
    io::write_recording(dir / (std::string(1, static_cast<char>('a' + h)) + ".tif"), part.data(), kW, kH, kFrames, PixelFormat::Mono8);
  }
  std::ostringstream s;
  s << "[processing]\nbackend = \"cpu\"\nbatch_frames = 16\n[http]\nport = 0\nviewer = false\n"
    << "[source]\nkind = \"file\"\nframe_height = " << kH << "\npath = \"" << (dir / "a.tif").string() << "\"\n"
    << "[calibration]\nfile = \"" << test::write_calibration(dir, kW).string() << "\"\n"
    << "[output]\ndir = \"" << (dir / "scans").string() << "\"\nply = \"\"\nheightmap = \"\"\npreview = \"\"\nsummary = \"\"\n"
    << "[publisher]\nenabled = true\nrows_per_message = 8\nstats_interval = 0\nsend_hwm = 100000\n"
    << "[daemon]\nscan_rows = 1000000\npause = 0.0\nidle_close = 0.0\n"
    << "[merge]\nenabled = true\ntransforms = \"" << test::write_transforms(dir).string() << "\"\ngrid = \"-55:55:0.5\"\nwindow_ms = 3000\n"
    << "align = \"frame\"\nrange_map = \"merged.tif\"\npublish = \"ipc://" << (dir / "merged.sock").string() << "\"\n"
    << more;
  for (const char* name : {"a", "b", "c"})
    s << "[[head]]\nname = \"" << name << "\"\n[head.publisher]\nendpoint = \"ipc://" << (dir / (std::string(name) + ".sock")).string()
      << "\"\n[head.source]\npath = \"" << (dir / (std::string(name) + ".tif")).string() << "\"\n" << (name[0] == 'a' ? head_a : "");
  return s.str();
}

// What two records of one part must share: everything but where the rows came from (frames, timestamps, encoder, head, job).
nlohmann::json comparable(nlohmann::json p) {
  for (const char* k : {"frames", "timestamp_ns", "encoder", "head", "job"}) p.erase(k);
  return p;
}

}  // namespace

TEST(MergedMeasure, PartsEqualOfflineAndModbusUnits) {
  TempDir dir;
  write_text(dir / "merged-job.toml", merged_job());
  // Head a's own job: the same parts in its own X (px of nothing: mm, its calibration).
  write_text(dir / "a-job.toml", "[job]\nname = \"a-job\"\nunits = \"mm\"\n[detection]\nmode = \"encoder\"\npitch = 1.0\nlength = 0.5\nstart = 0.0\n"
                                 "[[tool]]\nname = \"top\"\ntype = \"height\"\nregion = { anchor = \"scan\", x = [-20.0, 20.0] }\n");
  std::string cfg = three_heads(dir,
                                "[modbus]\nenabled = true\nport = 0\n[merge.measure]\njob = \"" + (dir / "merged-job.toml").string() +
                                    "\"\nqueue_parts = 64\n",
                                "[head.measure]\njob = \"" + (dir / "a-job.toml").string() + "\"\n");
  cfg.replace(cfg.find("[daemon]\n"), 9, "[daemon]\nrate = 100.0\n");  // 0.48 s of rows: the subscriber below is in long before the first part ends
  write_text(dir / "d.toml", cfg);
  zmq::context_t ctx;
  zmq::socket_t sub(ctx, zmq::socket_type::sub);
  sub.set(zmq::sockopt::linger, 0);
  sub.set(zmq::sockopt::reconnect_ivl, 10);  // connected within 10 ms of the merge's bind
  sub.set(zmq::sockopt::subscribe, "");
  sub.connect("ipc://" + (dir / "merged.sock").string());  // before the daemon binds: the whole merged series
  Child d({test::binary_path(), "daemon", "--config", (dir / "d.toml").string()});
  const auto modbus_port = d.wait_for(R"(modbus: listening on 127\.0\.0\.1:([0-9]+))", 30s);
  const auto http_port = d.wait_for(R"(http: listening on http://127\.0\.0\.1:([0-9]+))", 30s);
  ASSERT_TRUE(modbus_port && http_port) << d.output();
  ASSERT_TRUE(d.wait_for("merge: measure: job 'merged-job'", 1s)) << d.output();

  // The merged stream: the measurement messages of the series, then its end.
  std::vector<nlohmann::json> live;
  bool ended = false;
  for (const auto deadline = steady::now() + 60s; !ended && steady::now() < deadline;) {
    auto m = test::receive_decoded(sub, 100ms);
    if (!m) continue;
    if (m->topic == wire::Topic::Measurement) live.push_back(m->header["part"]);
    ended = m->topic == wire::Topic::SeriesEnd;
  }
  ASSERT_TRUE(ended) << d.output();
  ASSERT_TRUE(d.wait_for(R"(merge: series 1: wrote .*merged\.tif)", 20s)) << d.output();
  ASSERT_EQ(live.size(), 5u) << d.output();
  for (const auto& p : live) {
    EXPECT_EQ(p["job"], "merged-job");
    EXPECT_EQ(p["head"], "merged");
    EXPECT_EQ(p["units"], "mm");
    EXPECT_EQ(p["decision"], "pass");
    EXPECT_EQ(p["rows"], 5);
    EXPECT_TRUE(p["tools"][0]["values"]["mean"].is_number()) << p.dump();
    EXPECT_TRUE(p["tools"][1]["values"]["rms"].is_number()) << p.dump();
    EXPECT_GT(p["tools"][2]["values"]["volume"].get<double>(), 0.0) << p.dump();
    EXPECT_GT(p["points"].get<int>(), 5 * 150) << "a merged row holds ~200 cells with data";
  }

  // Offline: `stripeline measure` on the merged range map gives the same parts, the same values.
  std::filesystem::path tif;
  for (const auto& e : std::filesystem::directory_iterator(dir / "scans"))
    if (e.path().filename().string().ends_with("-merge-000001-merged.tif")) tif = e.path();
  ASSERT_FALSE(tif.empty()) << d.output();
  std::string out;
  ASSERT_EQ(test::run_cli("measure " + tif.string() + " --job " + (dir / "merged-job.toml").string() + " -q --json " + (dir / "offline.json").string(),
                          &out),
            0)
      << out;
  std::ifstream in(dir / "offline.json");
  const nlohmann::json offline = nlohmann::json::parse(in);
  ASSERT_EQ(offline["parts"].size(), live.size()) << offline.dump(1);
  for (std::size_t i = 0; i < live.size(); ++i) EXPECT_EQ(comparable(live[i]), comparable(offline["parts"][i])) << "part " << i + 1;

  // /metrics: the merged job's counters labelled head="merged", head a's its own.
  const auto metrics = parse_metrics(http_get(std::stoi(*http_port), "/metrics").second);
  const auto at = [&](const std::string& k) { return metrics.count(k) ? metrics.at(k) : -1.0; };
  EXPECT_EQ(at("stripeline_measure_parts_total{head=\"merged\",decision=\"pass\"}"), 5);
  EXPECT_EQ(at("stripeline_measure_tool_results_total{head=\"merged\",tool=\"level\",result=\"pass\"}"), 5);
  EXPECT_EQ(at("stripeline_measure_parts_dropped_total{head=\"merged\"}"), 0);
  EXPECT_EQ(at("stripeline_measure_parts_total{head=\"a\",decision=\"none\"}"), 5);

  // Modbus: unit 255 the merged job's latest part, unit 1 head a's, unit 9 no one's.
  modbus_t* mb = modbus_new_tcp("127.0.0.1", std::stoi(*modbus_port));
  ASSERT_NE(mb, nullptr);
  ASSERT_EQ(modbus_connect(mb), 0) << modbus_strerror(errno);
  std::uint16_t regs[125];
  ASSERT_EQ(modbus_set_slave(mb, 255), 0);
  ASSERT_EQ(modbus_read_registers(mb, 0, 125, regs), 125) << modbus_strerror(errno);
  EXPECT_EQ(measure::modbus_u32(regs, 0), 5u);  // the latest part
  EXPECT_EQ(regs[2], 1);                        // passed
  EXPECT_EQ(regs[3], 3);                        // three tools
  EXPECT_EQ(measure::modbus_u32(regs, 4), 5u);
  EXPECT_EQ(measure::modbus_u32(regs, 6), 5u);
  EXPECT_EQ(regs[10], 1);  // mm
  EXPECT_EQ(regs[100], 1);  // level: pass
  EXPECT_EQ(measure::modbus_f32(regs, 102), static_cast<float>(live.back()["tools"][0]["values"]["mean"].get<double>()));
  ASSERT_EQ(modbus_set_slave(mb, 1), 0);
  ASSERT_EQ(modbus_read_registers(mb, 0, 125, regs), 125) << modbus_strerror(errno);
  EXPECT_EQ(measure::modbus_u32(regs, 0), 5u);
  EXPECT_EQ(regs[2], 0);  // no limits: none
  EXPECT_EQ(regs[3], 1);
  ASSERT_EQ(modbus_set_slave(mb, 9), 0);
  EXPECT_EQ(modbus_read_registers(mb, 0, 12, regs), -1);
  EXPECT_EQ(errno, EMBXGTAR) << modbus_strerror(errno);
  modbus_close(mb);
  modbus_free(mb);

  d.signal(SIGTERM);
  const auto code = d.wait_exit(25s);
  ASSERT_TRUE(code) << d.output();
  EXPECT_EQ(*code, 0) << d.output();
}

TEST(MergedMeasure, BadJobExitsTwo) {
  TempDir dir;
  write_text(dir / "job.toml", merged_job("[[tool]]\nname = \"bad\"\ntype = \"height\"\nregion = { anchor = \"scan\", x = [0.0, 1.0] }\nlimits = { mean = 3 }\n"));
  write_text(dir / "d.toml", three_heads(dir, "[merge.measure]\njob = \"" + (dir / "job.toml").string() + "\"\n"));
  Child d({test::binary_path(), "daemon", "--config", (dir / "d.toml").string()});
  const auto code = d.wait_exit(30s);
  ASSERT_TRUE(code) << d.output();
  EXPECT_EQ(*code, 2) << d.output();
  EXPECT_NE(d.output().find("job.toml: tool[3].limits.mean"), std::string::npos) << d.output();

  // A px job on the merged scan (in mm), and [merge.measure] without the merge: refused the same way.
  write_text(dir / "px.toml", "[job]\nname = \"px\"\nunits = \"px\"\n[[tool]]\nname = \"t\"\ntype = \"height\"\nregion = { anchor = \"scan\", x = [0.0, 1.0] }\n");
  write_text(dir / "d.toml", three_heads(dir, "[merge.measure]\njob = \"" + (dir / "px.toml").string() + "\"\n"));
  Child px({test::binary_path(), "daemon", "--config", (dir / "d.toml").string()});
  const auto px_code = px.wait_exit(30s);
  ASSERT_TRUE(px_code) << px.output();
  EXPECT_EQ(*px_code, 2) << px.output();
  EXPECT_NE(px.output().find("px.toml: job.units = \"px\" but the merged scan is in mm"), std::string::npos) << px.output();
  std::string out;
  write_text(dir / "one.toml", "[merge.measure]\njob = \"" + (dir / "job.toml").string() + "\"\n");
  EXPECT_EQ(test::run_cli("daemon --config " + (dir / "one.toml").string(), &out), 2) << out;
  EXPECT_NE(out.find("merge.measure.job: needs merge.enabled = true"), std::string::npos) << out;
}

// SIGHUP with the merged job's file changed: a bad one is refused in one line
// naming its key (the running job kept), a good one is swapped in, and the
// next merged series (the idle heads restart, replaying their recordings) is
// measured with it. Read from the log at debug level (each part's record):
// the merged stream of the next series is bound anew, and a subscriber's
// reconnection could miss it.
TEST(MergedMeasure, SighupSwapsTheJob) {
  TempDir dir;
  write_text(dir / "job.toml", merged_job());
  std::string cfg = three_heads(dir, "[merge.measure]\njob = \"" + (dir / "job.toml").string() + "\"\n");
  cfg.replace(cfg.find("[daemon]\n"), 9, "[daemon]\nlog_level = \"debug\"\n");
  write_text(dir / "d.toml", cfg);
  Child d({test::binary_path(), "daemon", "--config", (dir / "d.toml").string()});
  // The merged parts logged from `from` on, once the series that follows completed.
  const auto parts_of_series = [&](std::size_t from) {
    std::vector<nlohmann::json> parts;
    if (!d.wait_for("merge: series complete", 60s, from)) return parts;
    const std::string out = d.output().substr(from);
    const std::regex re(R"(measure merged: (\{.*\}))");
    for (auto it = std::sregex_iterator(out.begin(), out.end(), re); it != std::sregex_iterator(); ++it) parts.push_back(nlohmann::json::parse((*it)[1].str()));
    return parts;
  };
  const auto first = parts_of_series(0);
  ASSERT_EQ(first.size(), 5u) << d.output();
  for (const auto& p : first) EXPECT_EQ(p["job"], "merged-job");

  write_text(dir / "job.toml", merged_job("[[tool]]\nname = \"bad\"\ntype = \"height\"\nregion = { anchor = \"scan\", x = [0.0, 1.0] }\nlimits = { mean = 3 }\n"));
  std::size_t mark = d.output().size();
  d.signal(SIGHUP);
  const auto rejected = d.wait_for("configuration rejected, keeping the running one: (.*)", 10s, mark);
  ASSERT_TRUE(rejected) << d.output();
  EXPECT_NE(rejected->find("job.toml: tool[3].limits.mean"), std::string::npos) << *rejected;

  std::string second = merged_job();
  second.replace(second.find("merged-job"), 10, "second-job");
  write_text(dir / "job.toml", second);
  mark = d.output().size();
  d.signal(SIGHUP);
  ASSERT_TRUE(d.wait_for("merge: SIGHUP: job 'second-job' swapped in live on the merged scan", 10s, mark)) << d.output();
  const auto next = parts_of_series(mark);
  ASSERT_EQ(next.size(), 5u) << d.output();
  for (const auto& p : next) EXPECT_EQ(p["job"], "second-job");
  EXPECT_EQ(next.front()["part"], 1) << "part ids count per merged series, as per scan";
  d.signal(SIGTERM);
  const auto code = d.wait_exit(25s);
  ASSERT_TRUE(code) << d.output();
  EXPECT_EQ(*code, 0) << d.output();
}

// [modbus] in a daemon of several heads without [merge]: each head's job on
// its own unit (1, 2), each map its own job's (tools counted), and unit 255
// (no merged job) a gateway exception.
TEST(MergedMeasure, ModbusUnitPerHead) {
  TempDir dir;
  const std::string part = "[detection]\nmode = \"encoder\"\npitch = 100.0\nlength = 50.0\nstart = 0.0\n";
  const std::string tool = "[[tool]]\nname = \"t\"\ntype = \"height\"\nregion = { anchor = \"scan\", x = [0.0, 255.0] }\n";
  write_text(dir / "a.toml", "[job]\nname = \"a\"\nunits = \"px\"\n" + part + tool);
  const std::string tool2 = "[[tool]]\nname = \"t2\"\ntype = \"height\"\nregion = { anchor = \"scan\", x = [0.0, 255.0] }\n";
  write_text(dir / "b.toml", "[job]\nname = \"b\"\nunits = \"px\"\n" + part + tool + tool2);
  std::ostringstream s;
  s << "[synthetic]\nwidth = 256\nframe_height = 32\nframes = 0\n[processing]\nbackend = \"cpu\"\nbatch_frames = 20\n"
    << "[output]\ndir = \"" << (dir / "scans").string() << "\"\nply = \"\"\nheightmap = \"\"\npreview = \"\"\nsummary = \"\"\n"
    << "[daemon]\nscan_rows = 1000000\nrate = 2000.0\n[http]\nenabled = false\n[modbus]\nenabled = true\nport = 0\n";
  for (const char* name : {"a", "b"})
    s << "[[head]]\nname = \"" << name << "\"\n[head.measure]\njob = \"" << (dir / (std::string(name) + ".toml")).string() << "\"\n";
  write_text(dir / "d.toml", s.str());
  Child d({test::binary_path(), "daemon", "--config", (dir / "d.toml").string()});
  const auto port = d.wait_for(R"(modbus: listening on 127\.0\.0\.1:([0-9]+) \(unit 1\.\.2: the heads' jobs in \[\[head\]\] order\))", 30s);
  ASSERT_TRUE(port) << d.output();
  modbus_t* mb = modbus_new_tcp("127.0.0.1", std::stoi(*port));
  ASSERT_NE(mb, nullptr);
  ASSERT_EQ(modbus_connect(mb), 0) << modbus_strerror(errno);
  std::uint16_t regs[12];
  for (int unit : {1, 2}) {  // each head's parts come (a part every 100 rows at 2000 rows/s)
    ASSERT_EQ(modbus_set_slave(mb, unit), 0);
    bool seen = false;
    for (const auto deadline = steady::now() + 20s; !seen && steady::now() < deadline;) {
      ASSERT_EQ(modbus_read_registers(mb, 0, 12, regs), 12) << modbus_strerror(errno);
      seen = measure::modbus_u32(regs, 0) > 0;
      if (!seen) std::this_thread::sleep_for(20ms);  // polling, as a PLC does
    }
    ASSERT_TRUE(seen) << "unit " << unit << ": no part\n" << d.output();
    EXPECT_EQ(regs[3], unit) << "unit " << unit << " holds head " << unit << "'s job (" << unit << " tools)";
    EXPECT_EQ(regs[10], 2);  // px
  }
  ASSERT_EQ(modbus_set_slave(mb, 255), 0);
  EXPECT_EQ(modbus_read_registers(mb, 0, 12, regs), -1);
  EXPECT_EQ(errno, EMBXGTAR) << modbus_strerror(errno);
  modbus_close(mb);
  modbus_free(mb);
  d.signal(SIGTERM);
  const auto code = d.wait_exit(25s);
  ASSERT_TRUE(code) << d.output();
  EXPECT_EQ(*code, 0) << d.output();
}
