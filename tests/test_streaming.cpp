// Streaming: the wire format on its own, then the publisher sink on loopback
// (every row in order; a slow subscriber costs counted drops, not pipeline
// time; CURVE with an allowed and an unknown client), the streaming config
// sections, and the Python example. Loopback only, ephemeral ports, and
// every wait has a deadline.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <thread>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "acquisition/synthetic_scanner.h"
#include "core/errors.h"
#include "io/image_reader.h"
#include "io/ply_writer.h"
#include "app/config.h"
#include "app/sources.h"
#include "pipeline/pipeline.h"
#include "pipeline/file_sinks.h"
#include "streaming/proxy.h"
#include "streaming/publisher.h"
#include "stages/heightmap_filters.h"
#include "streaming/wire_format.h"
#include "test_helpers.h"
#include "wire_receive.h"

using namespace stripeline;
using namespace std::chrono_literals;
using test::TempDir;

namespace {

using steady = std::chrono::steady_clock;

SyntheticConfig scan(int width, int height, std::uint64_t frames) {
  SyntheticConfig c;
  c.width = width;
  c.frame_height = height;
  c.frames = frames;
  return c;
}

PipelineOptions cpu_options(int batch_frames) {
  PipelineOptions o;
  o.backend = Backend::Cpu;
  o.batch_frames = batch_frames;
  return o;
}

PublisherConfig loopback(int rows_per_message = 4) {
  PublisherConfig c;
  c.endpoint = "tcp://127.0.0.1:*";
  c.rows_per_message = rows_per_message;
  c.stats_interval = 0;
  return c;
}

// Keeps the primary position of every profile.
class Positions final : public ProfileSink {
 public:
  void begin(const ScanInfo&) override {}
  void consume(const ProfileSpan& p) override {
    for (int f = 0; f < p.frames; ++f)
      for (int x = 0; x < p.width; ++x) rows.push_back(p.peaks(f, x) ? p.position[p.slot_index(f, 0, x)] : kNoPeak);
  }
  void finish() override {}
  std::vector<std::int32_t> rows;
};

// A subscriber on its own thread: collects decoded messages until series-end
// or its deadline; `delay` per message makes it deliberately slow.
class Subscriber {
 public:
  Subscriber(const std::string& endpoint, std::chrono::microseconds delay = 0us, int rcvhwm = 1000,
             std::function<void(zmq::socket_t&)> setup = {})
      : sock_(ctx_, zmq::socket_type::sub), delay_(delay) {
    sock_.set(zmq::sockopt::rcvhwm, rcvhwm);
    sock_.set(zmq::sockopt::linger, 0);
    if (delay > 0us) sock_.set(zmq::sockopt::rcvbuf, 64 * 1024);
    if (setup) setup(sock_);
    sock_.connect(endpoint);
    sock_.set(zmq::sockopt::subscribe, "");
  }
  void start(std::chrono::seconds limit) {
    thread_ = std::thread([this, limit] {
      const auto deadline = steady::now() + limit;
      while (steady::now() < deadline && !done) {
        auto m = test::receive_decoded(sock_, 50ms);
        if (!m) continue;
        messages.push_back(std::move(*m));
        if (messages.back().topic == wire::Topic::SeriesEnd) done = true;
        if (delay_ > 0us) std::this_thread::sleep_for(delay_);
      }
    });
  }
  void join() {
    if (thread_.joinable()) thread_.join();
  }
  ~Subscriber() { join(); }

  std::vector<wire::Decoded> messages;
  std::atomic<bool> done{false};

 private:
  zmq::context_t ctx_{1};
  zmq::socket_t sock_;
  std::chrono::microseconds delay_;
  std::thread thread_;
};

// The set-up of a CURVE client socket: the server's public key, this client's keys (Z85).
std::function<void(zmq::socket_t&)> curve_client(const std::string& server_public, const std::string& client_public,
                                                 const std::string& client_secret) {
  return [=](zmq::socket_t& s) {
    s.set(zmq::sockopt::curve_serverkey, server_public);
    s.set(zmq::sockopt::curve_publickey, client_public);
    s.set(zmq::sockopt::curve_secretkey, client_secret);
  };
}

std::uint64_t rows_received(const std::vector<wire::Decoded>& msgs) {
  std::uint64_t n = 0;
  for (const auto& m : msgs)
    if (m.topic == wire::Topic::Profile) n += static_cast<std::uint64_t>(m.rows->rows);
  return n;
}

ProfileBatch profiles_for(const Batch& b, int slots) {
  ProfileBatch p(b.layout.width, b.layout.frames, slots, &allocate_host);
  p.frames = b.frames;
  p.first_index = b.first_index;
  p.meta = b.meta;
  std::memset(p.count, 0, static_cast<std::size_t>(b.layout.frames) * b.layout.width);
  return p;
}

}  // namespace

TEST(WireFormat, RowsRoundTripWithNaNForNoDetectionAndCalibration) {
  Batch b = test::make_batch<std::uint8_t>(5, 8, 3);
  for (int f = 0; f < 3; ++f) {
    b.meta[f].frame_id = 100 + f;
    b.meta[f].timestamp_ns = 1000 * f;
    b.meta[f].encoder = 4 * f;
    b.meta[f].has_encoder = f != 1;
  }
  b.meta[2].missing = true;
  ProfileBatch p = profiles_for(b, 2);
  for (int f = 0; f < 3; ++f)
    for (int x = 0; x < 5; ++x) {
      p.count[f * 5 + x] = static_cast<std::uint8_t>((x + f) % 3);  // 0, 1 or 2 peaks
      for (int s = 0; s < 2; ++s) {
        const auto i = p.slot_index(f, s, x);
        p.position[i] = 256 * (f + x) + 64 * s + 3;
        p.intensity[i] = static_cast<std::uint16_t>(1000 + i);
        p.stripe_width[i] = static_cast<std::uint16_t>(i % 7);
        p.quality[i] = static_cast<std::uint16_t>(500 + i);
      }
    }
  LinearCalibration cal;
  cal.enabled = true;
  cal.z_scale = 0.5;
  cal.z_offset = 2.0;
  wire::RowBlock rows;
  rows.clear(5, 2);
  rows.append(p.span(), 1, 2, ProfileMapping(cal, kDefaultHeightCodeBits), 41);
  auto header = wire::base_header(wire::Topic::Profile, "abc", 7);
  header["calibration"] = wire::calibration_json(cal);
  const auto enc = wire::encode_rows(wire::Topic::Profile, header, rows).strings();
  ASSERT_EQ(enc.size(), 6u);
  EXPECT_EQ(enc[0], "profile");
  const auto d = wire::decode(enc);
  EXPECT_EQ(d.seq, 7u);
  EXPECT_EQ(d.series, "abc");
  EXPECT_EQ(d.header["htype"], std::string("stripeline-profile-") + wire::kFormatVersion);
  ASSERT_TRUE(d.rows);
  const auto& r = *d.rows;
  EXPECT_EQ(r.rows, 2);
  EXPECT_EQ(r.series_row, 41u);
  EXPECT_EQ(r.index, 1u);
  EXPECT_EQ(r.frame_ids, (std::vector<std::uint64_t>{101, 102}));
  EXPECT_FALSE(r.encoder[0].has_value());
  EXPECT_EQ(r.encoder[1].value(), 8);
  EXPECT_EQ(r.missing, (std::vector<std::uint8_t>{0, 1}));
  for (int rr = 0; rr < 2; ++rr)
    for (int s = 0; s < 2; ++s)
      for (int x = 0; x < 5; ++x) {
        const int f = rr + 1;
        const std::size_t o = (static_cast<std::size_t>(rr) * 2 + s) * 5 + x;
        if (s < p.peaks(f, x)) {
          const auto i = p.slot_index(f, s, x);
          EXPECT_FLOAT_EQ(r.z[o], static_cast<float>(0.5 * (p.position[i] / 256.0) + 2.0));
          EXPECT_EQ(r.intensity[o], p.intensity[i]);
          EXPECT_EQ(r.quality[o], p.quality[i]);
        } else {
          EXPECT_TRUE(std::isnan(r.z[o])) << "frame " << f << " slot " << s << " column " << x;
          EXPECT_EQ(r.intensity[o], 0);
          EXPECT_EQ(r.quality[o], 0);
        }
      }
  EXPECT_TRUE(d.calibration.enabled);
  EXPECT_DOUBLE_EQ(d.calibration.z_scale, 0.5);
}

// series-start's sheet_calibration carries the whole model: a subscriber maps
// the rows to the same millimetres as the publisher's files.
static std::vector<double> model_values(const SheetOfLightModel& m) {
  std::vector<double> v = {m.cu, m.cv, m.scale, m.y_step, m.y_offset, m.skew_about_x_deg, m.skew_about_z_deg, m.y_from_encoder ? 1.0 : 0.0,
                           m.kind == SheetOfLightModel::Kind::Linear ? 1.0 : 0.0};
  v.insert(v.end(), m.distortion, m.distortion + sol::kDistortionCount);
  v.insert(v.end(), m.homography, m.homography + 9);
  return v;
}

TEST(WireFormat, SheetCalibrationRoundTripsBitIdentical) {
  AppliedCalibration c;
  c.model.kind = SheetOfLightModel::Kind::SheetOfLight;
  c.model.unit = "mm";
  c.model.cu = 1023.5, c.model.cv = 543.25, c.model.scale = 1024.0;
  const double h[9] = {50.0 / 3.0, 0.1, 0.2, -0.3, -95.0, 12.0, 0.01, 0.35, 1.0};
  for (int i = 0; i < 9; ++i) c.model.homography[i] = h[i];
  c.model.distortion[0] = -0.081234567890123;
  c.model.distortion[4] = 1e-5;
  c.model.y_step = 0.1, c.model.y_offset = -2.0, c.model.y_from_encoder = true;
  c.model.skew_about_x_deg = 0.75;
  c.roi_x = 16, c.roi_y = 412;
  c.id = "0123456789abcdef", c.file = "cal.toml", c.file_sha = "feedbeef00000000";
  const nlohmann::json j = nlohmann::json::parse(wire::sheet_calibration_json(c).dump());
  const auto back = wire::sheet_calibration_from_json(j);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->id, c.id);
  EXPECT_EQ(back->file_sha, c.file_sha);
  EXPECT_EQ(back->roi_x, 16);
  EXPECT_EQ(back->roi_y, 412);
  EXPECT_EQ(model_values(back->model), model_values(c.model));
  EXPECT_FALSE(wire::sheet_calibration_from_json(nlohmann::json{{"model", "sheet-of-light"}}));
  EXPECT_FALSE(wire::sheet_calibration_from_json(nlohmann::json()));
}

TEST(WireFormat, MalformedMessagesAreRejected) {
  wire::RowBlock rows;
  rows.clear(4, 1);
  struct Parts {
    std::vector<std::string> parts;
  };
  const Parts good{wire::encode_rows(wire::Topic::Profile, wire::base_header(wire::Topic::Profile, "s", 0), rows).strings()};
  EXPECT_NO_THROW(wire::decode(good.parts));
  // A 1.0 message (no quality part) still decodes, with zero quality.
  auto v10 = good;
  v10.parts.pop_back();
  const auto old = wire::decode(v10.parts);
  ASSERT_TRUE(old.rows);
  EXPECT_EQ(old.rows->quality.size(), old.rows->intensity.size());
  auto short_msg = v10;
  short_msg.parts.pop_back();
  EXPECT_THROW(wire::decode(short_msg.parts), InputError);
  auto bad_json = good;
  bad_json.parts[1] = "{not json";
  EXPECT_THROW(wire::decode(bad_json.parts), InputError);
  auto v2 = good;
  auto h = nlohmann::json::parse(v2.parts[1]);
  h["htype"] = "stripeline-profile-2.0";
  v2.parts[1] = h.dump();
  EXPECT_THROW(wire::decode(v2.parts), InputError);
  EXPECT_THROW(wire::decode(std::vector<std::string>{"nonsense", "{}"}), InputError);
  EXPECT_THROW(wire::decode(std::vector<std::string>{"profile"}), InputError);
}

TEST(WireFormat, GapTrackerReportsEveryGapExactly) {
  wire::GapTracker g;
  for (std::uint64_t s : {0, 1, 2, 5, 6, 10}) g.observe("a", s);
  ASSERT_EQ(g.gaps().size(), 2u);
  EXPECT_EQ(g.gaps()[0].first_missing, 3u);
  EXPECT_EQ(g.gaps()[0].count, 2u);
  EXPECT_EQ(g.gaps()[1].first_missing, 7u);
  EXPECT_EQ(g.gaps()[1].count, 3u);
  EXPECT_EQ(g.missing(), 5u);
  g.observe("b", 0);  // a new series restarts the count
  g.observe("b", 1);
  EXPECT_EQ(g.missing(), 5u);
  EXPECT_NE(wire::new_uuid(), wire::new_uuid());
  EXPECT_EQ(wire::new_uuid().size(), 36u);
}

TEST(Streaming, EveryRowArrivesInOrderWithContiguousSeqAndSeriesEndCount) {
  Publisher pub(loopback(3));
  ASSERT_NE(pub.endpoint().find("tcp://127.0.0.1:"), std::string::npos);
  Subscriber sub(pub.endpoint());
  ASSERT_TRUE(pub.wait_for_subscribers(1, 10s)) << "the subscriber never subscribed";
  sub.start(60s);
  SyntheticScanner source(scan(200, 32, 1000));
  Positions positions;
  Pipeline pipeline(cpu_options(64));
  const auto stats = pipeline.run(source, {&positions, &pub});
  sub.join();
  ASSERT_TRUE(sub.done) << "no series-end within the deadline";

  const auto& msgs = sub.messages;
  ASSERT_GE(msgs.size(), 3u);
  EXPECT_EQ(msgs.front().topic, wire::Topic::SeriesStart);
  EXPECT_EQ(msgs.back().topic, wire::Topic::SeriesEnd);
  std::uint64_t next_row = 0;
  for (std::size_t i = 0; i < msgs.size(); ++i) {
    ASSERT_EQ(msgs[i].seq, i) << "seq not contiguous";
    ASSERT_EQ(msgs[i].series, msgs.front().series);
    if (msgs[i].topic != wire::Topic::Profile) continue;
    const auto& r = *msgs[i].rows;
    ASSERT_EQ(r.series_row, next_row) << "rows out of order";
    for (int k = 0; k < r.rows; ++k) {
      ASSERT_EQ(r.frame_ids[k], next_row + k);
      for (int x = 0; x < r.width; ++x) {
        const std::int32_t expected = positions.rows[(next_row + k) * 200 + x];
        const float z = r.z[static_cast<std::size_t>(k) * r.width + x];
        if (expected == kNoPeak)
          ASSERT_TRUE(std::isnan(z));
        else
          ASSERT_EQ(z, position_to_row(expected));
      }
    }
    next_row += static_cast<std::uint64_t>(r.rows);
  }
  EXPECT_EQ(next_row, 1000u);
  const auto& end = msgs.back().header;
  EXPECT_EQ(end["profile_rows"].get<std::uint64_t>(), 1000u);
  EXPECT_EQ(end["messages"].get<std::uint64_t>(), msgs.size());
  const auto c = pub.counters();
  // Conservation: frames acquired = profiles published + drops (each reason).
  EXPECT_EQ(stats.frames, 1000u);
  EXPECT_EQ(c.rows_in, stats.frames);
  EXPECT_EQ(c.rows_published + c.rows_dropped_total(), stats.frames);
  EXPECT_EQ(c.rows_dropped_total(), 0u);
}

TEST(Streaming, SlowSubscriberCostsCountedDropsAndSeesExactlyThoseGaps) {
  PublisherConfig cfg = loopback(1);
  cfg.send_hwm = 4;
  cfg.control_timeout_ms = 20000;  // series-end waits for room: the subscriber must see it
  Publisher pub(cfg);
  const std::uint64_t frames = 2000;
  const double delay_s = 0.005;
  double alone_s = 0;
  {  // the same pipeline with nobody listening: the baseline
    SyntheticScanner source(scan(2048, 24, frames));
    Pipeline pipeline(cpu_options(100));
    const auto t0 = steady::now();
    pipeline.run(source, {&pub});
    alone_s = std::chrono::duration<double>(steady::now() - t0).count();
  }
  const auto baseline = pub.counters();
  Subscriber slow(pub.endpoint(), std::chrono::microseconds(static_cast<int>(delay_s * 1e6)), 4);
  ASSERT_TRUE(pub.wait_for_subscribers(1, 10s));
  slow.start(120s);
  SyntheticScanner source(scan(2048, 24, frames));
  Pipeline pipeline(cpu_options(100));
  const auto t0 = steady::now();
  const auto stats = pipeline.run(source, {&pub});
  const double pipeline_s = std::chrono::duration<double>(steady::now() - t0).count();
  slow.join();
  ASSERT_TRUE(slow.done) << "the slow subscriber never saw series-end";

  PublisherCounters c = pub.counters();  // this series only
  c.rows_in -= baseline.rows_in;
  c.rows_published -= baseline.rows_published;
  for (int r = 0; r < kDropReasons; ++r) {
    c.rows_dropped[r] -= baseline.rows_dropped[r];
    c.messages_dropped[r] -= baseline.messages_dropped[r];
  }
  // The subscriber would need frames x 5 ms = 10 s to take every row; the
  // publisher must not wait for it, so rows are dropped at the high-water
  // mark (the times are printed, not asserted: a loaded machine varies).
  EXPECT_GT(c.rows_dropped[static_cast<int>(DropReason::Hwm)], 0u) << "expected drops at the high-water mark";
  EXPECT_EQ(c.rows_dropped[static_cast<int>(DropReason::NoSubscriber)], 0u);
  EXPECT_EQ(c.rows_dropped[static_cast<int>(DropReason::Error)], 0u);
  // Conservation and exact gap accounting.
  EXPECT_EQ(c.rows_published + c.rows_dropped_total(), stats.frames);
  wire::GapTracker gaps;
  for (const auto& m : slow.messages) gaps.observe(m.series, m.seq);
  EXPECT_EQ(slow.messages.front().seq, 0u);
  EXPECT_EQ(gaps.missing(), c.messages_dropped_total()) << "gaps seen by the subscriber != messages the sender counted as dropped";
  EXPECT_EQ(rows_received(slow.messages), c.rows_published);
  EXPECT_EQ(rows_received(slow.messages) + c.rows_dropped[0], frames);
  const auto& end = slow.messages.back().header;
  EXPECT_EQ(end["profile_rows"].get<std::uint64_t>(), c.rows_published);
  EXPECT_EQ(end["rows_dropped"]["hwm"].get<std::uint64_t>(), c.rows_dropped[0]);
  std::printf("[ slow subscriber ] %llu frames in %.3f s (%.3f s with nobody listening); published %llu rows, dropped %llu (hwm) in %zu gaps\n",
              static_cast<unsigned long long>(frames), pipeline_s, alone_s, static_cast<unsigned long long>(c.rows_published),
              static_cast<unsigned long long>(c.rows_dropped[0]), gaps.gaps().size());
}

TEST(Streaming, NoSubscriberIsCountedAsSuch) {
  Publisher pub(loopback(10));
  SyntheticScanner source(scan(64, 16, 95));
  Pipeline pipeline(cpu_options(20));
  const auto stats = pipeline.run(source, {&pub});
  const auto c = pub.counters();
  EXPECT_EQ(c.rows_published, 0u);
  EXPECT_EQ(c.rows_dropped[static_cast<int>(DropReason::NoSubscriber)], stats.frames);
}

TEST(Streaming, CurveAllowsListedClientsAndAnUnknownClientReceivesNothing) {
  if (!curve_available()) GTEST_SKIP() << "libzmq was built without CURVE (zmq_has(\"curve\") is false)";
  TempDir dir;
  const auto server_keys = write_curve_keypair(dir / "server");
  const std::string server_pub = server_keys.first;  // a copy: clang 14 cannot capture a structured binding
  const auto [ok_pub, ok_sec] = write_curve_keypair(dir / "allowed");
  const auto [bad_pub, bad_sec] = write_curve_keypair(dir / "unknown");
  PublisherConfig cfg = loopback(5);
  cfg.curve.enabled = true;
  cfg.curve.server_secret_key = dir / "server.secret";
  cfg.curve.client_keys = {dir / "allowed.pub"};
  Publisher pub(cfg);
  Subscriber allowed(pub.endpoint(), 0us, 1000, curve_client(server_pub, ok_pub, ok_sec));
  Subscriber unknown(pub.endpoint(), 0us, 1000, curve_client(server_pub, bad_pub, bad_sec));
  Subscriber plain(pub.endpoint());  // no CURVE at all
  ASSERT_TRUE(pub.wait_for_subscribers(1, 10s));
  allowed.start(60s);
  unknown.start(3s);
  plain.start(3s);
  SyntheticScanner source(scan(128, 16, 200));
  Pipeline pipeline(cpu_options(50));
  pipeline.run(source, {&pub});
  allowed.join();
  unknown.join();
  plain.join();
  ASSERT_TRUE(allowed.done);
  EXPECT_EQ(rows_received(allowed.messages), 200u);
  EXPECT_TRUE(unknown.messages.empty()) << "an unknown client received " << unknown.messages.size() << " messages";
  EXPECT_TRUE(plain.messages.empty()) << "a client without CURVE received " << plain.messages.size() << " messages";
  EXPECT_EQ(pub.counters().rows_published, 200u);
}

TEST(Streaming, CurveKeyFilesAreChecked) {
  if (!curve_available()) GTEST_SKIP() << "libzmq was built without CURVE";
  TempDir dir;
  write_curve_keypair(dir / "server");
  write_curve_keypair(dir / "client");
  ::chmod((dir / "server.secret").c_str(), 0644);
  try {
    read_curve_key(dir / "server.secret", true);
    FAIL() << "a world-readable secret key was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("readable by group or others"), std::string::npos) << e.what();
  }
  PublisherConfig cfg = loopback();
  cfg.curve.enabled = true;
  cfg.curve.server_secret_key = dir / "server.secret";
  cfg.curve.client_keys = {dir / "client.pub"};
  EXPECT_THROW(Publisher{cfg}, ConfigError);
  ::chmod((dir / "server.secret").c_str(), 0600);
  EXPECT_NO_THROW(read_curve_key(dir / "server.secret", true));
  std::ofstream(dir / "junk.pub") << "not a key\n";
  EXPECT_THROW(read_curve_key(dir / "junk.pub", false), ConfigError);
  cfg.curve.client_keys = {};
  EXPECT_THROW(cfg.validate(), ConfigError);
}

TEST(StreamingConfig, SectionsParseAndMalformedOnesAreRejectedNamingTheKey) {
  const Config c = parse_config(
      "[publisher]\nenabled = true\nendpoint = \"tcp://127.0.0.1:7000\"\nsend_hwm = 10\nrows_per_message = 2\n"
      "[daemon]\nscan_rows = 50\npause = 0.25\nrate = 100.0\n[http]\nport = 0\n[security]\ncurve = false\nclient_keys = [\"a.pub\"]\n",
      "t.toml");
  EXPECT_TRUE(c.publish);
  EXPECT_EQ(c.publisher.endpoint, "tcp://127.0.0.1:7000");
  EXPECT_EQ(c.publisher.send_hwm, 10);
  EXPECT_EQ(c.daemon.scan_rows, 50u);
  EXPECT_EQ(c.http.port, 0);
  EXPECT_EQ(c.publisher.curve.client_keys.size(), 1u);
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"[publisher]\nendpoit = \"x\"\n", "publisher.endpoit"},
      {"[publisher]\nsend_hwm = 0\n", "publisher.send_hwm"},
      {"[publisher]\nendpoint = \"localhost\"\n", "publisher.endpoint"},
      {"[publisher]\nrows_per_message = \"8\"\n", "publisher.rows_per_message"},
      {"[daemon]\nscan_rows = 0\n", "daemon.scan_rows"},
      {"[daemon]\nlog_level = \"loud\"\n", "daemon.log_level"},
      {"[daemon]\nstop_timeout = 0.0\n", "daemon.stop_timeout"},
      {"[http]\nport = 70000\n", "http.port"},
      {"[security]\nclient_keys = \"a.pub\"\n", "security.client_keys"},
      {"[security]\ncurve = true\n", "security.server_secret_key"},
      {"[streaming]\nx = 1\n", "streaming"},
  };
  for (const auto& [text, key] : bad) {
    try {
      parse_config(text, "bad.toml");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).rfind("bad.toml", 0), 0u) << e.what();
    }
  }
  EXPECT_NO_THROW(load_config(test::source_dir() + "/configs/daemon.toml"));
}

TEST(Streaming, PythonExampleDecodesTheMessages) {
  if (std::system("/usr/bin/python3 -c 'import zmq, numpy' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "/usr/bin/python3 lacks zmq or numpy (apt-get install python3-zmq python3-numpy; scripts/setup-debian.sh --tests)";
  Publisher pub(loopback(7));
  std::string output;
  int rc = -1;
  std::thread python([&] {
    rc = test::run_cli_command("/usr/bin/python3 " + test::source_dir() + "/tools/subscribe.py " + pub.endpoint() + " --timeout 30", &output);
  });
  const bool subscribed = pub.wait_for_subscribers(1, 30s);
  SyntheticScanner source(scan(160, 20, 300));
  Pipeline pipeline(cpu_options(40));
  const auto stats = subscribed ? pipeline.run(source, {&pub}) : PipelineStats{};
  python.join();
  ASSERT_TRUE(subscribed) << output;
  EXPECT_EQ(rc, 0) << output;
  EXPECT_NE(output.find("series-start"), std::string::npos) << output;
  EXPECT_NE(output.find("received rows 300 points " + std::to_string(stats.points) + " of 300 published"), std::string::npos) << output;
  EXPECT_NE(output.find("complete"), std::string::npos) << output;
  EXPECT_EQ(output.find("INCOMPLETE"), std::string::npos) << output;
}

TEST(StreamingCli, ReplayPublishesAndSubscribeRebuildsTheSameHeightMapAndTimesOut) {
  TempDir dir;
  std::string out;
  ASSERT_EQ(test::run_cli("synth " + (dir / "rec.tiff").string() + " --width 300 --frame-height 32 --frames 250", &out), 0) << out;
  // An ipc path: no port to clash with parallel tests (short: unix socket paths are limited to 107 bytes).
  const auto sock_path = std::filesystem::temp_directory_path() / ("stripeline-" + std::to_string(::getpid()) + ".sock");
  const std::string endpoint = "ipc://" + sock_path.string();
  std::string sub_out;
  int sub_rc = -1;
  std::thread subscriber([&] {
    sub_rc = test::run_cli("subscribe " + endpoint + " --heightmap " + (dir / "sub.png").string() + " --ply " + (dir / "sub.ply").string() +
                               " --timeout 60 --fail-on-gap",
                           &sub_out);
  });
  const int rc = test::run_cli("replay " + (dir / "rec.tiff").string() + " -H 32 -q --heightmap " + (dir / "rep.png").string() + " --ply " +
                                   (dir / "rep.ply").string() + " --publish " + endpoint + " --wait-subscriber 30",
                               &out);
  subscriber.join();
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("published 250 of 250 rows"), std::string::npos) << out;
  ASSERT_EQ(sub_rc, 0) << sub_out;
  EXPECT_NE(sub_out.find("complete: every published row received"), std::string::npos) << sub_out;
  // Pixels, not bytes: each file's description names its own source (docs/data-model.md).
  const auto pixels = [](const std::filesystem::path& p) {
    auto r = io::open_image(p);
    std::vector<std::byte> px(static_cast<std::size_t>(r->info().width) * r->info().height * 2);
    r->read_rows(px.data(), r->info().height);
    return px;
  };
  EXPECT_EQ(pixels(dir / "sub.png"), pixels(dir / "rep.png")) << "the subscriber's height map differs from the replay's";
  EXPECT_EQ(io::read_ply(dir / "sub.ply").size(), io::read_ply(dir / "rep.ply").size());

  const auto t0 = steady::now();
  std::filesystem::remove(sock_path);
  EXPECT_EQ(test::run_cli("subscribe " + endpoint + " --timeout 0.5", &out), 3) << out;
  EXPECT_LT(std::chrono::duration<double>(steady::now() - t0).count(), 10.0);
  EXPECT_NE(out.find("timed out"), std::string::npos) << out;
}

// [output] heightmap_filters also shape the heightmap stream: each heightmap
// message's z is the filtered map, equal to what the file sink writes.
TEST(Streaming, HeightmapMessagesCarryTheFilteredMap) {
  for (const bool calibrated : {false, true}) {
    PublisherConfig cfg = loopback(4);
    cfg.heightmap_rows = 40;  // the whole scan in one heightmap message
    cfg.heightmap_filters = {"median 3", "erode-h 5", "to8 100:3000"};
    Publisher pub(cfg);
    Subscriber sub(pub.endpoint());
    ASSERT_TRUE(pub.wait_for_subscribers(1, 10s)) << "the subscriber never subscribed";
    sub.start(60s);
    SyntheticScanner source(scan(200, 32, 40));
    HeightMapSink file("", "", cfg.height_bits);  // keeps the codes in memory only
    PipelineOptions o = cpu_options(16);
    o.calibration.enabled = calibrated;
    o.calibration.z_scale = 0.02;
    o.calibration.z_offset = 1.5;
    Pipeline pipeline(o);
    pipeline.run(source, {&file, &pub});
    sub.join();
    ASSERT_TRUE(sub.done) << "no series-end within the deadline";
    std::vector<std::uint16_t> want(file.codes().size());
    make_heightmap_filter(Backend::Cpu, 200, 40, parse_filter_step_list({"median 3", "erode-h 5"}))->run(file.codes().data(), want.data());
    EXPECT_NE(want, file.codes());
    int heightmaps = 0;
    for (const auto& m : sub.messages) {
      if (m.topic != wire::Topic::Heightmap) continue;
      ++heightmaps;
      const auto& r = *m.rows;
      ASSERT_EQ(r.rows, 40);
      for (int y = 0; y < 40; ++y)
        for (int x = 0; x < 200; ++x) {
          const float z = r.z[static_cast<std::size_t>(y) * r.slots * r.width + x];
          const std::uint16_t code = want[static_cast<std::size_t>(y) * 200 + x];
          const float row = decode_height(code, cfg.height_bits);
          if (code == 0)
            ASSERT_TRUE(std::isnan(z)) << x << "," << y;
          else
            ASSERT_EQ(z, calibrated ? static_cast<float>(o.calibration.z(row)) : row) << x << "," << y << " calibrated " << calibrated;
        }
    }
    EXPECT_EQ(heightmaps, 1);
  }
}

// series-start/series-end wait up to publisher.control_timeout_ms for a
// subscriber at its high-water mark, then are counted (control_dropped, also
// a message drop) and logged: never lost silently. A subscriber that does not
// read fills the pipe; one that catches up within the timeout gets them.
namespace {
// A SUB that reads nothing until released (tiny receive queue and buffer).
struct StalledSubscriber {
  explicit StalledSubscriber(const std::string& endpoint) : sock(ctx, zmq::socket_type::sub) {
    sock.set(zmq::sockopt::rcvhwm, 1);
    sock.set(zmq::sockopt::rcvbuf, 4096);
    sock.set(zmq::sockopt::linger, 0);
    sock.connect(endpoint);
    sock.set(zmq::sockopt::subscribe, "");
  }
  // Reads every message for up to `limit`, returns the topics seen.
  std::vector<wire::Topic> drain(std::chrono::milliseconds limit) {
    std::vector<wire::Topic> topics;
    const auto deadline = steady::now() + limit;
    while (steady::now() < deadline) {
      const auto m = test::receive_decoded(sock, 20ms);
      if (!m) continue;
      topics.push_back(m->topic);
      if (topics.back() == wire::Topic::SeriesEnd) break;
    }
    return topics;
  }
  zmq::context_t ctx{1};
  zmq::socket_t sock;
};

constexpr int kWide = 4096;  // columns of a wide scan's rows

// Feeds wide rows (one message each, no points) until the stalled
// subscriber's path is full for good: 50 messages in a row dropped at the
// high-water mark (a single drop can be transient, before ZeroMQ's I/O thread
// has moved the queue into the kernel's buffers); false if that never happens.
bool fill_until_hwm(Publisher& pub) {
  ProfileBatch p(kWide, 64, 1, &allocate_host);
  p.frames = 64;
  std::fill_n(p.count, static_cast<std::size_t>(kWide) * 64, std::uint8_t{0});
  const auto deadline = steady::now() + 30s;
  int in_a_row = 0;
  while (steady::now() < deadline && in_a_row < 50) {
    const auto before = pub.counters().messages_sent;
    pub.consume(p.span());
    in_a_row = pub.counters().messages_sent == before ? in_a_row + 1 : 0;
  }
  return in_a_row >= 50 && pub.counters().messages_dropped[static_cast<int>(DropReason::Hwm)] > 0;
}

ScanInfo wide_scan() {
  ScanInfo info;
  info.layout = BatchLayout{kWide, 8, 64, PixelFormat::Mono8};
  return info;
}
}  // namespace

TEST(Streaming, ControlMessagesWaitForRoomThenAreCountedAndLogged) {
  PublisherConfig cfg = loopback(64);
  cfg.send_hwm = 1;
  cfg.control_timeout_ms = 200;
  cfg.linger_ms = 0;
  Publisher pub(cfg);
  StalledSubscriber sub(pub.endpoint());
  ASSERT_TRUE(pub.wait_for_subscribers(1, 10s));
  pub.begin(wide_scan());
  EXPECT_EQ(pub.counters().control_dropped[0], 0u) << "series-start had room";
  ASSERT_TRUE(fill_until_hwm(pub)) << "the stalled subscriber never reached its high-water mark";
  pub.finish();  // series-end: waits 200 ms for room, then counted
  auto c = pub.counters();
  EXPECT_EQ(c.control_dropped[1], 1u) << "series-end not counted as a control drop";
  EXPECT_EQ(c.control_dropped[0], 0u);
  pub.begin(wide_scan());  // series-start with the pipe still full
  EXPECT_EQ(pub.counters().control_dropped[0], 1u) << "series-start not counted as a control drop";
  pub.abort();
  c = pub.counters();
  EXPECT_EQ(c.control_dropped[1], 2u);
  // Every control drop is also a counted message drop.
  EXPECT_GE(c.messages_dropped[static_cast<int>(DropReason::Hwm)], 3u);
}

TEST(Streaming, ControlMessagesReachASlowSubscriberThatCatchesUpWithinTheTimeout) {
  PublisherConfig cfg = loopback(64);
  cfg.send_hwm = 1;
  cfg.control_timeout_ms = 20000;  // generous: the subscriber starts reading 300 ms into the wait
  Publisher pub(cfg);
  StalledSubscriber sub(pub.endpoint());
  ASSERT_TRUE(pub.wait_for_subscribers(1, 10s));
  pub.begin(wide_scan());
  ASSERT_TRUE(fill_until_hwm(pub)) << "the stalled subscriber never reached its high-water mark";
  std::vector<wire::Topic> seen;
  std::thread reader([&] {
    std::this_thread::sleep_for(300ms);  // stays stalled while series-end starts waiting
    seen = sub.drain(30s);
  });
  pub.finish();
  reader.join();
  const auto c = pub.counters();
  EXPECT_EQ(c.control_dropped[0] + c.control_dropped[1], 0u);
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.back(), wire::Topic::SeriesEnd) << "series-end did not reach the subscriber";
}

// ---------------------------------------------------------------------------
// Fan-out through the proxy (streaming/proxy.h)

namespace {

// Every consumer of a proxied series: every row, seq contiguous from 0, the
// same messages as the other consumers.
void expect_complete_series(const Subscriber& sub, std::uint64_t rows) {
  ASSERT_TRUE(sub.done) << "no series-end within the deadline";
  ASSERT_EQ(rows_received(sub.messages), rows);
  for (std::size_t i = 0; i < sub.messages.size(); ++i) ASSERT_EQ(sub.messages[i].seq, i) << "seq not contiguous";
}

}  // namespace

TEST(Proxy, FansOneStreamOutToSeveralConsumersUnchangedAndCountsIt) {
  Publisher pub(loopback(4));
  ProxyConfig pc;
  pc.frontend = pub.endpoint();
  pc.backend = "tcp://127.0.0.1:*";
  StreamProxy proxy(pc);
  ASSERT_NE(proxy.backend_endpoint().find("tcp://127.0.0.1:"), std::string::npos);
  Subscriber a(proxy.backend_endpoint()), b(proxy.backend_endpoint());
  // Subscriptions travel upstream through the proxy: the publisher sees one subscriber (the proxy).
  ASSERT_TRUE(pub.wait_for_subscribers(1, 10s)) << "no subscription reached the publisher through the proxy";
  std::this_thread::sleep_for(200ms);  // both consumers' subscriptions through the proxy (one upstream subscription either way)
  a.start(60s);
  b.start(60s);
  SyntheticScanner source(scan(160, 16, 600));
  Positions positions;
  Pipeline pipeline(cpu_options(50));
  pipeline.run(source, {&positions, &pub});
  a.join();
  b.join();
  expect_complete_series(a, 600);
  expect_complete_series(b, 600);
  ASSERT_EQ(a.messages.size(), b.messages.size());
  for (std::size_t i = 0; i < a.messages.size(); ++i) {
    ASSERT_EQ(a.messages[i].topic, b.messages[i].topic);
    if (a.messages[i].topic != wire::Topic::Profile) continue;
    const auto& za = a.messages[i].rows->z;
    const auto& zb = b.messages[i].rows->z;
    ASSERT_EQ(za.size(), zb.size());
    ASSERT_EQ(std::memcmp(za.data(), zb.data(), za.size() * sizeof(za[0])), 0) << "message " << i << " differs (bit for bit, NaN included)";
  }
  const ProxyCounters c = proxy.statistics();
  EXPECT_EQ(c.frontend_messages_in, a.messages.size()) << "every message from the publisher, counted once (multipart)";
  EXPECT_EQ(c.backend_messages_out, c.frontend_messages_in) << "every part received from the publisher went to the consumers";
  EXPECT_GE(c.frontend_messages_out, 1u) << "the subscription went upstream";
  EXPECT_GT(c.backend_bytes_out, 600u * 160u * 4u) << "the rows' bytes";
  EXPECT_EQ(pub.counters().rows_published, 600u);
  proxy.stop();
  proxy.stop();  // idempotent
  EXPECT_EQ(proxy.statistics().frontend_messages_in, 0u) << "a stopped proxy has no counters to give";
}

TEST(Proxy, CurveOnBothHopsLetsOnlyTheListedConsumersRead) {
  if (!curve_available()) GTEST_SKIP() << "libzmq was built without CURVE (zmq_has(\"curve\") is false)";
  TempDir dir;
  const std::string pub_public = write_curve_keypair(dir / "publisher").first;
  write_curve_keypair(dir / "proxy-up");    // the proxy as a client of the publisher
  const std::string proxy_public = write_curve_keypair(dir / "proxy-down").first;  // the proxy as a server to consumers
  const auto [ok_pub, ok_sec] = write_curve_keypair(dir / "consumer");
  const auto [bad_pub, bad_sec] = write_curve_keypair(dir / "stranger");
  PublisherConfig cfg = loopback(5);
  cfg.curve.enabled = true;
  cfg.curve.server_secret_key = dir / "publisher.secret";
  cfg.curve.client_keys = {dir / "proxy-up.pub"};
  Publisher pub(cfg);
  ProxyConfig pc;
  pc.frontend = pub.endpoint();
  pc.backend = "tcp://127.0.0.1:*";
  pc.server_key = (dir / "publisher.pub").string();
  pc.client_key = (dir / "proxy-up.secret").string();
  pc.backend_curve.enabled = true;
  pc.backend_curve.server_secret_key = dir / "proxy-down.secret";
  pc.backend_curve.client_keys = {dir / "consumer.pub"};
  StreamProxy proxy(pc);
  Subscriber allowed(proxy.backend_endpoint(), 0us, 1000, curve_client(proxy_public, ok_pub, ok_sec));
  Subscriber stranger(proxy.backend_endpoint(), 0us, 1000, curve_client(proxy_public, bad_pub, bad_sec));
  Subscriber plain(proxy.backend_endpoint());
  ASSERT_TRUE(pub.wait_for_subscribers(1, 10s)) << "the proxy never subscribed through CURVE";
  allowed.start(60s);
  stranger.start(3s);
  plain.start(3s);
  SyntheticScanner source(scan(128, 16, 200));
  Pipeline pipeline(cpu_options(50));
  pipeline.run(source, {&pub});
  allowed.join();
  stranger.join();
  plain.join();
  expect_complete_series(allowed, 200);
  EXPECT_TRUE(stranger.messages.empty()) << "an unlisted consumer received " << stranger.messages.size() << " messages";
  EXPECT_TRUE(plain.messages.empty()) << "a consumer without CURVE received " << plain.messages.size() << " messages";
  EXPECT_GE(proxy.denied(), 1u);
}

TEST(ProxyCli, BadEndpointsAndKeysAreOneLineAndExit2) {
  TempDir dir;
  std::string out;
  EXPECT_EQ(test::run_cli("proxy tcp://127.0.0.1:5999 --backend nonsense://x --duration 1", &out), 2) << out;
  EXPECT_NE(out.find("nonsense://x"), std::string::npos) << out;
  EXPECT_EQ(test::run_cli("proxy tcp://127.0.0.1:5999 --backend tcp://127.0.0.1:* --server-key " + (dir / "missing.pub").string() +
                              " --client-key " + (dir / "missing.secret").string() + " --duration 1",
                          &out),
            2)
      << out;
  EXPECT_NE(out.find("missing"), std::string::npos) << out;
  EXPECT_EQ(test::run_cli("proxy tcp://127.0.0.1:5999 --backend tcp://127.0.0.1:* --curve --duration 1", &out), 2) << out;
  EXPECT_NE(out.find("server_secret_key"), std::string::npos) << out;
  // A good one runs for its duration and reports its counters.
  EXPECT_EQ(test::run_cli("proxy tcp://127.0.0.1:5999 --backend tcp://127.0.0.1:* --duration 0.5 --stats-interval 0.2", &out), 0) << out;
  EXPECT_NE(out.find("proxy stopped: from the publisher 0 messages"), std::string::npos) << out;
}
