// Rectified rows on the stream (issue 12): with a sheet-of-light calibration
// and [publisher] rectified_grid, every heightmap message is followed by one
// of form "rectified" holding the same rows resampled onto the X grid, Z in mm.
// They must be the range map the file sink writes with the same grid and rule.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <thread>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "calibration/calibration_file.h"
#include "core/profile_mapping.h"
#include "example_models.h"
#include "io/image_reader.h"
#include "io/ply_writer.h"
#include "kernels/rectify.h"
#include "streaming/wire_format.h"
#include "child_process.h"
#include "test_helpers.h"
#include "wire_receive.h"

using namespace stripeline;
using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

TEST(RectifiedStream, HeightmapMessagesCarryTheRangeMapOfTheFileSink) {
  test::TempDir dir;
  auto p = [&](const std::string& name) { return (dir.path() / name).string(); };
  const std::string target = test::source_dir() + "/configs/targets/sawtooth.toml";
  std::string out;
  ASSERT_EQ(test::run_cli("synth " + p("target.tiff") + " --scene target --target " + target + " --frames 24", &out), 0) << out;
  ASSERT_EQ(test::run_cli("calibrate " + p("target.tiff") + " -H 256 --target " + target + " --out " + p("cal.toml") + " --roi-offset 0,428", &out), 0)
      << out;
  constexpr int kFrames = 20;
  ASSERT_EQ(test::run_cli("synth " + p("gauge.tiff") + " --scene gauge --roi 160,460,1700,232 --frames " + std::to_string(kFrames), &out), 0) << out;

  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(21000 + ::getpid() % 20000);
  {
    std::ofstream(p("pub.toml")) << "[publisher]\nenabled = true\nendpoint = \"" << endpoint
                                 << "\"\nheightmap_rows = 8\nrectified_grid = \"-60:60:0.1\"\nrectified_rule = \"mean\"\nrectified_fill = 4\n";
  }
  // The subscriber: every rectified heightmap message of the series.
  std::vector<wire::RowBlock> rectified;
  int plain_heightmaps = 0;
  nlohmann::json grid;
  std::string error;
  std::atomic<bool> subscribed{false};
  std::thread subscriber([&] {
    try {
      zmq::context_t ctx(1);
      zmq::socket_t sock(ctx, zmq::socket_type::sub);
      sock.set(zmq::sockopt::subscribe, "");
      sock.set(zmq::sockopt::rcvtimeo, 60000);
      sock.connect(endpoint);
      subscribed = true;
      for (;;) {
        std::vector<zmq::message_t> parts;
        if (!zmq::recv_multipart(sock, std::back_inserter(parts))) throw std::runtime_error("no message within 60 s");
        const wire::Decoded d = wire::decode(parts);
        if (d.topic == wire::Topic::SeriesEnd) return;
        if (d.topic != wire::Topic::Heightmap) continue;
        if (d.header.value("form", "") == "rectified") {
          rectified.push_back(*d.rows);
          grid = d.header["grid"];
        } else {
          ++plain_heightmaps;
        }
      }
    } catch (const std::exception& e) {
      error = e.what();
    }
  });
  while (!subscribed) std::this_thread::sleep_for(10ms);
  const int rc = test::run_cli("replay " + p("gauge.tiff") + " -H 232 -q --calibration " + p("cal.toml") + " --roi-offset 160,460 --config " +
                                   p("pub.toml") + " --wait-subscriber 30 --range-codes " + p("r.png") +
                                   " --range-grid -60:60:0.1 --range-rule mean --range-fill 4 --range-code -5:0.001",
                               &out);
  subscriber.join();
  ASSERT_EQ(rc, 0) << out;
  ASSERT_EQ(error, "") << out;
  EXPECT_EQ(plain_heightmaps, 3);  // 8 + 8 + 4 rows
  ASSERT_EQ(rectified.size(), 3u);
  EXPECT_EQ(grid["bins"], 1201);
  EXPECT_EQ(grid["rule"], "mean");

  auto reader = io::open_image(p("r.png"));
  ASSERT_EQ(reader->info().width, 1201);
  std::vector<std::uint16_t> codes(1201 * kFrames);
  reader->read_rows(reinterpret_cast<std::byte*>(codes.data()), kFrames);
  std::uint64_t row = 0, data = 0;
  for (const auto& b : rectified) {
    ASSERT_EQ(b.series_row, row);
    ASSERT_EQ(b.width, 1201);
    for (int r = 0; r < b.rows; ++r, ++row)
      for (int i = 0; i < 1201; ++i) {
        const float z = b.z[static_cast<std::size_t>(r) * 1201 + i];
        ASSERT_EQ(kernels::range_code(z, -5.0, 0.001), codes[row * 1201 + i]) << "row " << row << " bin " << i;
        data += std::isnan(z) ? 0 : 1;
      }
  }
  EXPECT_EQ(row, static_cast<std::uint64_t>(kFrames));
  EXPECT_GT(data, 20u * 500u);  // most of the 120 mm grid sees the parts
}

// Issue 30: with a sheet-of-light calibration, profile messages carry the
// processor's X/Y/Z (parts points and motion_y, docs/wire-format.md), and
// `stripeline subscribe --ply` writes the replay's PLY from them: the same
// vertices, value for value. With the publisher leaving them out
// (--publish-no-points) it maps the rows with series-start's model instead,
// to the same values. The model leans (skew about X and Z), so each point's
// Y differs from its row's motion position.
TEST(CalibratedStream, SubscribePlyIsTheReplaysWithAndWithoutCarriedPoints) {
  test::TempDir dir;
  auto p = [&](const std::string& name) { return (dir.path() / name).string(); };
  CalibrationFile cal = test::realistic_calibration_file();
  cal.model.skew_about_x_deg = 2.0;
  cal.model.skew_about_z_deg = 1.5;
  std::ofstream(p("cal.toml")) << format_calibration(cal);
  std::string out;
  ASSERT_EQ(test::run_cli("synth " + p("gauge.tiff") + " --scene gauge --roi 160,460,1700,232 --frames 12", &out), 0) << out;
  for (const bool points : {true, false}) {
    SCOPED_TRACE(points ? "points carried" : "points left out");
    const std::string tag = points ? "on" : "off";
    const auto sock = std::filesystem::temp_directory_path() / ("stripeline-mm-" + std::to_string(::getpid()) + ".sock");
    const std::string endpoint = "ipc://" + sock.string();
    std::string sub_out;
    int sub_rc = -1;
    std::thread subscriber([&] {
      sub_rc = test::run_cli("subscribe " + endpoint + " --ply " + p("sub-" + tag + ".ply") + " --timeout 60 --fail-on-gap", &sub_out);
    });
    const int rc = test::run_cli("replay " + p("gauge.tiff") + " -H 232 -q --calibration " + p("cal.toml") + " --roi-offset 160,460 --ply " +
                                     p("rep-" + tag + ".ply") + " --publish " + endpoint + " --wait-subscriber 30" +
                                     (points ? "" : " --publish-no-points"),
                                 &out);
    subscriber.join();
    std::filesystem::remove(sock);
    ASSERT_EQ(rc, 0) << out;
    ASSERT_EQ(sub_rc, 0) << sub_out;
    EXPECT_NE(sub_out.find(points ? "(X/Y/Z carried by the messages)" : "(mapped with the series' sheet-of-light model)"), std::string::npos)
        << sub_out;
    const auto rep = io::read_ply(p("rep-" + tag + ".ply")), sub = io::read_ply(p("sub-" + tag + ".ply"));
    ASSERT_EQ(rep.size(), sub.size());
    ASSERT_GT(rep.size(), 10000u);
    std::size_t leaning = 0;
    for (std::size_t i = 0; i < rep.size(); ++i) {
      ASSERT_EQ(rep[i].x, sub[i].x) << i;
      ASSERT_EQ(rep[i].y, sub[i].y) << i;
      ASSERT_EQ(rep[i].z, sub[i].z) << i;
      ASSERT_EQ(rep[i].intensity, sub[i].intensity) << i;
      ASSERT_EQ(rep[i].quality, sub[i].quality) << i;
      ASSERT_EQ(rep[i].slot, sub[i].slot) << i;
      ASSERT_EQ(rep[i].width, sub[i].width) << i;
      leaning += i > 0 && rep[i].y != rep[i - 1].y ? 1 : 0;
    }
    EXPECT_GT(leaning, rep.size() / 2);  // Y varies within a row: the skew is exercised
  }
}

// The message itself: a profile message of a calibrated series carries the
// points parts, which decode to the PLY's values; bytes per row as documented.
TEST(CalibratedStream, ProfileMessagesCarryPointsAndMotionY) {
  const auto sheet = std::make_shared<AppliedCalibration>();
  sheet->model = test::realistic_model();
  sheet->roi_y = 428;
  const ProfileMapping mapping(LinearCalibration{}, 6, sheet);
  constexpr int kW = 37, kRows = 3, kSlots = 2;
  std::vector<std::int32_t> position(kRows * kSlots * kW);
  std::vector<std::uint16_t> intensity(position.size(), 9), width(position.size(), 2), quality(position.size(), 4);
  std::vector<std::uint8_t> count(kRows * kW);
  std::vector<FrameMeta> meta(kRows);
  for (int r = 0; r < kRows; ++r) {
    meta[r].frame_id = 40 + r;
    for (int x = 0; x < kW; ++x) {
      count[r * kW + x] = static_cast<std::uint8_t>(x % 3);  // 0, 1 or 2 peaks
      for (int s = 0; s < kSlots; ++s) position[(r * kSlots + s) * kW + x] = (60 + 7 * r + 3 * s) * 256 + 13 * x;
    }
  }
  ProfileSpan span;
  span.first_index = 1000;
  span.frames = kRows;
  span.width = kW;
  span.slots = kSlots;
  span.meta = meta.data();
  span.position = position.data();
  span.intensity = intensity.data();
  span.stripe_width = width.data();
  span.quality = quality.data();
  span.count = count.data();
  const auto header = wire::base_header(wire::Topic::Profile, "s", 1);
  const wire::Message with = wire::encode_rows(wire::Topic::Profile, header, span, 0, kRows, mapping, 0, true);
  const wire::Message without = wire::encode_rows(wire::Topic::Profile, header, span, 0, kRows, mapping, 0, false);
  ASSERT_EQ(with.parts.size(), 8u);
  ASSERT_EQ(without.parts.size(), 6u);
  EXPECT_EQ(with.parts[6].size() + with.parts[7].size(), static_cast<std::size_t>(kRows) * (12 * kSlots * kW + 8));
  const wire::Decoded d = wire::decode(with.parts);
  ASSERT_TRUE(d.rows && d.rows->has_points());
  EXPECT_EQ(d.header.value("point_unit", ""), "mm");
  std::size_t points = 0;
  for (int r = 0; r < kRows; ++r) {
    const double y = mapping.point_y(span.index(r), meta[r]);
    EXPECT_EQ(d.rows->motion_y[r], y);
    for (int s = 0; s < kSlots; ++s)
      for (int x = 0; x < kW; ++x) {
        const float* o = d.rows->points.data() + 3 * ((static_cast<std::size_t>(r) * kSlots + s) * kW + x);
        double X, Y, Z;
        if (s < span.peaks(r, x) && mapping.point(span, r, s, x, y, X, Y, Z)) {
          ++points;
          EXPECT_EQ(o[0], static_cast<float>(X));
          EXPECT_EQ(d.rows->motion_y[r] + static_cast<double>(o[1]), Y);
          EXPECT_EQ(o[2], static_cast<float>(Z));
        } else {
          EXPECT_TRUE(std::isnan(o[0]) && std::isnan(o[1]) && std::isnan(o[2])) << r << "," << s << "," << x;
        }
      }
  }
  EXPECT_EQ(points, static_cast<std::size_t>(kRows) * (kW / 3 * 1 + kW / 3 * 2 + (kW % 3 == 2 ? 1 : 0)));
  // Without a sheet-of-light calibration nothing is added, whatever the option.
  const wire::Message plain = wire::encode_rows(wire::Topic::Profile, header, span, 0, kRows, ProfileMapping(LinearCalibration{}, 6), 0, true);
  EXPECT_EQ(plain.parts.size(), 6u);
}

// The same through the daemon: a calibrated daemon's profile messages carry
// points which, put together as the PLY sink orders them, are the vertices of
// the scan's own PLY (the scan whose scan.json names the series).
TEST(CalibratedStream, DaemonMessagesCarryTheScansPlyPoints) {
  test::TempDir dir;
  std::ofstream(dir / "cal.toml") << format_calibration(test::realistic_calibration_file());
  std::ofstream(dir / "d.toml") << "[synthetic]\nwidth = 256\nframe_height = 32\nframes = 0\n"
                                << "[processing]\nbackend = \"cpu\"\nbatch_frames = 20\n"
                                << "[calibration]\nfile = \"" << (dir / "cal.toml").string() << "\"\nroi_offset = [300, 500]\n"
                                << "[output]\ndir = \"" << (dir / "scans").string()
                                << "\"\nply = \"scan.ply\"\nheightmap = \"\"\npreview = \"\"\nsummary = \"scan.json\"\n"
                                << "[publisher]\nenabled = true\nendpoint = \"tcp://127.0.0.1:*\"\nrows_per_message = 5\n"
                                << "[daemon]\nscan_rows = 60\nrate = 1000.0\nstop_timeout = 20.0\n[http]\nport = 0\n";
  test::Child d({test::binary_path(), "daemon", "--config", (dir / "d.toml").string()});
  const auto endpoint = d.wait_for(R"(publisher: bound (tcp://127\.0\.0\.1:[0-9]+))", 30s);
  ASSERT_TRUE(endpoint) << d.output();
  zmq::context_t ctx(1);
  zmq::socket_t sub(ctx, zmq::socket_type::sub);
  sub.set(zmq::sockopt::subscribe, "");
  sub.connect(*endpoint);
  // One whole series: from a series-start to its series-end.
  std::vector<wire::Decoded> series;
  const auto deadline = steady::now() + 60s;
  bool whole = false;
  while (!whole && steady::now() < deadline) {
    auto m = test::receive_decoded(sub, 50ms);
    if (!m) continue;
    if (m->topic == wire::Topic::SeriesStart) series.clear();
    if (series.empty() && m->topic != wire::Topic::SeriesStart) continue;
    whole = m->topic == wire::Topic::SeriesEnd;
    series.push_back(std::move(*m));
  }
  ASSERT_TRUE(whole) << d.output();
  EXPECT_TRUE(series.front().header.value("points", false));
  // Its scan's PLY (files are final before the summary is written).
  std::filesystem::path ply;
  while (ply.empty() && steady::now() < deadline + 30s) {
    for (const auto& e : std::filesystem::directory_iterator(dir / "scans")) {
      const std::string name = e.path().filename().string();
      if (name.size() < 9 || name.substr(name.size() - 9) != "scan.json") continue;
      std::ifstream in(e.path());
      const auto j = nlohmann::json::parse(in, nullptr, false);
      if (j.is_object() && j.value("series", "") == series.front().series) ply = dir / "scans" / (name.substr(0, name.size() - 9) + "scan.ply");
    }
    if (ply.empty()) std::this_thread::sleep_for(50ms);
  }
  d.signal(SIGTERM);
  EXPECT_TRUE(d.wait_exit(30s)) << d.output();
  ASSERT_FALSE(ply.empty()) << "no scan.json names series " << series.front().series;
  std::vector<io::PlyVertex> from_stream;
  std::uint64_t rows = 0;
  for (const auto& m : series) {
    if (m.topic != wire::Topic::Profile) continue;
    const wire::RowBlock& b = *m.rows;
    ASSERT_TRUE(b.has_points());
    rows += static_cast<std::uint64_t>(b.rows);
    for (int r = 0; r < b.rows; ++r)
      for (int x = 0; x < b.width; ++x)
        for (int s = 0; s < b.slots; ++s) {
          const std::size_t i = (static_cast<std::size_t>(r) * b.slots + s) * b.width + x;
          const float* o = b.points.data() + 3 * i;
          if (std::isnan(o[0])) continue;
          from_stream.push_back(io::PlyVertex{o[0], b.motion_y[r] + static_cast<double>(o[1]), o[2]});
        }
  }
  EXPECT_EQ(rows, 60u);
  const auto vertices = io::read_ply(ply);
  ASSERT_EQ(vertices.size(), from_stream.size());
  ASSERT_GT(vertices.size(), 1000u);
  for (std::size_t i = 0; i < vertices.size(); ++i) {
    ASSERT_EQ(vertices[i].x, from_stream[i].x) << i;
    ASSERT_EQ(vertices[i].y, from_stream[i].y) << i;
    ASSERT_EQ(vertices[i].z, from_stream[i].z) << i;
  }
}
