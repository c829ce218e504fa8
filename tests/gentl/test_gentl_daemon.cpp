// The daemon on a frame grabber: [camera] transport = "gentl" against the
// project's simulated producer, whose device goes away after three buffers
// (SimUnplugAfterBuffers) every time it is opened. The daemon must see each
// loss, end the scan with its rows complete, reopen the device by itself and
// start a new series, as it does for Aravis cameras (docs/cameras.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "acquisition/gentl/gentl_camera.h"
#include "../child_process.h"
#include "../test_helpers.h"

using namespace stripeline;
using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

namespace {

double metric(int port, const std::string& name) {
  const auto m = test::parse_metrics(test::http_get(port, "/metrics").second);
  const auto it = m.find(name);
  return it == m.end() ? -1.0 : it->second;
}

bool wait_metric(int port, const std::string& name, double at_least, std::chrono::seconds timeout) {
  const auto deadline = steady::now() + timeout;
  while (steady::now() < deadline) {
    if (metric(port, name) >= at_least) return true;
    std::this_thread::sleep_for(50ms);
  }
  return false;
}

}  // namespace

TEST(GenTLDaemon, ReopensAGrabberWhoseDeviceWentAwayAndStartsANewSeries) {
  if (!gentl_support_built()) GTEST_SKIP() << "this build has no GenTL consumer (it needs Aravis for GenApi)";
  test::TempDir dir;
  const auto config = dir.path() / "grabber.toml";
  {
    std::ofstream f(config);
    f << "[source]\nkind = \"camera\"\n"
      << "[camera]\ntransport = \"gentl\"\nwidth = 512\nheight = 40\nreconnect_interval = 0.2\n"
      << "[camera.gentl]\ncti = \"" << STRIPELINE_GENTL_SIM_CTI << "\"\nframes_per_buffer = 100\n"
      << "grabber_features = [\"SimUnplugAfterBuffers=3\"]\n"
      << "[processing]\nbackend = \"cpu\"\nbatch_frames = 100\n"
      << "[output]\ndir = \"" << (dir.path() / "scans").string() << "\"\npreview = \"\"\nheightmap = \"\"\nsummary = \"scan.json\"\n"
      << "[http]\nport = 0\n"
      << "[daemon]\nscan_rows = 1000000\nidle_close = 0\npause = 0\n";
  }
  test::Child d({test::binary_path(), "daemon", "-c", config.string()});
  const auto port_text = d.wait_for(R"(listening on http://127\.0\.0\.1:(\d+))", 20s);
  ASSERT_TRUE(port_text) << d.output();
  const int port = std::stoi(*port_text);

  // Each opening delivers three buffers of 100 frames, then the device is gone.
  ASSERT_TRUE(wait_metric(port, "stripeline_camera_reconnects_total", 2, 60s)) << d.output();
  EXPECT_GE(metric(port, "stripeline_camera_losses_total"), 2);
  EXPECT_GE(metric(port, "stripeline_scans_completed_total"), 2) << "every loss ends the scan; every reconnection starts a new one";
  // Every opening, the reopened ones included, on the direct path: the
  // grabber writes into the pipeline's batches, nothing is copied.
  EXPECT_TRUE(wait_metric(port, "stripeline_acquisition_path{path=\"direct\"}", 1, 30s)) << d.output();
  EXPECT_EQ(metric(port, "stripeline_acquisition_bytes_copied_total"), 0);
  EXPECT_GE(metric(port, "stripeline_frames_acquired_total"), 600) << "frames of at least two openings";
  d.signal(SIGTERM);
  ASSERT_EQ(d.wait_exit(30s), std::optional<int>(0)) << d.output();

  std::vector<nlohmann::json> scans;
  for (const auto& e : std::filesystem::directory_iterator(dir.path() / "scans"))
    if (e.path().string().ends_with("scan.json")) scans.push_back(nlohmann::json::parse(std::ifstream(e.path())));
  std::sort(scans.begin(), scans.end(), [](const auto& a, const auto& b) { return a["scan"] < b["scan"]; });
  ASSERT_GE(scans.size(), 2u) << d.output();
  int lost = 0;
  for (const auto& s : scans) {
    if (s["reason"] != "camera-lost") continue;
    ++lost;
    EXPECT_EQ(s["rows"].get<int>(), 300) << "three whole buffers before each loss: " << s.dump();
  }
  EXPECT_GE(lost, 2) << d.output();
  EXPECT_NE(scans[0]["series"], scans[1]["series"]);
}

// `stripeline cameras` lists a producer's devices with their transport, and
// with no producer says how to get one (on stderr; stdout stays a table/JSON).
TEST(GenTLCameras, TheCommandListsTheSimulatedGrabber) {
  if (!gentl_support_built()) GTEST_SKIP() << "this build has no GenTL consumer (it needs Aravis for GenApi)";
  std::string out;
  ASSERT_EQ(test::run_cli(std::string("cameras --json --transport gentl --cti ") + STRIPELINE_GENTL_SIM_CTI, &out), 0) << out;
  const auto j = nlohmann::json::parse(out);
  ASSERT_EQ(j.size(), 1u) << out;
  EXPECT_EQ(j[0]["transport"], "gentl");
  EXPECT_EQ(j[0]["serial"], "SLSIM1000");
  EXPECT_EQ(j[0]["id"], "SL-SIM-IF0/SL-SIM-0");
  ASSERT_EQ(test::run_cli("cameras --transport gentl --cti /nonexistent/folder", &out), 0) << out;
  EXPECT_NE(out.find("no camera found"), std::string::npos) << out;
  EXPECT_NE(out.find("no GenTL producer at '/nonexistent/folder'"), std::string::npos) << out;
}
