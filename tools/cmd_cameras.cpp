// `stripeline cameras`: the GenICam cameras Aravis finds.
// `stripeline simulate-camera`: a GigE Vision camera filming the synthetic
// scanner's stripe, for trying live acquisition without hardware.
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <thread>

#include "acquisition/camera_source.h"
#include "acquisition/simulated_camera.h"
#include "tools/commands.h"

namespace stripeline::tools {

Subcommand add_cameras(CLI::App& app) {
  auto* sub = app.add_subcommand("cameras", "List the GigE Vision and USB3 Vision cameras found (model, serial, address)");
  auto json = std::make_shared<bool>(false);
  sub->add_flag("--json", *json, "One JSON array instead of a table");
  return {sub, [json] {
            const auto cams = list_cameras();
            if (*json) {
              nlohmann::json a = nlohmann::json::array();
              for (const auto& c : cams)
                a.push_back({{"id", c.id}, {"vendor", c.vendor}, {"model", c.model}, {"serial", c.serial}, {"address", c.address},
                             {"protocol", c.protocol}});
              std::printf("%s\n", a.dump(2).c_str());
              return 0;
            }
            if (cams.empty()) {
              std::printf("no camera found (GigE Vision cameras answer discovery on the local networks; check cables, power and the host's firewall)\n");
              return 0;
            }
            std::printf("%-36s %-14s %-16s %-16s %-16s %s\n", "ID (camera.id)", "VENDOR", "MODEL", "SERIAL", "ADDRESS", "PROTOCOL");
            for (const auto& c : cams)
              std::printf("%-36s %-14s %-16s %-16s %-16s %s\n", c.id.c_str(), c.vendor.c_str(), c.model.c_str(), c.serial.c_str(),
                          c.address.c_str(), c.protocol.c_str());
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
