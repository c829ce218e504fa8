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
#include "io/image_reader.h"
#include "io/ply_writer.h"
#include "streaming/subscriber.h"
#include "child_process.h"
#include "gpu_test.h"
#include "test_helpers.h"

using namespace stripeline;
using namespace std::chrono_literals;
using test::Child;
using test::http_get;
using test::parse_metrics;
using test::TempDir;

namespace {

std::string error_of(const std::string& text) {
  try {
    parse_config(text, "h.toml");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

void write_text(const std::filesystem::path& p, const std::string& text) { std::ofstream(p) << text; }

// A sheet-of-light calibration of the synthetic scanner's 256 x 32 frames:
// X across the view (-20..20 mm), Z from the row. Only its shape matters here.
std::filesystem::path write_calibration(const TempDir& dir) {
  CalibrationFile f;
  f.model.kind = SheetOfLightModel::Kind::SheetOfLight;
  f.model.unit = "mm";
  f.model.cu = 128, f.model.cv = 16, f.model.scale = 128;
  const double h[9] = {20, 0, 0, 0, 20, 0, 0, 0, 1};
  std::copy(h, h + 9, f.model.homography);
  f.sensor_width = 256, f.sensor_height = 32;
  f.roi = {0, 0, 256, 32};
  f.y_step_mm = 0.1;
  f.sync_motion();
  f.id = model_id(f.model);
  const auto path = dir / "head.calibration.toml";
  write_text(path, format_calibration(f));
  return path;
}

// Three heads 30 mm apart, 40 mm wide each: adjacent views overlapping by 10 mm.
std::filesystem::path write_transforms(const TempDir& dir) {
  HeadTransforms t;
  for (int i = 0; i < 3; ++i) t.heads.push_back(HeadTransform::in_plane(std::string(1, static_cast<char>('a' + i)), 0.0, 30.0 * (i - 1), 0.0));
  const auto path = dir / "transforms.toml";
  save_head_transforms(path, t);
  return path;
}

std::string three_heads_config(const TempDir& dir, int frames) {
  std::ostringstream s;
  s << "[synthetic]\nwidth = 256\nframe_height = 32\nframes = " << frames << "\n"
    << "[processing]\nbackend = \"cpu\"\nbatch_frames = 20\n"
    << "[calibration]\nfile = \"" << write_calibration(dir).string() << "\"\n"
    << "[output]\ndir = \"" << (dir / "scans").string() << "\"\nply = \"\"\nheightmap = \"\"\npreview = \"\"\nsummary = \"scan.json\"\n"
    << "[publisher]\nenabled = true\nrows_per_message = 8\nstats_interval = 0\nsend_hwm = 100000\n"
    << "[daemon]\nscan_rows = 1000000\nrate = 1500.0\npause = 0.0\nidle_close = 0.0\n"
    << "[http]\nport = 0\n"
    << "[merge]\nenabled = true\ntransforms = \"" << write_transforms(dir).string() << "\"\ngrid = \"-55:55:0.5\"\nwindow_ms = 2000\n"
    << "publish = \"ipc://" << (dir / "merged.sock").string() << "\"\n";
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
