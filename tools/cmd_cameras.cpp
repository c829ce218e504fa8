// `stripeline cameras`: the GenICam cameras Aravis finds and the devices of
// the GenTL producers installed (frame grabbers).
// `stripeline simulate-camera`: a GigE Vision camera filming the synthetic
// scanner's stripe, for trying live acquisition without hardware.
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <thread>

#include "acquisition/camera_source.h"
#include "acquisition/gentl/gentl_camera.h"
#include "core/errors.h"
#include "acquisition/simulated_camera.h"
#include "tools/commands.h"

namespace stripeline::tools {

namespace {

// One row of `stripeline cameras`: an Aravis camera or a GenTL device.
struct Found {
  std::string transport, id, vendor, model, serial, address, protocol;
};

}  // namespace

Subcommand add_cameras(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "cameras", "List the cameras found: GigE Vision and USB3 Vision through Aravis, and frame grabbers' devices through GenTL producers");
  struct Flags {
    bool json = false;
    std::string cti, transport = "all";
  };
  auto f = std::make_shared<Flags>();
  sub->add_flag("--json", f->json, "One JSON array instead of a table");
  sub->add_option("--transport", f->transport, "all, aravis (GigE Vision discovery, USB3 Vision) or gentl (the producers only)")
      ->check(CLI::IsMember({"all", "aravis", "gentl"}))
      ->capture_default_str();
  sub->add_option("--cti", f->cti, "GenTL producer (.cti file or folder) to ask; default: the folders of GENICAM_GENTL64_PATH");
  return {sub, [f] {
            std::vector<Found> found;
            std::vector<std::string> notes;
            const bool aravis = f->transport != "gentl", gentl = f->transport != "aravis";
            if (!aravis) {
            } else if (camera_support_built()) {
              for (const auto& c : list_cameras()) found.push_back({"aravis", c.id, c.vendor, c.model, c.serial, c.address, c.protocol});
            } else {
              notes.push_back("Aravis: not in this build (GigE Vision / USB3 Vision cameras cannot be listed)");
            }
            if (gentl && !gentl_support_built()) notes.push_back("GenTL: not in this build (it needs Aravis for GenApi)");
            if (gentl && gentl_support_built()) {
              try {
                std::vector<std::string> errors;
                for (const auto& d : list_gentl_devices(f->cti, &errors))
                  found.push_back({"gentl", d.interface_id + "/" + d.id, d.vendor, d.model, d.serial, d.cti, d.tltype});
                for (const auto& e : errors) notes.push_back("GenTL: " + e);
              } catch (const ConfigError& e) {  // no producer installed: say how to get one
                notes.push_back(std::string("GenTL: ") + e.what());
              }
            }
            if (f->json) {
              nlohmann::json a = nlohmann::json::array();
              for (const auto& c : found)
                a.push_back({{"transport", c.transport}, {"id", c.id}, {"vendor", c.vendor}, {"model", c.model}, {"serial", c.serial},
                             {"address", c.address}, {"protocol", c.protocol}});
              std::printf("%s\n", a.dump(2).c_str());
            } else if (found.empty()) {
              std::printf("no camera found (GigE Vision cameras answer discovery on the local networks: check cables, power and the host's "
                          "firewall; cameras behind a frame grabber need its vendor's GenTL producer)\n");
            } else {
              std::printf("%-9s %-36s %-14s %-16s %-16s %-16s %s\n", "TRANSPORT", "ID (camera.id / camera.gentl.device)", "VENDOR", "MODEL",
                          "SERIAL", "ADDRESS / CTI", "PROTOCOL");
              for (const auto& c : found)
                std::printf("%-9s %-36s %-14s %-16s %-16s %-16s %s\n", c.transport.c_str(), c.id.c_str(), c.vendor.c_str(), c.model.c_str(),
                            c.serial.c_str(), c.address.c_str(), c.protocol.c_str());
            }
            for (const auto& n : notes) std::fprintf(stderr, "%s\n", n.c_str());
            return 0;
          }};
}

namespace {
std::atomic<bool> g_simulation_stop{false};
extern "C" void stop_simulation(int) { g_simulation_stop.store(true); }
}  // namespace

Subcommand add_simulate_camera(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "simulate-camera", "Serve a simulated GigE Vision camera whose frames show the synthetic stripe (until SIGINT/SIGTERM)");
  struct Flags {
    SimulatedCameraConfig c;
    double lost_per_thousand = 0;
    double seconds = 0;
  };
  auto f = std::make_shared<Flags>();
  sub->add_option("-i,--interface", f->c.interface, "Interface name or address to serve on (discovery is broadcast there)")
      ->capture_default_str();
  sub->add_option("-s,--serial", f->c.serial, "Serial number; the camera id is Aravis-Fake-SERIAL")->capture_default_str();
  sub->add_option("--seed", f->c.scene.seed, "Seed of the synthetic scene")->capture_default_str();
  sub->add_option("--noise", f->c.scene.noise, "Sensor noise sigma")->capture_default_str();
  sub->add_option("-r,--lost-per-thousand", f->lost_per_thousand, "Stream packets not sent, per thousand (loss testing)")
      ->capture_default_str();
  sub->add_option("--cache", f->c.cached_frames,
                  "Render this many synthetic frames once and cycle through them (frame id n shows frame n mod N): "
                  "for rate measurements; 0 renders every frame (~450 frames/s at 2048x52)")
      ->capture_default_str();
  sub->add_option("--seconds", f->seconds, "Stop after this many seconds (0 = until SIGINT/SIGTERM)")->capture_default_str();
  return {sub, [f] {
            f->c.lost_packet_ratio = f->lost_per_thousand / 1000.0;
            SimulatedCamera cam(f->c);
            std::printf("simulated camera %s serving on %s (frame id n shows synthetic frame n, seed %llu); stop with Ctrl-C\n",
                        cam.id().c_str(), f->c.interface.c_str(), static_cast<unsigned long long>(f->c.scene.seed));
            std::fflush(stdout);
            std::signal(SIGINT, stop_simulation);
            std::signal(SIGTERM, stop_simulation);
            const auto start = std::chrono::steady_clock::now();
            while (!g_simulation_stop.load()) {
              std::this_thread::sleep_for(std::chrono::milliseconds(100));
              if (f->seconds > 0 && std::chrono::steady_clock::now() - start > std::chrono::duration<double>(f->seconds)) break;
            }
            std::printf("simulated camera %s: %llu frames rendered\n", cam.id().c_str(),
                        static_cast<unsigned long long>(cam.frames_rendered()));
            return 0;
          }};
}

}  // namespace stripeline::tools
