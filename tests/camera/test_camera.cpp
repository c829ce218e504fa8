// Live acquisition against simulated GigE Vision cameras, end to end:
//  - Aravis' own simulated camera (arv-fake-gv-camera-0.8, Debian's
//    aravis-tools), started and killed by process id, whose image is a
//    documented diagonal ramp: pixel (x, y) of frame id n is (x + y + n) % 255
//    in Mono8, ((x + y + n) * 256) % 65535 in Mono16, times
//    1 + gain + log10(exposure_us / 10000). Every frame that reaches a sink as
//    valid is checked against it, pixel by pixel;
//  - stripeline's SimulatedCamera (the same protocol, our stripe as the
//    image), whose profiles are checked against the synthetic truth.
// Every test runs inside a private network namespace with loopback only
// (tests/camera/netns-run.sh, through ctest) and skips, saying why, outside
// one: GigE Vision discovery broadcasts. Streams use Aravis' socket path
// (camera.packet_socket = false): its packet socket does not see loopback.
// No test asserts a timing; the figures they measure are printed.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <net/if.h>
#include <spawn.h>
#include <sys/ioctl.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "acquisition/camera_source.h"
#include "acquisition/gentl/gentl_camera.h"
#include "acquisition/gvcp_probe.h"
#include "acquisition/simulated_camera.h"
#include "acquisition/synthetic_scanner.h"
#include "core/errors.h"
#include "pipeline/pipeline.h"
#include "streaming/publisher.h"
#include "../camera_checks.h"
#include "../child_process.h"
#include "../test_helpers.h"

extern char** environ;

using namespace stripeline;
using namespace std::chrono_literals;
using test::Child;
using test::TempDir;
using steady = std::chrono::steady_clock;

namespace {

// True inside a network namespace whose only interface is loopback (brought
// up here if it is down); otherwise says why not.
bool private_network(std::string* why) {
  if (const char* u = std::getenv("STRIPELINE_NETNS_UNAVAILABLE")) {
    *why = std::string("no private network namespace (") + u +
           "): the camera tests need one, because GigE Vision discovery broadcasts on every interface";
    return false;
  }
  struct if_nameindex* names = if_nameindex();
  if (!names) {
    *why = "cannot list the network interfaces";
    return false;
  }
  std::string others;
  for (struct if_nameindex* i = names; i->if_index != 0; ++i)
    if (std::string(i->if_name) != "lo") others += std::string(others.empty() ? "" : ", ") + i->if_name;
  if_freenameindex(names);
  if (!others.empty()) {
    *why = "interfaces " + others +
           " are visible: not inside a private network namespace, and GigE Vision discovery would broadcast on them. Run through "
           "ctest, or: tests/camera/netns-run.sh build/tests/camera_tests";
    return false;
  }
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ifreq r{};
  std::snprintf(r.ifr_name, sizeof r.ifr_name, "lo");
  bool up = fd >= 0 && ::ioctl(fd, SIOCGIFFLAGS, &r) == 0 && (r.ifr_flags & IFF_UP);
  if (fd >= 0 && !up) {
    r.ifr_flags = static_cast<short>(r.ifr_flags | IFF_UP);
    up = ::ioctl(fd, SIOCSIFFLAGS, &r) == 0;
  }
  if (fd >= 0) ::close(fd);
  if (!up) *why = "loopback is down and cannot be brought up";
  return up;
}

#define REQUIRE_PRIVATE_NETWORK()                    \
  do {                                               \
    std::string why_;                                \
    if (!private_network(&why_)) GTEST_SKIP() << why_; \
  } while (0)

std::optional<std::string> find_in_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':'))
    if (!dir.empty() && ::access((dir + "/" + name).c_str(), X_OK) == 0) return dir + "/" + name;
  return std::nullopt;
}

// Waits until a GigE Vision camera answers on 127.0.0.1.
bool camera_answers(std::chrono::milliseconds timeout) {
  const auto deadline = steady::now() + timeout;
  while (steady::now() < deadline)
    if (gvcp_read_register("127.0.0.1", kGvcpControlChannelPrivilege, 100ms, 1)) return true;
  return false;
}

// Aravis' simulated camera as a child process, stopped by its process id.
class FakeGvCamera {
 public:
  explicit FakeGvCamera(std::string serial, int lost_per_thousand = 0) : serial_(std::move(serial)), lost_(lost_per_thousand) {}
  ~FakeGvCamera() { kill(); }
  // Empty on success, else why it could not start.
  std::string start() {
    const auto exe = find_in_path("arv-fake-gv-camera-0.8");
    if (!exe) return "arv-fake-gv-camera-0.8 is not installed (Debian aravis-tools: scripts/setup-debian.sh --tests)";
    std::vector<std::string> args = {*exe, "-i", "127.0.0.1", "-s", serial_};
    if (lost_ > 0) args.insert(args.end(), {"-r", std::to_string(lost_)});
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    const int rc = posix_spawn(&pid_, exe->c_str(), &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) return "cannot start " + *exe + ": " + std::strerror(rc);
    if (!camera_answers(10s)) return "arv-fake-gv-camera-0.8 did not answer on 127.0.0.1 within 10 s";
    return {};
  }
  void kill() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    int st = 0;
    ::waitpid(pid_, &st, 0);
    pid_ = -1;
  }
  const std::string& serial() const { return serial_; }

 private:
  std::string serial_;
  int lost_;
  pid_t pid_ = -1;
};

#define START_OR_SKIP(cam)                         \
  do {                                             \
    const std::string e_ = (cam).start();          \
    if (!e_.empty()) GTEST_SKIP() << e_;           \
  } while (0)

CameraConfig loopback_camera(const std::string& serial, int width, int height, double rate, std::uint64_t frames) {
  CameraConfig c;
  c.id = serial;
  c.width = width;
  c.height = height;
  c.frame_rate = rate;
  c.frames = frames;
  c.packet_socket = false;  // Aravis' packet socket does not see loopback traffic
  c.exposure_us = 10000;    // the ramp's scale is 1 + gain + log10(exposure / 10000): make it 1
  c.gain = 0;
  return c;
}

// The camera frame id a row came from: the assembler unwraps GigE Vision's
// 16-bit ids (1..65535, then 1 again) into a 64-bit count.
std::uint64_t raw_id(std::uint64_t unwrapped) { return unwrapped <= 65535 ? unwrapped : (unwrapped - 1) % 65535 + 1; }

// Everything a sink saw, with every valid frame checked against Aravis' ramp.
// Sinks see profiles, not pixels: the pixels are checked as the source fills
// them, through watch(), which wraps the camera source for the pipeline.
class RampCheckingSink final : public ProfileSink {
 public:
  FrameSource& watch(FrameSource& inner) {
    watched_ = std::make_unique<Watch>(inner, *this);
    return *watched_;
  }
  void begin(const ScanInfo& info) override { layout = info.layout; }
  void consume(const ProfileSpan& p) override {
    for (int f = 0; f < p.frames; ++f) {
      const FrameMeta& m = p.meta[f];
      if (have_last && m.frame_id != last_id + 1) ++id_discontinuities;
      have_last = true;
      last_id = m.frame_id;
      ++rows;
      std::uint64_t points = 0;
      for (int x = 0; x < p.width; ++x) points += static_cast<std::uint64_t>(p.peaks(f, x));
      if (m.missing) {
        ++missing_rows;
        missing_points += points;
        continue;
      }
      valid_points += points;
    }
  }
  void finish() override {}

  BatchLayout layout;
  std::uint64_t rows = 0, missing_rows = 0, bad_pixels = 0, id_discontinuities = 0, missing_points = 0, valid_points = 0;
  bool have_last = false;
  std::uint64_t last_id = 0;

 private:
  void check_pixels(const Batch& b) {
    for (int f = 0; f < b.frames; ++f) {
      const FrameMeta& m = b.meta[f];
      if (m.missing) continue;
      const std::uint64_t n = raw_id(m.frame_id);
      for (int y = 0; y < b.layout.frame_height; ++y)
        for (int x = 0; x < b.layout.width; ++x) {
          const std::size_t i = static_cast<std::size_t>(y) * b.layout.width + x;
          if (b.layout.format == PixelFormat::Mono8) {
            const auto want = static_cast<std::uint8_t>((x + n + y) % 255);
            if (reinterpret_cast<const std::uint8_t*>(b.frame_data(f))[i] != want) ++bad_pixels;
          } else {
            const auto want = static_cast<std::uint16_t>((256 * x + 256 * n + 256 * y) % 65535);
            if (reinterpret_cast<const std::uint16_t*>(b.frame_data(f))[i] != want) ++bad_pixels;
          }
        }
    }
  }
  struct Watch final : FrameSource {
    Watch(FrameSource& in, RampCheckingSink& o) : inner(in), owner(o) {}
    BatchLayout frame_layout() const override { return inner.frame_layout(); }
    bool fill(Batch& b) override {
      const bool more = inner.fill(b);
      owner.check_pixels(b);
      return more;
    }
    std::optional<std::uint64_t> total_frames() const override { return inner.total_frames(); }
    SourceEnd end_reason() const override { return inner.end_reason(); }
    void request_stop() noexcept override { inner.request_stop(); }
    std::optional<AcquisitionCounters> acquisition_counters() const override { return inner.acquisition_counters(); }
    std::string describe() const override { return inner.describe(); }
    FrameSource& inner;
    RampCheckingSink& owner;
  };
  std::unique_ptr<Watch> watched_;
};

PipelineOptions cpu_pipeline(int batch_frames) {
  PipelineOptions o;
  o.backend = Backend::Cpu;
  o.batch_frames = batch_frames;
  o.buffers = 3;
  // Aravis' fake camera sends a ramp, not a stripe: the fixed-threshold cog
  // chain finds points on it (the adaptive default rightly finds none).
  o.chain.column.method = ColumnMethod::Cog;
  return o;
}

void print(const std::string& what) { std::printf("[   info   ] %s\n", what.c_str()); }

std::filesystem::path write_daemon_config(const TempDir& dir, const std::string& serial) {
  const auto config = dir.path() / "camera.toml";
  std::ofstream f(config);
  f << "[source]\nkind = \"camera\"\n"
    << "[camera]\nid = \"" << serial << "\"\nwidth = 512\nheight = 40\nframe_rate = 100\npacket_socket = false\nreconnect_interval = 0.2\n"
    << "[processing]\nbackend = \"cpu\"\nbatch_frames = 20\n"
    << "[output]\ndir = \"" << (dir.path() / "scans").string() << "\"\npreview = \"\"\nsummary = \"scan.json\"\n"
    << "[publisher]\nenabled = true\nendpoint = \"tcp://127.0.0.1:*\"\n"
    << "[http]\nport = 0\n"
    << "[daemon]\nscan_rows = 1000000\nidle_close = 0\npause = 0\n";
  return config;
}

// The scans' JSON sidecars, in scan order.
std::vector<nlohmann::json> read_scans(const std::filesystem::path& dir) {
  std::vector<nlohmann::json> scans;
  if (!std::filesystem::is_directory(dir)) return scans;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().string().ends_with("scan.json")) scans.push_back(nlohmann::json::parse(std::ifstream(e.path())));
  std::sort(scans.begin(), scans.end(), [](const auto& a, const auto& b) { return a["scan"] < b["scan"]; });
  return scans;
}

// /healthz and /metrics of a daemon on `port`, with deadlines.
struct DaemonProbe {
  int port;
  double metric(const std::string& name) const {
    const auto [code, body] = test::http_get(port, "/metrics");
    const auto m = test::parse_metrics(body);
    const auto it = m.find(name);
    return it == m.end() ? -1.0 : it->second;
  }
  bool wait_metric(const std::string& name, double at_least, std::chrono::seconds timeout) const {
    const auto deadline = steady::now() + timeout;
    while (steady::now() < deadline) {
      if (metric(name) >= at_least) return true;
      std::this_thread::sleep_for(50ms);
    }
    return false;
  }
  std::pair<int, std::string> wait_health(int code, const std::string& prefix, std::chrono::seconds timeout) const {
    const auto deadline = steady::now() + timeout;
    std::pair<int, std::string> h;
    while (steady::now() < deadline) {
      h = test::http_get(port, "/healthz");
      if (h.first == code && h.second.rfind(prefix, 0) == 0) return h;
      std::this_thread::sleep_for(50ms);
    }
    ADD_FAILURE() << "healthz never gave " << code << " " << prefix << "; last: " << h.first << " " << h.second;
    return h;
  }
};

}  // namespace

TEST(CameraDiscovery, CamerasListsTheSimulatedCameraWithModelSerialAndAddress) {
  REQUIRE_PRIVATE_NETWORK();
  FakeGvCamera cam("LIST01");
  START_OR_SKIP(cam);
  std::string out;
  ASSERT_EQ(test::run_cli("cameras", &out), 0) << out;
  EXPECT_NE(out.find("Aravis-Fake-LIST01"), std::string::npos) << out;
  EXPECT_NE(out.find("127.0.0.1"), std::string::npos) << out;
  EXPECT_NE(out.find("GigEVision"), std::string::npos) << out;
  ASSERT_EQ(test::run_cli("cameras --json --transport aravis", &out), 0) << out;  // aravis only: GenTL notes go to stderr
  const auto j = nlohmann::json::parse(out);
  ASSERT_EQ(j.size(), 1u) << out;
  EXPECT_EQ(j[0]["serial"], "LIST01");
  EXPECT_EQ(j[0]["model"], "Fake");
  EXPECT_EQ(j[0]["address"], "127.0.0.1");
}

// K frames from the camera through the whole pipeline into profiles. 400
// frames cross the simulated camera's 16-bit frame-id wrap (it starts at 65401).
TEST(CameraAcquisition, KFramesEndToEndIntoProfilesEveryValidFrameMatchesTheRamp) {
  REQUIRE_PRIVATE_NETWORK();
  FakeGvCamera cam("KFRAMES");
  START_OR_SKIP(cam);
  const std::uint64_t K = 400;
  auto source = open_camera(loopback_camera("KFRAMES", 2048, 52, 200, K), 64);
  EXPECT_EQ(source->frame_layout(), (BatchLayout{2048, 52, 0, PixelFormat::Mono8}));
  EXPECT_EQ(source->settings().serial, "KFRAMES");
  EXPECT_NEAR(source->settings().frame_rate, 200, 1);
  RampCheckingSink sink;
  Pipeline pipeline(cpu_pipeline(64));
  const PipelineStats stats = pipeline.run(sink.watch(*source), {&sink});
  const AcquisitionCounters a = *source->acquisition_counters();

  EXPECT_EQ(source->end_reason(), SourceEnd::Exhausted);
  EXPECT_EQ(sink.rows, K);
  EXPECT_EQ(stats.profiles, K);
  EXPECT_EQ(sink.bad_pixels, 0u) << "a frame passed as valid does not hold the camera's ramp";
  EXPECT_EQ(sink.id_discontinuities, 0u) << "rows must be consecutive frames: gaps are filled with missing rows";
  EXPECT_EQ(sink.missing_rows, a.lost_total() - a.gap_not_inserted);
  EXPECT_EQ(sink.missing_points, 0u);
  EXPECT_EQ(a.frames_complete + sink.missing_rows, K);
  EXPECT_GT(a.frames_complete, K / 2) << "the simulated camera delivered too few frames whole to mean anything";
  EXPECT_GT(sink.valid_points, 0u);
  print(fmt::format("{} frames of 2048x52 at 200 frames/s in {:.2f} s = {:.1f} frames/s; {} whole, {} lost ({} gap, {} incomplete, {} "
                    "timeout, {} failed)",
                    K, stats.seconds, K / stats.seconds, a.frames_complete, a.lost_total(), a.lost_gap, a.lost_incomplete,
                    a.lost_timeout, a.lost_failed));
}

TEST(CameraAcquisition, RoiAndMono16AreConfiguredAndReadBackAndFramesMatchTheRamp) {
  REQUIRE_PRIVATE_NETWORK();
  FakeGvCamera cam("ROI01");
  START_OR_SKIP(cam);
  CameraConfig c = loopback_camera("ROI01", 640, 48, 100, 60);
  c.offset_x = 32;
  c.offset_y = 16;
  c.pixel_format = "Mono16";
  auto source = open_camera(c, 16);
  const CameraSettings& s = source->settings();
  test::expect_region_as_asked(s, c);
  EXPECT_NEAR(s.exposure_us, 10000, 1);
  EXPECT_EQ(s.trigger, "free-run");
  EXPECT_EQ(source->frame_layout(), (BatchLayout{640, 48, 0, PixelFormat::Mono16}));
  RampCheckingSink sink;
  Pipeline pipeline(cpu_pipeline(16));
  pipeline.run(sink.watch(*source), {&sink});
  EXPECT_EQ(sink.rows, 60u);
  EXPECT_EQ(sink.layout.format, PixelFormat::Mono16);
  EXPECT_EQ(sink.bad_pixels, 0u);
  EXPECT_GT(sink.rows - sink.missing_rows, 30u);
}

TEST(CameraAcquisition, RefusedSettingsFailNamingTheKeyAndWhatTheCameraAllows) {
  REQUIRE_PRIVATE_NETWORK();
  FakeGvCamera cam("REFUSE1");
  START_OR_SKIP(cam);
  auto expect_config_error = [](CameraConfig c, const std::string& key, const std::string& detail) {
    try {
      open_camera(c, 16);
      ADD_FAILURE() << "no error for " << key;
    } catch (const ConfigError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find(key), std::string::npos) << m;
      EXPECT_NE(m.find(detail), std::string::npos) << m;
    }
  };
  const CameraConfig base = loopback_camera("REFUSE1", 512, 40, 50, 10);
  CameraConfig wide = base;
  wide.width = 4096;  // the simulated sensor is 2048 wide
  expect_config_error(wide, "camera.width", "2048");
  CameraConfig mono12 = base;
  mono12.pixel_format = "Mono12";  // it offers Mono8, Mono16 and colour formats
  expect_config_error(mono12, "camera.pixel_format", "Mono16");
  CameraConfig line7 = base;
  line7.trigger = TriggerMode::External;
  line7.trigger_source = "Line7";
  expect_config_error(line7, "camera.trigger_source", "Line0");
  CameraConfig chunks = base;
  chunks.encoder_chunk = "ChunkEncoderValue";
  expect_config_error(chunks, "camera.encoder_chunk", "chunk");
  // Not found is not a configuration error: the daemon waits for it.
  CameraConfig absent = base;
  absent.id = "NO-SUCH-CAMERA";
  EXPECT_THROW(open_camera(absent, 16), DeviceUnavailable);
}

// Packets dropped by the camera (-r: per thousand) make incomplete frames:
// each is counted and becomes a missing row; none reaches a sink as valid.
TEST(CameraAcquisition, InjectedPacketLossIsCountedBySizeAndMarkedNeverHidden) {
  REQUIRE_PRIVATE_NETWORK();
  FakeGvCamera cam("LOSSY1", 10);  // 1% of packets: about half of the 77-packet frames lose one
  START_OR_SKIP(cam);
  const std::uint64_t K = 300;
  auto source = open_camera(loopback_camera("LOSSY1", 2048, 52, 100, K), 50);
  RampCheckingSink sink;
  // The rows also go out over ZeroMQ to `stripeline subscribe`, which counts
  // the rows the stream marks missing.
  PublisherConfig pc;
  pc.endpoint = "tcp://127.0.0.1:*";
  pc.stats_interval = 0;
  Publisher pub(pc);
  Child subscriber({test::binary_path(), "subscribe", pub.endpoint(), "--timeout", "60"});
  ASSERT_TRUE(pub.wait_for_subscribers(1, 10s)) << subscriber.output();
  Pipeline pipeline(cpu_pipeline(50));
  pipeline.run(sink.watch(*source), {&sink, &pub});
  const AcquisitionCounters a = *source->acquisition_counters();
  ASSERT_EQ(subscriber.wait_exit(30s), std::optional<int>(0)) << subscriber.output();
  const auto received = subscriber.wait_for(R"(received (\d+) rows \((\d+) marked missing)", 1s);
  ASSERT_TRUE(received) << subscriber.output();
  std::smatch m;
  const std::string out = subscriber.output();
  ASSERT_TRUE(std::regex_search(out, m, std::regex(R"(received (\d+) rows \((\d+) marked missing)")));
  EXPECT_EQ(std::stoull(m[1]), K) << out;
  EXPECT_EQ(std::stoull(m[2]), sink.missing_rows) << "the stream does not mark every lost frame:\n" << out;
  EXPECT_EQ(sink.rows, K);
  EXPECT_GT(a.lost_total(), 0u) << "1% packet loss must lose frames";
  EXPECT_EQ(sink.missing_rows, a.lost_total() - a.gap_not_inserted);
  EXPECT_EQ(a.frames_complete + sink.missing_rows, K);
  EXPECT_EQ(sink.bad_pixels, 0u) << "an incomplete frame was passed on as valid";
  EXPECT_EQ(sink.missing_points, 0u) << "a missing row has points";
  EXPECT_EQ(sink.id_discontinuities, 0u);
  print(fmt::format("1% packets lost: {} of {} frames lost ({:.1f}%): {} incomplete, {} timeout, {} gap, {} failed; every one a missing row; {} arrived late",
                    a.lost_total(), K, 100.0 * a.lost_total() / K, a.lost_incomplete, a.lost_timeout, a.lost_gap, a.lost_failed,
                    a.arrived_late));
}

// stripeline's simulated camera films the synthetic stripe: frame id n shows
// synthetic frame n. Its profiles, acquired over GigE Vision, match the truth.
TEST(CameraAcquisition, SyntheticStripeThroughGigEVisionMatchesItsTruth) {
  REQUIRE_PRIVATE_NETWORK();
  SimulatedCameraConfig sc;
  sc.serial = "STRIPE1";
  std::unique_ptr<SimulatedCamera> sim;
  try {
    sim = std::make_unique<SimulatedCamera>(sc);
  } catch (const std::exception& e) {
    GTEST_SKIP() << "cannot start the simulated camera: " << e.what();
  }
  ASSERT_TRUE(camera_answers(5s));
  const int W = 2048, H = 52;
  const std::uint64_t K = 120;
  auto source = open_camera(loopback_camera("STRIPE1", W, H, 100, K), 40);

  SyntheticConfig truth_config = sc.scene;
  truth_config.width = W;
  truth_config.frame_height = H;
  const SyntheticScanner truth(truth_config);
  struct TruthSink final : ProfileSink {
    const SyntheticScanner* truth;
    double sum2 = 0;
    std::uint64_t scored = 0, detected = 0, rows = 0, valid_rows = 0;
    void begin(const ScanInfo&) override {}
    void finish() override {}
    void consume(const ProfileSpan& p) override {
      for (int f = 0; f < p.frames; ++f, ++rows) {
        if (p.meta[f].missing) continue;
        ++valid_rows;
        const std::uint64_t n = raw_id(p.meta[f].frame_id);
        for (int x = 2; x < p.width - 2; ++x) {
          // Score columns away from occlusion edges, steps and reflections (the blur mixes neighbours).
          bool clean = true;
          for (int dx = -2; dx <= 2 && clean; ++dx) {
            const double t = truth->truth(n, x + dx);
            clean = !std::isnan(t) && std::isnan(truth->reflection_row(n, x + dx)) && std::fabs(t - truth->truth(n, x)) < 0.5;
          }
          if (!clean) continue;
          ++scored;
          const std::int32_t pos = p.position[p.slot_index(f, 0, x)];
          if (p.peaks(f, x) == 0 || pos == kNoPeak) continue;
          ++detected;
          const double e = position_to_row(pos) - truth->truth(n, x);
          sum2 += e * e;
        }
      }
    }
  } sink;
  sink.truth = &truth;
  Pipeline pipeline(cpu_pipeline(40));  // the default chain: 5x5 blur, centre of gravity
  pipeline.run(*source, {&sink});
  ASSERT_EQ(sink.rows, K);
  ASSERT_GT(sink.valid_rows, K / 2);
  ASSERT_GT(sink.scored, 1000u);
  const double rms = std::sqrt(sink.sum2 / static_cast<double>(sink.detected));
  const double detection = static_cast<double>(sink.detected) / static_cast<double>(sink.scored);
  EXPECT_LT(rms, 0.1) << "stripe positions acquired live do not match the synthetic truth";
  EXPECT_GT(detection, 0.99);
  EXPECT_GE(sim->frames_rendered(), sink.valid_rows);
  print(fmt::format("stripe over GigE Vision: {} valid frames, RMS {:.4f} px over {} scored columns, detection {:.2f}%", sink.valid_rows,
                    rms, sink.scored, 100 * detection));
}

TEST(CameraAcquisition, SoftwareTriggerDeliversFramesAndAnIdleExternalTriggerIsNotALoss) {
  REQUIRE_PRIVATE_NETWORK();
  FakeGvCamera cam("TRIG01");
  START_OR_SKIP(cam);
  {
    CameraConfig c = loopback_camera("TRIG01", 512, 32, 50, 20);
    c.trigger = TriggerMode::Software;
    auto source = open_camera(c, 8);
    EXPECT_EQ(source->settings().trigger.rfind("software", 0), 0u) << source->settings().trigger;
    RampCheckingSink sink;
    Pipeline pipeline(cpu_pipeline(8));
    pipeline.run(sink.watch(*source), {&sink});
    EXPECT_EQ(sink.rows, 20u);
    EXPECT_EQ(sink.bad_pixels, 0u);
  }
  {
    CameraConfig c = loopback_camera("TRIG01", 512, 32, 0, 0);
    c.trigger = TriggerMode::External;
    c.trigger_source = "Line0";
    c.heartbeat_timeout = 0.6;  // the liveness probe runs every 0.1 s of silence
    auto source = open_camera(c, 8);
    EXPECT_EQ(source->settings().trigger, "external Line0 RisingEdge");
    std::thread stopper([&] {
      std::this_thread::sleep_for(1500ms);  // many probe periods without a frame
      source->request_stop();
    });
    Batch batch(BatchLayout{512, 32, 8, PixelFormat::Mono8}, allocate_host);
    const bool got = source->fill(batch);
    stopper.join();
    EXPECT_FALSE(got);
    EXPECT_EQ(source->end_reason(), SourceEnd::Stopped) << "a camera waiting for triggers was declared lost: " << source->loss_reason();
  }
}

TEST(CameraAcquisition, AKilledCameraIsDeclaredLostAndFramesBeforeAreKept) {
  REQUIRE_PRIVATE_NETWORK();
  FakeGvCamera cam("KILL01");
  START_OR_SKIP(cam);
  CameraConfig c = loopback_camera("KILL01", 512, 32, 100, 0);
  auto source = open_camera(c, 20);
  Batch batch(BatchLayout{512, 32, 20, PixelFormat::Mono8}, allocate_host);
  ASSERT_TRUE(source->fill(batch));
  EXPECT_GT(batch.frames, 0);
  cam.kill();
  const auto killed = steady::now();
  int batches = 0;
  while (source->fill(batch)) ++batches;
  const double seconds = std::chrono::duration<double>(steady::now() - killed).count();
  EXPECT_EQ(source->end_reason(), SourceEnd::DeviceLost);
  EXPECT_NE(source->loss_reason().find("127.0.0.1"), std::string::npos) << source->loss_reason();
  print(fmt::format("camera killed: declared lost {:.2f} s later ({:.2f} s after its last sign of life; heartbeat_timeout {} s), {} "
                    "batches handed on meanwhile",
                    seconds, source->loss_detection_seconds(), c.heartbeat_timeout, batches));
}

// The daemon, a user's view: kill the camera, /healthz says degraded; start
// it again, the daemon reconnects by itself, reapplies the configuration and
// starts a new series; SIGTERM finishes both scans' files.
TEST(CameraDaemon, SurvivesTheCameraBeingKilledAndRestarted) {
  REQUIRE_PRIVATE_NETWORK();
  FakeGvCamera cam("DAEMON1");
  START_OR_SKIP(cam);
  TempDir dir;
  const auto config = write_daemon_config(dir, "DAEMON1");
  Child d({test::binary_path(), "daemon", "-c", config.string()});
  const auto port_text = d.wait_for(R"(listening on http://127\.0\.0\.1:(\d+))", 20s);
  ASSERT_TRUE(port_text) << d.output();
  const int port = std::stoi(*port_text);
  ASSERT_TRUE(d.wait_for("daemon: ready", 20s)) << d.output();

  const DaemonProbe probe{port};
  auto metric = [&](const std::string& name) { return probe.metric(name); };
  auto wait_metric = [&](const std::string& name, double v, std::chrono::seconds t) { return probe.wait_metric(name, v, t); };
  auto wait_health = [&](int code, const std::string& prefix, std::chrono::seconds t) { return probe.wait_health(code, prefix, t); };

  ASSERT_TRUE(wait_metric("stripeline_frames_acquired_total", 50, 20s)) << d.output();
  wait_health(200, "ok", 5s);
  EXPECT_EQ(metric("stripeline_camera_connected"), 1);

  cam.kill();
  const auto degraded = wait_health(503, "degraded: camera", 30s);
  EXPECT_NE(degraded.second.find("reconnecting"), std::string::npos) << degraded.second;
  EXPECT_EQ(metric("stripeline_camera_losses_total"), 1);
  EXPECT_EQ(metric("stripeline_camera_connected"), 0);
  const double frames_before = metric("stripeline_frames_acquired_total");
  std::this_thread::sleep_for(700ms);  // a few failed reconnection attempts
  EXPECT_EQ(d.wait_exit(0ms), std::nullopt) << "the daemon exited without its camera:\n" << d.output();

  ASSERT_EQ(cam.start(), "");
  wait_health(200, "ok", 30s);
  ASSERT_TRUE(wait_metric("stripeline_frames_acquired_total", frames_before + 50, 20s)) << d.output();
  EXPECT_EQ(metric("stripeline_camera_reconnects_total"), 1);
  EXPECT_EQ(metric("stripeline_series_total"), 2) << "a reconnection starts a new series";
  EXPECT_GE(metric("stripeline_camera_loss_detection_seconds"), 0);
  const double detect = metric("stripeline_camera_loss_detection_seconds");

  d.signal(SIGTERM);
  ASSERT_EQ(d.wait_exit(20s), std::optional<int>(0)) << d.output();
  const auto scans = read_scans(dir.path() / "scans");
  ASSERT_EQ(scans.size(), 2u) << d.output();
  EXPECT_EQ(scans[0]["reason"], "camera-lost");
  EXPECT_EQ(scans[1]["reason"], "stopped");
  EXPECT_NE(scans[0]["series"], scans[1]["series"]);
  EXPECT_GT(scans[0]["rows"].get<int>(), 0);
  EXPECT_GT(scans[1]["rows"].get<int>(), 0);
  print(fmt::format("daemon: camera loss declared {:.2f} s after its last sign of life; reconnected with a new series", detect));
}

// Started before its camera: it waits, degraded (and keeps systemd's
// watchdog fed: a restart would not bring the camera back), and connects when
// the camera appears. A SIGTERM just after the camera dies, before the loss
// is even declared, still exits 0 at once with the scan complete on disk.
TEST(CameraDaemon, WaitsForAbsentCameraAndStopsCleanlyRightAfterItDies) {
  REQUIRE_PRIVATE_NETWORK();
  FakeGvCamera cam("LATE01");
  if (!find_in_path("arv-fake-gv-camera-0.8")) GTEST_SKIP() << "arv-fake-gv-camera-0.8 is not installed (aravis-tools)";
  TempDir dir;
  test::FakeSystemd systemd(dir.path() / "notify.sock");
  Child d({test::binary_path(), "daemon", "-c", write_daemon_config(dir, "LATE01").string()},
          {"NOTIFY_SOCKET=" + (dir.path() / "notify.sock").string(), "WATCHDOG_USEC=400000"});
  const auto port_text = d.wait_for(R"(listening on http://127\.0\.0\.1:(\d+))", 20s);
  ASSERT_TRUE(port_text) << d.output();
  const DaemonProbe probe{std::stoi(*port_text)};
  const auto waiting = probe.wait_health(503, "degraded: camera not available", 20s);
  EXPECT_NE(waiting.second.find("LATE01"), std::string::npos) << waiting.second;
  EXPECT_NE(systemd.index_of("READY=1"), -1) << "systemd would time the start out";
  const std::size_t before = systemd.messages().size();
  std::this_thread::sleep_for(1500ms);  // ~4 watchdog periods without a camera
  EXPECT_GE(systemd.count("WATCHDOG=1", before), 2u) << "no watchdog pings while waiting for the camera: systemd would restart the daemon";
  EXPECT_EQ(d.wait_exit(0ms), std::nullopt) << "the daemon gave up on an absent camera:\n" << d.output();

  ASSERT_EQ(cam.start(), "");
  probe.wait_health(200, "ok", 30s);
  ASSERT_TRUE(probe.wait_metric("stripeline_frames_acquired_total", 30, 20s)) << d.output();
  EXPECT_EQ(probe.metric("stripeline_camera_reconnects_total"), 0) << "a first connection is not a reconnection";

  cam.kill();
  std::this_thread::sleep_for(200ms);  // dead, not yet declared lost
  d.signal(SIGTERM);
  ASSERT_EQ(d.wait_exit(20s), std::optional<int>(0)) << d.output();
  const auto scans = read_scans(dir.path() / "scans");
  ASSERT_EQ(scans.size(), 1u) << d.output();
  EXPECT_GT(scans[0]["rows"].get<int>(), 0);
  for (const auto& e : std::filesystem::directory_iterator(dir.path() / "scans"))
    EXPECT_EQ(e.path().string().find(".tmp"), std::string::npos) << "half-written file left: " << e.path();
}

// A slow camera losing packets: a frame whose first packet was lost must not
// reach the assembler with a stale id (which once made a flushed batch come
// out empty and ended the acquisition early). Every one of K rows arrives.
TEST(CameraAcquisition, SlowLossyCameraDeliversEveryRow) {
  REQUIRE_PRIVATE_NETWORK();
  FakeGvCamera cam("SLOW01", 30);  // 3% of packets: most frames lose one
  START_OR_SKIP(cam);
  const std::uint64_t K = 40;
  CameraConfig c = loopback_camera("SLOW01", 2048, 52, 10, K);  // 10 frames/s: every batch is flushed by time
  c.flush_timeout = 0.05;
  auto source = open_camera(c, 16);
  RampCheckingSink sink;
  Pipeline pipeline(cpu_pipeline(16));
  pipeline.run(sink.watch(*source), {&sink});
  const AcquisitionCounters a = *source->acquisition_counters();
  EXPECT_EQ(source->end_reason(), SourceEnd::Exhausted);
  EXPECT_EQ(sink.rows, K) << "the acquisition ended early";
  EXPECT_EQ(sink.bad_pixels, 0u);
  EXPECT_EQ(sink.id_discontinuities, 0u);
  EXPECT_EQ(sink.missing_rows, a.lost_total() - a.gap_not_inserted);
  EXPECT_GT(a.lost_total(), 0u);
  print(fmt::format("10 frames/s, 3% packets lost: {} of {} frames lost ({} incomplete, {} gap), {} arrived late, {} batches flushed",
                    a.lost_total(), K, a.lost_incomplete, a.lost_gap, a.arrived_late, a.batches_flushed));
}

// The programs, as a user runs them: `stripeline simulate-camera` serves the
// synthetic stripe, `stripeline cameras` finds it, `stripeline run` acquires
// from it into a PLY, a height map and a summary with the loss counts.
TEST(CameraCli, RunAcquiresFromTheSimulatedStripeCameraIntoFiles) {
  REQUIRE_PRIVATE_NETWORK();
  Child sim({test::binary_path(), "simulate-camera", "-i", "127.0.0.1", "-s", "SIMCLI", "--seed", "7"});
  ASSERT_TRUE(sim.wait_for("serving on 127.0.0.1", 20s)) << sim.output();
  ASSERT_TRUE(camera_answers(10s));
  std::string out;
  ASSERT_EQ(test::run_cli("cameras", &out), 0) << out;
  EXPECT_NE(out.find("Aravis-Fake-SIMCLI"), std::string::npos) << out;

  TempDir dir;
  const auto config = dir.path() / "camera.toml";
  {
    std::ofstream f(config);
    f << "[source]\nkind = \"camera\"\n"
      << "[camera]\nid = \"SIMCLI\"\nwidth = 1024\nheight = 48\nframe_rate = 100\npacket_socket = false\nframes = 60\n"
      << "[processing]\nbackend = \"cpu\"\nbatch_frames = 25\n"
      << "[output]\ndir = \"" << (dir.path() / "out").string() << "\"\n";
  }
  ASSERT_EQ(test::run_cli("run -q -c " + config.string(), &out), 0) << out;
  EXPECT_NE(out.find("frames 60, profiles 60"), std::string::npos) << out;
  EXPECT_NE(out.find("camera: "), std::string::npos) << out;
  for (const char* name : {"scan.ply", "heightmap.png", "preview.png", "summary.json"})
    EXPECT_TRUE(std::filesystem::exists(dir.path() / "out" / name)) << name << "\n" << out;
  const auto summary = nlohmann::json::parse(std::ifstream(dir.path() / "out" / "summary.json"));
  ASSERT_TRUE(summary.contains("acquisition")) << summary.dump(2);
  const auto& a = summary["acquisition"];
  EXPECT_EQ(a["frames_complete"].get<std::uint64_t>() + a["lost_total"].get<std::uint64_t>() - a["gap_not_inserted"].get<std::uint64_t>(), 60u)
      << summary.dump(2);
  EXPECT_GT(summary["points"].get<std::uint64_t>(), 1024u * 30) << "the stripe should be found in most columns of most frames";
  EXPECT_NE(summary["source"].get<std::string>().find("SIMCLI"), std::string::npos);

  // camera.frames = 0 runs until Ctrl-C, which stops acquiring and finishes the files.
  std::filesystem::remove_all(dir.path() / "out");
  {
    std::string text;
    std::ifstream in(config);
    text.assign(std::istreambuf_iterator<char>(in), {});
    text.replace(text.find("frames = 60"), 11, "frames = 0");
    std::ofstream(config) << text;
  }
  Child endless({test::binary_path(), "run", "-c", config.string()});
  ASSERT_TRUE(endless.wait_for("acquiring from camera", 20s)) << endless.output();
  std::this_thread::sleep_for(1500ms);
  endless.signal(SIGINT);
  ASSERT_EQ(endless.wait_exit(20s), std::optional<int>(0)) << endless.output();
  const auto stopped = nlohmann::json::parse(std::ifstream(dir.path() / "out" / "summary.json"));
  EXPECT_GT(stopped["frames"].get<std::uint64_t>(), 0u) << stopped.dump(2);
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "out" / "scan.ply"));

  sim.signal(SIGTERM);
  ASSERT_EQ(sim.wait_exit(10s), std::optional<int>(0)) << sim.output();
  EXPECT_NE(sim.output().find("frames rendered"), std::string::npos) << sim.output();
}

// ---------------------------------------------------------------------------
// One set of configurator tests for both camera paths (the GenICam
// configurator, acquisition/genicam_configurator.h): Aravis' simulated GigE
// Vision camera, and a camera behind the simulated GenTL frame grabber
// (stripeline-sim.cti). Each path opens a source for a [camera] section; the
// tests assert what both must do alike: read-back, refusals naming the key
// and what the camera allows, the bounds check of every integer feature,
// the trigger reset (a camera left triggered streams again free-running),
// the software trigger, camera.features last.
namespace {

struct AravisPath {
  static constexpr const char* kName = "Aravis (arv-fake-gv-camera-0.8)";
  std::unique_ptr<FakeGvCamera> camera;
  // Empty when ready, else why the path cannot run here.
  std::string start() {
    std::string why;
    if (!private_network(&why)) return why;
    camera = std::make_unique<FakeGvCamera>("CONFIG1");
    return camera->start();
  }
  std::unique_ptr<CameraSource> open(CameraConfig c, int batch) {
    c.id = "CONFIG1";
    c.packet_socket = false;
    return open_camera(c, batch);
  }
  static constexpr int kSensorWidth = 2048;
};

struct GenTLPath {
  static constexpr const char* kName = "GenTL (stripeline-sim.cti)";
  std::string start() { return gentl_support_built() ? "" : "this build has no GenTL consumer"; }
  std::unique_ptr<CameraSource> open(CameraConfig c, int batch) {
    c.transport = "gentl";
    GenTLConfig g;
    g.cti = STRIPELINE_GENTL_SIM_CTI;
    g.frames_per_buffer = 1;  // one frame per buffer, as a camera sends them
    return open_gentl_camera(c, g, batch);
  }
  static constexpr int kSensorWidth = 4096;
};

template <class Path>
class CameraConfigurator : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = path.start();
    if (!why.empty()) GTEST_SKIP() << Path::kName << ": " << why;
  }
  static CameraConfig base(std::uint64_t frames = 0) {
    return CameraConfig{.width = 512, .height = 40, .exposure_us = 10000, .gain = 0, .frame_rate = 200, .frames = frames};
  }
  // The ConfigError a configuration gets, or "" (a failure is added).
  std::string refusal(const CameraConfig& c) {
    try {
      path.open(c, 8);
      ADD_FAILURE() << Path::kName << ": no error";
    } catch (const ConfigError& e) {
      return e.what();
    }
    return {};
  }
  // Rows the source delivers until it has its camera.frames (a partial batch
  // flushed on the way counts too); stopped after 20 s if frames never come.
  static int frames_delivered(CameraSource& source, int batch) {
    Batch b(BatchLayout{source.frame_layout().width, source.frame_layout().frame_height, batch, source.frame_layout().format}, allocate_host);
    std::atomic<bool> done{false};
    std::thread watchdog([&] {
      const auto deadline = steady::now() + 20s;
      while (!done.load() && steady::now() < deadline) std::this_thread::sleep_for(10ms);
      if (!done.load()) source.request_stop();
    });
    int total = 0;
    while (source.fill(b)) total += b.frames;
    done = true;
    watchdog.join();
    return total;
  }
  Path path;
};

using CameraPaths = ::testing::Types<AravisPath, GenTLPath>;
TYPED_TEST_SUITE(CameraConfigurator, CameraPaths);

}  // namespace

TYPED_TEST(CameraConfigurator, RegionFormatExposureAreReadBackAsAsked) {
  CameraConfig c = this->base(16);
  c.offset_x = 32;
  c.offset_y = 8;
  c.pixel_format = "Mono16";
  auto source = this->path.open(c, 8);
  const CameraSettings& s = source->settings();
  test::expect_region_as_asked(s, c);
  EXPECT_NEAR(s.exposure_us, 10000, 10);
  EXPECT_NEAR(s.frame_rate, 200, 2);
  EXPECT_EQ(s.trigger, "free-run");
  EXPECT_EQ(source->frame_layout(), (BatchLayout{512, 40, 0, PixelFormat::Mono16}));
  EXPECT_EQ(this->frames_delivered(*source, 8), 16) << "camera.frames";
}

TYPED_TEST(CameraConfigurator, EveryIntegerFeatureIsBoundsCheckedNamingTheKey) {
  CameraConfig wide = this->base();
  wide.width = TypeParam::kSensorWidth + 64;
  std::string m = this->refusal(wide);
  EXPECT_NE(m.find("camera.width"), std::string::npos) << m;
  EXPECT_NE(m.find(fmt::format("..{}", TypeParam::kSensorWidth)), std::string::npos) << m;
  EXPECT_NE(m.find("in steps of"), std::string::npos) << m;
  CameraConfig right = this->base();
  right.offset_x = TypeParam::kSensorWidth + 1;  // beyond the sensor
  m = this->refusal(right);
  EXPECT_NE(m.find("camera.offset_x"), std::string::npos) << m;
}

TYPED_TEST(CameraConfigurator, RefusedSettingsNameTheKeyAndWhatTheCameraOffers) {
  CameraConfig mono12 = this->base();
  mono12.pixel_format = "Mono12";  // neither offers it
  std::string m = this->refusal(mono12);
  EXPECT_NE(m.find("camera.pixel_format"), std::string::npos) << m;
  EXPECT_NE(m.find("Mono16"), std::string::npos) << m;
  CameraConfig line7 = this->base();
  line7.trigger = TriggerMode::External;
  line7.trigger_source = "Line7";
  m = this->refusal(line7);
  EXPECT_NE(m.find("camera.trigger_source"), std::string::npos) << m;
  EXPECT_NE(m.find("Software"), std::string::npos) << m;
  CameraConfig unknown = this->base();
  unknown.features = {"NoSuchFeature=1"};
  m = this->refusal(unknown);
  EXPECT_NE(m.find("camera.features"), std::string::npos) << m;
  EXPECT_NE(m.find("NoSuchFeature"), std::string::npos) << m;
}

// A camera left triggered by a previous session streams free-running again:
// the configurator switches every trigger off first.
TYPED_TEST(CameraConfigurator, SoftwareTriggerDeliversAndTheNextOpeningResetsTheTrigger) {
  {
    CameraConfig c = this->base(8);
    c.trigger = TriggerMode::Software;
    auto source = this->path.open(c, 8);
    EXPECT_EQ(source->settings().trigger.rfind("software", 0), 0u) << source->settings().trigger;
    EXPECT_EQ(this->frames_delivered(*source, 8), 8);
  }
  auto source = this->path.open(this->base(8), 8);
  EXPECT_EQ(source->settings().trigger, "free-run");
  EXPECT_EQ(this->frames_delivered(*source, 8), 8) << "no frames: the camera was left waiting for triggers";
}
