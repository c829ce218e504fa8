#pragma once
// A simulated GigE Vision camera that films the synthetic scanner's stripe:
// Aravis' fake camera (the GVCP/GVSP protocol side) with our renderer as its
// image. Frame id n shows synthetic frame n, so a test (or an engineer
// setting up without hardware) can check profiles acquired live against the
// scanner's truth. `stripeline simulate-camera` runs one.
//
// GigE Vision discovery is broadcast: put it on a private interface (the
// tests use loopback inside a private network namespace).
#include <memory>
#include <string>

#include "acquisition/synthetic_scanner.h"

namespace stripeline {

struct SimulatedCameraConfig {
  std::string interface = "127.0.0.1";  // interface name or address to listen on
  std::string serial = "SL0001";        // the camera id becomes "Aravis-Fake-<serial>"
  SyntheticConfig scene;                // seed, noise, beam...; width, height and format follow the camera's ROI
  double lost_packet_ratio = 0.0;       // fraction of stream packets not sent (0..1), to test loss accounting
  // 0: render every frame (frame id n shows synthetic frame n; ~2 ms per
  // 2048x52 frame caps the camera near 450 frames/s). N: render synthetic
  // frames 0..N-1 once and send frame n mod N (for rate measurements).
  int cached_frames = 0;
};

class SimulatedCamera {
 public:
  // Starts serving at once. Throws ConfigError without Aravis, RuntimeFailure
  // if the interface cannot be bound.
  explicit SimulatedCamera(SimulatedCameraConfig config);
  ~SimulatedCamera();
  SimulatedCamera(const SimulatedCamera&) = delete;
  SimulatedCamera& operator=(const SimulatedCamera&) = delete;

  std::string id() const;        // what `stripeline cameras` lists
  std::uint64_t frames_rendered() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace stripeline
