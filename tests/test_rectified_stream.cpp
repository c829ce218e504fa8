// Rectified rows on the stream (issue 12): with a sheet-of-light calibration
// and [publisher] rectified_grid, every heightmap message is followed by one
// of form "rectified" holding the same rows resampled onto the X grid, Z in mm.
// They must be the range map the file sink writes with the same grid and rule.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "io/image_reader.h"
#include "kernels/rectify.h"
#include "streaming/wire_format.h"
#include "test_helpers.h"

using namespace stripeline;
using namespace std::chrono_literals;

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
