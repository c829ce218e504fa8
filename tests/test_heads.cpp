// Several heads in one daemon (daemon/heads.h, app/heads_config.h): the
// [[head]] schema (inheritance, keys named in errors), and the real
// `stripeline daemon` with three synthetic heads merged in the daemon, with
// one head whose recording is corrupt beside two that run, and (GPU) two
// heads named for one GPU against the CPU backend. Loopback/ipc only; every
// wait has a deadline.
#include <gtest/gtest.h>

#include <signal.h>

#include <fstream>
#include <regex>
#include <sstream>

#include "app/config.h"
#include "app/settings.h"
#include "calibration/calibration_file.h"
#include "calibration/head_alignment.h"
#include "core/errors.h"
#include "acquisition/synthetic_scanner.h"
#include "io/float_tiff_reader.h"
#include "io/image_reader.h"
#include "io/recording.h"
#include "io/ply_writer.h"
#include "streaming/curve.h"
#include "streaming/subscriber.h"
#include "child_process.h"
#include "gpu_test.h"
#include "heads_fixtures.h"
#include "test_helpers.h"

using namespace stripeline;
using namespace std::chrono_literals;
using test::Child;
using test::http_get;
using test::parse_metrics;
using test::TempDir;
using test::write_calibration;
using test::write_text;
using test::write_transforms;

namespace {

std::string error_of(const std::string& text) {
  try {
    parse_config(text, "h.toml");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

std::string three_heads_config(const TempDir& dir, int frames, const std::string& merge_extra = "") {
  std::ostringstream s;
  s << "[synthetic]\nwidth = 256\nframe_height = 32\nframes = " << frames << "\n"
    << "[processing]\nbackend = \"cpu\"\nbatch_frames = 20\n"
    << "[calibration]\nfile = \"" << write_calibration(dir).string() << "\"\n"
    << "[output]\ndir = \"" << (dir / "scans").string() << "\"\nply = \"\"\nheightmap = \"\"\npreview = \"\"\nsummary = \"scan.json\"\n"
    << "[publisher]\nenabled = true\nrows_per_message = 8\nstats_interval = 0\nsend_hwm = 100000\n"
    << "[daemon]\nscan_rows = 1000000\nrate = 1500.0\npause = 0.0\nidle_close = 0.0\n"
    << "[http]\nport = 0\n"
    << "[merge]\nenabled = true\ntransforms = \"" << write_transforms(dir).string() << "\"\ngrid = \"-55:55:0.5\"\nwindow_ms = 2000\n"
    << "publish = \"ipc://" << (dir / "merged.sock").string() << "\"\n" << merge_extra;
  for (const char* name : {"a", "b", "c"})
    s << "[[head]]\nname = \"" << name << "\"\n[head.publisher]\nendpoint = \"ipc://" << (dir / (std::string(name) + ".sock")).string()
      << "\"\n[head.synthetic]\nseed = " << (name[0] - 'a' + 1) << "\n";
  return s.str();
}

}  // namespace

TEST(HeadsConfig, HeadsInheritTheTopLevelAndOverrideKeyByKey) {
  const Config c = parse_config(
      "[processing]\nthreshold = 50\nbackend = \"cpu\"\n[synthetic]\nwidth = 300\n"
      "[[head]]\nname = \"left\"\n"
      "[[head]]\nname = \"right\"\ndevice = 3\n[head.processing]\nthreshold = 77\n[head.synthetic]\nseed = 9\n",
      "h.toml");
  ASSERT_EQ(c.heads.size(), 2u);
  EXPECT_EQ(c.heads[0].name, "left");
  EXPECT_EQ(c.heads[1].name, "right");
  const Config& left = *c.heads[0].config;
  const Config& right = *c.heads[1].config;
  EXPECT_EQ(left.pipeline.chain.column.threshold, 50u);
  EXPECT_EQ(right.pipeline.chain.column.threshold, 77u);
  EXPECT_EQ(right.pipeline.backend, Backend::Cpu);  // inherited beside the key it overrides
  EXPECT_EQ(right.synthetic.width, 300);
  EXPECT_EQ(right.synthetic.seed, 9u);
  EXPECT_EQ(left.synthetic.seed, default_config().synthetic.seed);
  EXPECT_EQ(left.pipeline.device, 0);
  EXPECT_EQ(right.pipeline.device, 3);
  EXPECT_NE(settings_values(left), settings_values(right));
  EXPECT_TRUE(parse_config("[processing]\nthreshold = 50\n", "h.toml").heads.empty());  // no [[head]]: the one head, as before
}

TEST(HeadsConfig, TheExampleParses) {
  const Config c = load_config(test::source_dir() + "/configs/multi-head.toml");
  ASSERT_EQ(c.heads.size(), 3u);
  EXPECT_TRUE(c.merge.enabled);
  EXPECT_EQ(c.heads[1].name, "centre");
  EXPECT_EQ(c.heads[2].config->pipeline.device, 1);
  EXPECT_EQ(c.heads[0].config->publisher.endpoint, "tcp://127.0.0.1:5561");
  EXPECT_EQ(c.heads[0].config->calibration.file, "calibration/left.toml");
  EXPECT_EQ(c.heads[0].config->daemon.rate, 1000.0);  // the process's [daemon], seen by every head
}

TEST(HeadsConfig, BadHeadKeysGiveOneLineNamingTheKey) {
  const std::string two = "[[head]]\nname = \"a\"\n[[head]]\nname = \"b\"\n";
  const std::pair<std::string, std::string> cases[] = {
      {two + "device = 99\n", "h.toml: head[1].device = 99 is out of range"},
      {two + "colour = 1\n", "h.toml: head[1].colour: unknown key"},
      {"[[head]]\nname = \"a\"\n[head.processing]\nthreshold = \"high\"\n", "h.toml: head[0].processing.threshold: expected an integer"},
      {"[[head]]\nname = \"a\"\n[head.processing]\nthreshhold = 3\n", "h.toml: head[0].processing.threshhold: unknown key"},
      {"[[head]]\nname = \"a\"\n[head.daemon]\nrate = 3\n", "h.toml: head[0].daemon: unknown key"},
      {"[[head]]\nname = \"a\"\nprocessing = 3\n", "h.toml: head[0].processing: expected a table"},
      {"[[head]]\ndevice = 1\n", "h.toml: head[0].name: is required"},
      {"[[head]]\nname = \"a b\"\n", "h.toml: head[0].name: 'a b' is not a head name"},
      {"[[head]]\nname = \"a\"\n[[head]]\nname = \"a\"\n", "h.toml: head[1].name: 'a' is the name of an earlier head"},
      {"[publisher]\nenabled = true\nendpoint = \"tcp://127.0.0.1:6001\"\n" + two, "h.toml: head[1].publisher.endpoint: 'tcp://127.0.0.1:6001' is an earlier head's"},
      {"[head]\nname = \"a\"\n", "h.toml: 'head' must be [[head]] sections"},
      {"[merge]\nenabled = true\ntransforms = \"t.toml\"\ngrid = \"0:10:1\"\n", "h.toml: merge.enabled: needs [[head]] sections"},
      {"[merge]\nenabled = true\ngrid = \"0:10:1\"\n" + two, "h.toml: merge.transforms: is required"},
      {"[merge]\nenabled = true\ntransforms = \"t.toml\"\ngrid = \"0:10:1\"\n" + two, "h.toml: head[0].publisher.enabled: must be true with [merge]"},
      {"[merge]\nenabled = true\ntransforms = \"t.toml\"\ngrid = \"0:10:1\"\nrange_map = \"m.png\"\n" + two, "h.toml: merge.range_map: 'm.png': expected a .tif"},
      {"[merge]\nenabled = true\ntransforms = \"t.toml\"\ngrid = \"0:10:1\"\nply = \"m.txt\"\n" + two, "h.toml: merge.ply: 'm.txt': expected a .ply"},
      {"[merge]\nenabled = true\ntransforms = \"t.toml\"\ngrid = \"0:10:1\"\nmax_pending_rows = 0\n" + two, "h.toml: merge.max_pending_rows: must be 1..1000000"},
      {"[merge]\nenabled = true\ntransforms = \"t.toml\"\ngrid = \"0:10:1\"\nrealtime_priority = 100\n" + two, "h.toml: merge.realtime_priority: must be 0 (off) or 1..99"},
      {"[merge]\nenabled = true\ntransforms = \"t.toml\"\ngrid = \"0:10:1\"\ncpus = \"1-x\"\n" + two, "h.toml: merge.cpus: '1-x' (expected CPU numbers"},
      {"[merge]\nenabled = true\ntransforms = \"t.toml\"\ngrid = \"0:10:1\"\ncpus = \"4096\"\n" + two, "h.toml: merge.cpus: '4096' (expected CPU numbers"},
      {"[merge]\nenabled = true\ntransforms = \"t.toml\"\ngrid = \"0:10:1\"\n[publisher]\nenabled = true\n[security]\ncurve = true\n"
       "server_secret_key = \"s.secret\"\nclient_keys = [\"c.pub\"]\n[[head]]\nname = \"a\"\n",
       "h.toml: head[0].security.curve: needs merge.client_key"},
  };
  for (const auto& [text, expected] : cases) {
    const std::string e = error_of(text);
    EXPECT_EQ(e.rfind(expected, 0), 0u) << "config:\n" << text << "gave: " << e << "\nexpected to start with: " << expected;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
}

TEST(HeadsDaemon, ABadHeadKeyExitsTwoWithOneLineNamingIt) {
  TempDir dir;
  write_text(dir / "d.toml", "[processing]\nbackend = \"cpu\"\n[[head]]\nname = \"a\"\n[[head]]\nname = \"b\"\ndevice = 64\n");
  std::string out;
  EXPECT_EQ(test::run_cli("daemon --config " + (dir / "d.toml").string(), &out), 2) << out;
  EXPECT_NE(out.find("head[1].device = 64 is out of range"), std::string::npos) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
}

// Three synthetic heads covering adjacent, overlapping parts of one scene, each
// with its stream, merged in the daemon: every head's rows accounted by the
// merge (sent = received + lost; merged + absent = rows), the merged series
// out on its own endpoint, every per-pipeline metric labelled by head.
TEST(HeadsDaemon, ThreeHeadsMergedEveryRowAccounted) {
  constexpr int kFrames = 600;
  TempDir dir;
  write_text(dir / "d.toml", three_heads_config(dir, kFrames));
  Child d({test::binary_path(), "daemon", "--config", (dir / "d.toml").string()});
  Subscriber merged(SubscriberOptions{"ipc://" + (dir / "merged.sock").string(), 100000, "", ""});
  const auto port = d.wait_for(R"(http: listening on http://127\.0\.0\.1:([0-9]+))", 30s);
  ASSERT_TRUE(port) << d.output();
  for (const char* h : {"a", "b", "c"}) ASSERT_TRUE(d.wait_for(std::string("head ") + h + ": ready", 30s)) << d.output();
  const auto line = d.wait_for(R"((merge: series complete: .*))", 60s);
  ASSERT_TRUE(line) << d.output();

  // The merge's own accounting line: per head sent = received + lost, and merged + absent = rows.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(*line, m, std::regex(R"(: (\d+) merged rows)"))) << *line;
  const std::uint64_t rows = std::stoull(m[1]);
  EXPECT_EQ(rows, static_cast<std::uint64_t>(kFrames)) << *line;
  const std::regex head_re(R"(head (\w): sent (\d+) = received (\d+) \+ lost (\d+), merged (\d+), late (\d+), unmatched (\d+), absent from (\d+))");
  int heads = 0;
  for (auto it = std::sregex_iterator(line->begin(), line->end(), head_re); it != std::sregex_iterator(); ++it, ++heads) {
    const auto v = [&](int i) { return std::stoull((*it)[i]); };
    EXPECT_EQ(v(2), static_cast<std::uint64_t>(kFrames)) << (*it)[0];
    EXPECT_EQ(v(2), v(3) + v(4)) << (*it)[0];
    EXPECT_EQ(v(5) + v(8), rows) << (*it)[0];
    EXPECT_GT(v(5), 0u) << (*it)[0];
  }
  EXPECT_EQ(heads, 3) << *line;

  // The merged stream: its series-end carries the same counts.
  std::optional<nlohmann::json> end;
  std::uint64_t merged_messages = 0;
  for (const auto deadline = std::chrono::steady_clock::now() + 20s; !end && std::chrono::steady_clock::now() < deadline;) {
    auto msg = merged.receive(200ms);
    if (!msg) continue;
    if (msg->topic == wire::Topic::Heightmap && msg->header.value("form", "") == "rectified") ++merged_messages;
    if (msg->topic == wire::Topic::SeriesEnd) end = msg->header;
  }
  ASSERT_TRUE(end) << "no merged series-end\n" << d.output();
  EXPECT_GT(merged_messages, 0u);
  EXPECT_EQ((*end)["merge"]["rows"].get<std::uint64_t>(), rows);

  // /metrics: the heads' families labelled, none unlabelled; the merge's per head.
  const auto [status, text] = http_get(std::stoi(*port), "/metrics");
  ASSERT_EQ(status, 200);
  const auto metrics = parse_metrics(text);
  for (const char* h : {"a", "b", "c"}) {
    const std::string l = std::string("head=\"") + h + "\"";
    EXPECT_EQ(metrics.at("stripeline_frames_acquired_total{" + l + "}"), kFrames) << text;
    EXPECT_EQ(metrics.at("stripeline_profiles_emitted_total{" + l + "}"), kFrames);
    EXPECT_EQ(metrics.at("stripeline_profiles_published_total{" + l + "}"), kFrames);
    EXPECT_GT(metrics.at("stripeline_batch_latency_seconds_count{" + l + "}"), 0);
    EXPECT_TRUE(metrics.count("stripeline_frame_latency_microseconds_bucket{" + l + ",le=\"+Inf\"}")) << text;
    EXPECT_EQ(metrics.at("stripeline_head_failures_total{" + l + "}"), 0);
    EXPECT_EQ(metrics.at("stripeline_merge_head_rows_total{" + l + ",kind=\"sent\"}"), kFrames);
    EXPECT_EQ(metrics.at("stripeline_merge_head_rows_total{" + l + ",kind=\"received\"}") +
                  metrics.at("stripeline_merge_head_rows_total{" + l + ",kind=\"lost\"}"),
              kFrames);
  }
  EXPECT_EQ(metrics.count("stripeline_frames_acquired_total"), 0u) << "an unlabelled per-pipeline family in a daemon of several heads";
  EXPECT_EQ(metrics.at("stripeline_merge_rows_total"), static_cast<double>(rows));
  EXPECT_EQ(metrics.at("stripeline_up"), 1);
  const auto [hs, health] = http_get(std::stoi(*port), "/healthz");
  EXPECT_EQ(hs, 200) << health;
  EXPECT_NE(health.find("head b: idle"), std::string::npos) << health;

  d.signal(SIGTERM);
  const auto code = d.wait_exit(25s);
  ASSERT_TRUE(code) << d.output();
  EXPECT_EQ(*code, 0) << d.output();
  EXPECT_NE(d.output().find("daemon: stopped: 3 heads"), std::string::npos) << d.output();
  // Each head's scan summary names the head, under its own file name.
  for (const char* h : {"a", "b", "c"}) {
    int found = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir / "scans")) {
      const std::string name = e.path().filename().string();
      if (name.find(std::string("-") + h + "-000001-scan.json") == std::string::npos) continue;
      ++found;
      std::ifstream in(e.path());
      const auto j = nlohmann::json::parse(in);
      EXPECT_EQ(j["rows"].get<int>(), kFrames) << name;
      EXPECT_EQ(j["source"].get<std::string>().rfind(std::string("head ") + h + ": ", 0), 0u) << j.dump();
    }
    EXPECT_EQ(found, 1) << h;
  }
}

// Three heads reading adjacent, overlapping 256-column windows (x0 = 0, 192,
// 384: 64 columns = 10 mm shared) of one 640-column recording of the synthetic
// scene, each with its own calibration (X from its own columns) and its
// head-to-world shift (-30, 0, +30 mm), merged in the daemon, which writes the
// merged series' range map and PLY: the range map equals the single-head scan
// of the whole recording (`stripeline replay --range-map` through the whole
// view's calibration, the same grid and rule) within the calibration's
// tolerance (0.05 mm, docs/scale-out.md), every row of every head accounted
// for (sent = received + lost, merged + absent = rows), the PLY one vertex per
// cell with data, and nothing left under a temporary name.
TEST(HeadsDaemon, ThreeHeadsMergedRangeMapAndPlyEqualTheWholeViewScan) {
  constexpr int kWhole = 640, kW = 256, kH = 32, kFrames = 48;
  const int x0[3] = {0, 192, 384};
  TempDir dir;
  SyntheticConfig sc;
  sc.width = kWhole, sc.frame_height = kH, sc.frames = kFrames, sc.seed = 11;
  const SyntheticScanner scene(sc);
  std::vector<std::uint8_t> whole(static_cast<std::size_t>(kWhole) * kH * kFrames);
  for (int f = 0; f < kFrames; ++f) scene.render(static_cast<std::uint64_t>(f), reinterpret_cast<std::byte*>(whole.data()) + static_cast<std::size_t>(f) * kWhole * kH);
  io::write_recording(dir / "whole.tif", whole.data(), kWhole, kH, kFrames, PixelFormat::Mono8);
  for (int h = 0; h < 3; ++h) {
    std::vector<std::uint8_t> part(static_cast<std::size_t>(kW) * kH * kFrames);
    for (std::size_t r = 0; r < static_cast<std::size_t>(kH) * kFrames; ++r)
      std::copy_n(whole.data() + r * kWhole + x0[h], kW, part.data() + r * kW);
    io::write_recording(dir / (std::string(1, static_cast<char>('a' + h)) + ".tif"), part.data(), kW, kH, kFrames, PixelFormat::Mono8);
  }
  const std::string common = "[processing]\nbackend = \"cpu\"\nbatch_frames = 16\n";
  std::ostringstream s;
  s << common << "[http]\nport = 0\n[source]\nkind = \"file\"\nframe_height = " << kH << "\npath = \"" << (dir / "a.tif").string() << "\"\n"
    << "[calibration]\nfile = \"" << write_calibration(dir, kW).string() << "\"\n"
    << "[output]\ndir = \"" << (dir / "scans").string() << "\"\nply = \"\"\nheightmap = \"\"\npreview = \"\"\nsummary = \"\"\n"
    << "[publisher]\nenabled = true\nrows_per_message = 8\nstats_interval = 0\nsend_hwm = 100000\n"
    << "[daemon]\nscan_rows = 1000000\npause = 0.0\nidle_close = 0.0\n"
    << "[merge]\nenabled = true\ntransforms = \"" << write_transforms(dir).string() << "\"\ngrid = \"-55:55:0.5\"\nwindow_ms = 3000\n"
    << "align = \"frame\"\nrange_map = \"merged.tif\"\nply = \"merged.ply\"\npublish = \"ipc://" << (dir / "merged.sock").string() << "\"\n";
  for (const char* name : {"a", "b", "c"})
    s << "[[head]]\nname = \"" << name << "\"\n[head.publisher]\nendpoint = \"ipc://" << (dir / (std::string(name) + ".sock")).string()
      << "\"\n[head.source]\npath = \"" << (dir / (std::string(name) + ".tif")).string() << "\"\n";
  write_text(dir / "d.toml", s.str());
  Child d({test::binary_path(), "daemon", "--config", (dir / "d.toml").string()});
  const auto line = d.wait_for(R"((merge: series complete: .*))", 60s);
  ASSERT_TRUE(line) << d.output();
  ASSERT_TRUE(d.wait_for(R"(merge: series 1: wrote .*merged\.ply)", 20s)) << d.output();
  d.signal(SIGTERM);
  const auto code = d.wait_exit(25s);
  ASSERT_TRUE(code) << d.output();
  EXPECT_EQ(*code, 0) << d.output();

  // Every row accounted for.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(*line, m, std::regex(R"(: (\d+) merged rows)"))) << *line;
  EXPECT_EQ(std::stoull(m[1]), static_cast<std::uint64_t>(kFrames)) << *line;
  const std::regex head_re(R"(head (\w): sent (\d+) = received (\d+) \+ lost (\d+), merged (\d+), late (\d+), unmatched (\d+), absent from (\d+))");
  int heads = 0;
  for (auto it = std::sregex_iterator(line->begin(), line->end(), head_re); it != std::sregex_iterator(); ++it, ++heads) {
    const auto v = [&](int i) { return std::stoull((*it)[i]); };
    EXPECT_EQ(v(2), static_cast<std::uint64_t>(kFrames)) << (*it)[0];
    EXPECT_EQ(v(2), v(3) + v(4)) << (*it)[0];
    EXPECT_EQ(v(5) + v(8), static_cast<std::uint64_t>(kFrames)) << (*it)[0];
    EXPECT_EQ(v(5), static_cast<std::uint64_t>(kFrames)) << "a row of a head at its own pace missed the 3 s window: " << (*it)[0];
  }
  EXPECT_EQ(heads, 3) << *line;

  // The files, under their per-series names, nothing half-written beside them.
  std::filesystem::path tif, ply;
  for (const auto& e : std::filesystem::directory_iterator(dir / "scans")) {
    const std::string name = e.path().filename().string();
    EXPECT_EQ(name.find(".tmp"), std::string::npos) << name;
    if (name.ends_with("-merge-000001-merged.tif")) tif = e.path();
    if (name.ends_with("-merge-000001-merged.ply")) ply = e.path();
  }
  ASSERT_FALSE(tif.empty()) << d.output();
  ASSERT_FALSE(ply.empty()) << d.output();
  const io::FloatPlanes merged = io::read_float_tiff(tif);

  // The single head seeing the whole recording, on the same grid.
  write_text(dir / "replay.toml", common + "[output]\ndir = \"" + (dir / "replay").string() + "\"\nply = \"\"\nheightmap = \"\"\npreview = \"\"\nsummary = \"\"\n");
  std::string out;
  ASSERT_EQ(test::run_cli("replay " + (dir / "whole.tif").string() + " -H " + std::to_string(kH) + " -q -c " + (dir / "replay.toml").string() +
                              " --calibration " + write_calibration(dir, kWhole, "whole").string() + " --range-map " + (dir / "whole-range.tif").string() +
                              " --range-grid -55:55:0.5 --range-rule mean",
                          &out),
            0)
      << out;
  const io::FloatPlanes single = io::read_float_tiff(dir / "whole-range.tif");
  ASSERT_EQ(merged.width, single.width);
  ASSERT_EQ(merged.height, single.height);
  ASSERT_EQ(merged.height, kFrames);
  double worst = 0, sum = 0;
  std::size_t both = 0, only_single = 0, only_merged = 0, with_data = 0;
  for (std::size_t i = 0; i < merged.planes[0].size(); ++i) {
    const float a = merged.planes[0][i], b = single.planes[0][i];
    with_data += !std::isnan(a);
    if (std::isnan(a) != std::isnan(b)) {
      (std::isnan(a) ? only_single : only_merged) += 1;
      continue;
    }
    if (std::isnan(a)) continue;
    ++both;
    worst = std::max(worst, static_cast<double>(std::abs(a - b)));
    sum += std::abs(a - b);
  }
  std::printf("[ merge ] daemon, 3 heads vs the whole-view replay: %zu cells in both, |dZ| mean %.5f mm, max %.5f mm; %zu only in the replay, %zu only merged\n",
              both, both ? sum / static_cast<double>(both) : 0.0, worst, only_single, only_merged);
  EXPECT_GT(both, static_cast<std::size_t>(kFrames) * 150);  // the 100 mm view at 0.5 mm: ~200 cells a row
  EXPECT_LT(worst, 0.05);  // the calibration's tolerance (docs/scale-out.md)
  EXPECT_LE(only_single + only_merged, both / 100) << "cells with data in one map and not the other";
  EXPECT_EQ(io::read_ply(ply).size(), with_data) << "one PLY vertex per merged cell with data";
}

// CURVE on each hop of the daemon's merge: the heads serve their streams with
// the top-level [security] (inherited), the merge subscribes to each as a
// CURVE client with merge.client_key (the heads' server public keys from
// their certificates), and the merged stream is served with the same
// [security]. With the merge's key listed, every row is merged and a listed
// consumer reads the merged series; with a key the heads do not list, the
// heads refuse the merge (logged), no row reaches it, and a consumer with an
// unlisted key gets nothing from the merged stream.
TEST(HeadsDaemon, CurveOnEachHopOfTheMergeLetsOnlyListedKeysIn) {
  if (!curve_available()) GTEST_SKIP() << "this libzmq was built without CURVE";
  constexpr int kFrames = 300;
  TempDir dir;
  for (const char* k : {"server", "merge", "consumer", "stranger"}) write_curve_keypair(dir / k);
  const std::string security = "[security]\ncurve = true\nserver_secret_key = \"" + (dir / "server.secret").string() + "\"\nclient_keys = [\"" +
                               (dir / "merge.pub").string() + "\", \"" + (dir / "consumer.pub").string() + "\"]\n";
  const auto run = [&](const std::string& merge_key, const std::string& consumer_key, bool expect_rows) {
    SCOPED_TRACE("merge key " + merge_key + ", consumer key " + consumer_key);
    write_text(dir / "d.toml", security + three_heads_config(dir, kFrames, "subscribe_timeout = 2.0\nclient_key = \"" + (dir / merge_key).string() + "\"\n"));
    Child d({test::binary_path(), "daemon", "--config", (dir / "d.toml").string()});
    Subscriber consumer(SubscriberOptions{"ipc://" + (dir / "merged.sock").string(), 100000, (dir / "server.pub").string(), (dir / consumer_key).string()});
    std::uint64_t rows = 0;
    bool ended = false;
    if (expect_rows) {
      ASSERT_TRUE(d.wait_for(R"(merge: series complete: )", 60s)) << d.output();
      for (const auto deadline = std::chrono::steady_clock::now() + 20s; !ended && std::chrono::steady_clock::now() < deadline;) {
        auto msg = consumer.receive(200ms);
        if (msg && msg->topic == wire::Topic::Heightmap) rows += msg->rows ? static_cast<std::uint64_t>(msg->rows->rows) : 0;
        if (msg && msg->topic == wire::Topic::SeriesEnd) ended = true;
      }
    } else {
      ASSERT_TRUE(d.wait_for(R"(publisher: CURVE client .* refused)", 30s)) << d.output();
      ASSERT_TRUE(d.wait_for(R"(the merge did not subscribe within merge.subscribe_timeout)", 30s)) << d.output();
      for (const auto deadline = std::chrono::steady_clock::now() + 2s; std::chrono::steady_clock::now() < deadline;)
        if (auto msg = consumer.receive(100ms); msg) ++rows;
    }
    d.signal(SIGTERM);
    const auto code = d.wait_exit(30s);
    ASSERT_TRUE(code) << d.output();
    EXPECT_EQ(*code, 0) << d.output();
    const std::string out = d.output();
    std::smatch m;
    ASSERT_TRUE(std::regex_search(out, m, std::regex(R"(merge: series (complete|stopped): (\d+) merged rows.*head a: sent (\d+) = received (\d+))"))) << out;
    if (expect_rows) {
      EXPECT_TRUE(ended) << "the listed consumer did not get the merged series-end";
      EXPECT_GT(rows, 0u) << "the listed consumer got no merged row";  // (it may connect after the first rows went out)
      EXPECT_EQ(std::stoull(m[2]), static_cast<std::uint64_t>(kFrames));
      EXPECT_EQ(std::stoull(m[4]), static_cast<std::uint64_t>(kFrames));
    } else {
      EXPECT_EQ(rows, 0u) << "an unlisted consumer read the merged stream";
      EXPECT_EQ(std::stoull(m[2]), 0u) << "rows reached a merge whose key the heads do not list";
      EXPECT_EQ(std::stoull(m[4]), 0u);
    }
  };
  run("merge.secret", "consumer.secret", true);
  run("stranger.secret", "stranger.secret", false);
}

// A head whose recording is corrupt goes down, logged and counted; the other
// two run on. SIGHUP restarts only it (down); SIGTERM drains the others.
TEST(HeadsDaemon, AHeadWhoseSourceFailsLeavesTheOthersRunning) {
  TempDir dir;
  write_text(dir / "corrupt.tif", "II*\0 this is not a TIFF");
  std::ostringstream s;
  s << "[synthetic]\nwidth = 256\nframe_height = 32\nframes = 0\n[processing]\nbackend = \"cpu\"\nbatch_frames = 20\n"
    << "[output]\ndir = \"" << (dir / "scans").string() << "\"\nply = \"\"\nheightmap = \"\"\npreview = \"\"\nsummary = \"scan.json\"\n"
    << "[daemon]\nscan_rows = 100000\nrate = 1000.0\n[http]\nport = 0\n"
    << "[[head]]\nname = \"a\"\n[[head]]\nname = \"bad\"\n[head.source]\nkind = \"file\"\npath = \"" << (dir / "corrupt.tif").string()
    << "\"\nframe_height = 32\n[[head]]\nname = \"c\"\n";
  write_text(dir / "d.toml", s.str());
  Child d({test::binary_path(), "daemon", "--config", (dir / "d.toml").string()});
  const auto port = d.wait_for(R"(http: listening on http://127\.0\.0\.1:([0-9]+))", 30s);
  ASSERT_TRUE(port) << d.output();
  ASSERT_TRUE(d.wait_for("head bad: (cannot start|the pipeline failed): .*corrupt.tif", 30s)) << d.output();
  ASSERT_TRUE(d.wait_for("head a: ready", 30s)) << d.output();
  ASSERT_TRUE(d.wait_for("head c: ready", 30s)) << d.output();

  const auto scrape = [&] { return parse_metrics(http_get(std::stoi(*port), "/metrics").second); };
  const auto m1 = scrape();
  std::this_thread::sleep_for(400ms);  // frames flow between the scrapes
  const auto m2 = scrape();
  for (const char* h : {"a", "c"}) {
    const std::string key = std::string("stripeline_frames_acquired_total{head=\"") + h + "\"}";
    EXPECT_GT(m2.at(key), m1.at(key)) << h << " stopped with the bad head";
    EXPECT_EQ(m2.at(std::string("stripeline_head_failures_total{head=\"") + h + "\"}"), 0);
    EXPECT_EQ(m2.at(std::string("stripeline_head_running{head=\"") + h + "\"}"), 1);
  }
  EXPECT_EQ(m2.at("stripeline_head_failures_total{head=\"bad\"}"), 1);
  EXPECT_EQ(m2.at("stripeline_head_running{head=\"bad\"}"), 0);
  EXPECT_EQ(m2.at("stripeline_frames_acquired_total{head=\"bad\"}"), 0);
  const auto [hs, health] = http_get(std::stoi(*port), "/healthz");
  EXPECT_EQ(hs, 503) << health;
  EXPECT_NE(health.find("head bad: down: "), std::string::npos) << health;
  EXPECT_NE(health.find("head a: ok"), std::string::npos) << health;
  EXPECT_EQ(http_get(std::stoi(*port), "/readyz").first, 503);
  EXPECT_EQ(http_get(std::stoi(*port), "/livez").first, 200);

  // SIGHUP, the file unchanged: only the head that is down restarts (and fails again).
  const std::size_t mark = d.output().size();
  d.signal(SIGHUP);
  ASSERT_TRUE(d.wait_for("SIGHUP: 1 of 3 heads restart", 20s, mark)) << d.output();
  ASSERT_TRUE(d.wait_for("head bad: (cannot start|the pipeline failed)", 20s, mark)) << d.output();
  EXPECT_EQ(scrape().at("stripeline_head_failures_total{head=\"bad\"}"), 2);
  EXPECT_EQ(d.output().find("head a: ready", mark), std::string::npos) << "a running head restarted on SIGHUP\n" << d.output();

  d.signal(SIGTERM);
  const auto code = d.wait_exit(25s);
  ASSERT_TRUE(code) << d.output();
  EXPECT_EQ(*code, 0) << d.output();
  int stopped = 0;  // a's and c's open scans finished as "stopped"
  for (const auto& e : std::filesystem::directory_iterator(dir / "scans")) {
    const std::string name = e.path().filename().string();
    EXPECT_EQ(name.find(".tmp"), std::string::npos) << name;
    if (name.size() < 9 || name.substr(name.size() - 9) != "scan.json") continue;
    std::ifstream in(e.path());
    if (nlohmann::json::parse(in)["reason"] == "stopped") ++stopped;
  }
  EXPECT_EQ(stopped, 2);
}

// GPU: two heads named for one GPU (device = 0 both), CUDA backend, beside a
// CPU head of the same scene: their scans' points and height maps equal the
// CPU's, bit for bit. Skips (visibly) without a GPU.
class HeadsDaemonGpu : public test::CudaTest {};

TEST_F(HeadsDaemonGpu, TwoHeadsOnDeviceZeroGiveTheCpuBackendsOutputs) {
  TempDir dir;
  std::ostringstream s;
  s << "[synthetic]\nwidth = 1000\nframe_height = 52\nframes = 257\nseed = 5\n[processing]\nbatch_frames = 32\n"
    << "[output]\ndir = \"" << (dir / "scans").string() << "\"\nply = \"scan.ply\"\nheightmap = \"hm.png\"\npreview = \"\"\nsummary = \"scan.json\"\n"
    << "[daemon]\nscan_rows = 100000\n[http]\nport = 0\n"
    << "[[head]]\nname = \"cpu\"\n[head.processing]\nbackend = \"cpu\"\n"
    << "[[head]]\nname = \"gpu0\"\ndevice = 0\n[head.processing]\nbackend = \"cuda\"\n"
    << "[[head]]\nname = \"gpu1\"\ndevice = 0\n[head.processing]\nbackend = \"cuda\"\n";
  write_text(dir / "d.toml", s.str());
  Child d({test::binary_path(), "daemon", "--config", (dir / "d.toml").string()});
  for (const char* h : {"cpu", "gpu0", "gpu1"}) {
    ASSERT_TRUE(d.wait_for(std::string("head ") + h + ": the source ended", 120s)) << d.output();
  }
  for (const char* h : {"gpu0", "gpu1"})
    EXPECT_TRUE(std::regex_search(d.output(), std::regex(std::string("head ") + h + R"(: ready: .* cuda backend \(device 0\))"))) << d.output();
  d.signal(SIGTERM);
  const auto code = d.wait_exit(25s);
  ASSERT_TRUE(code) << d.output();
  EXPECT_EQ(*code, 0) << d.output();
  const auto file = [&](const std::string& head, const std::string& name) {
    for (const auto& e : std::filesystem::directory_iterator(dir / "scans"))
      if (e.path().filename().string().find("-" + head + "-000001-" + name) != std::string::npos) return e.path();
    return std::filesystem::path();
  };
  const auto pixels = [](const std::filesystem::path& p) {
    auto r = io::open_image(p);
    std::vector<std::byte> px(static_cast<std::size_t>(r->info().width) * r->info().height * bytes_per_pixel(r->info().format));
    r->read_rows(px.data(), r->info().height);
    return px;
  };
  const auto cpu_points = io::read_ply(file("cpu", "scan.ply"));
  const auto cpu_hm = pixels(file("cpu", "hm.png"));
  ASSERT_GT(cpu_points.size(), 0u);
  for (const char* h : {"gpu0", "gpu1"}) {
    const auto points = io::read_ply(file(h, "scan.ply"));
    ASSERT_EQ(points.size(), cpu_points.size()) << h;
    for (std::size_t i = 0; i < points.size(); ++i) {
      ASSERT_EQ(points[i].x, cpu_points[i].x) << h << " vertex " << i;
      ASSERT_EQ(points[i].y, cpu_points[i].y) << h << " vertex " << i;
      ASSERT_EQ(points[i].z, cpu_points[i].z) << h << " vertex " << i;
      ASSERT_EQ(points[i].intensity, cpu_points[i].intensity) << h << " vertex " << i;
    }
    EXPECT_TRUE(pixels(file(h, "hm.png")) == cpu_hm) << h << ": the height map differs from the CPU head's";
  }
}
