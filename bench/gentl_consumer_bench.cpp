// The GenTL consumer path alone: simulated producer -> batches, no
// processing. Prints the median over runs (after a warm-up in each run) of
// frames/s and MB/s of pixels handed on in batches. bench/gentl-consumer.sh
// runs the set-ups compared in bench/results/*gentl-consumer*.
//
//   gentl_consumer_bench CTI MODE WRITE_PIXELS [FRAMES] [RUNS]
//     MODE: direct (the grabber writes into the pool's batches: 0 copies),
//           copy   (buffers of 300 frames copied into batches by the assembler),
//           single (one frame per buffer, copied: the Aravis-like path)
//     WRITE_PIXELS: 1 = the producer writes every frame (a memcpy standing in
//           for the grabber's DMA, on the same cores), 0 = it leaves the
//           buffer as is (the consumer's own cost only)
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "acquisition/gentl/gentl_camera.h"

using namespace stripeline;

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s CTI direct|copy|single 0|1 [FRAMES] [RUNS]\n", argv[0]);
    return 2;
  }
  spdlog::set_level(spdlog::level::warn);
  const std::string cti = argv[1], mode = argv[2];
  const bool write_pixels = std::string(argv[3]) == "1";
  const std::uint64_t frames = argc > 4 ? std::strtoull(argv[4], nullptr, 10) : 30000;
  const int runs = argc > 5 ? std::atoi(argv[5]) : 5;
  constexpr int kWidth = 2048, kHeight = 52, kBatch = 300;
  const std::uint64_t warm = 3000;
  const int per_buffer = mode == "single" ? 1 : kBatch;

  std::vector<double> seconds;
  for (int r = 0; r < runs; ++r) {
    CameraConfig cam;
    cam.width = kWidth;
    cam.height = kHeight;
    cam.frame_rate = 1e6;
    cam.frames = warm + frames;
    GenTLConfig g;
    g.cti = cti;
    g.frames_per_buffer = per_buffer;
    g.frame_info_chunk = false;
    g.buffers = mode == "single" ? 64 : 4;
    g.grabber_features = {"SimCachedFrames=300", "SimWaitForBuffers=1", std::string("SimWritePixels=") + (write_pixels ? "1" : "0")};
    auto source = open_gentl_camera(cam, g, kBatch);
    const BatchLayout layout{kWidth, kHeight, kBatch, PixelFormat::Mono8};
    std::vector<std::unique_ptr<Batch>> pool;
    std::vector<Batch*> batches;
    for (int i = 0; i < 4; ++i) {
      pool.push_back(std::make_unique<Batch>(layout, &allocate_host));
      batches.push_back(pool.back().get());
    }
    if (mode == "direct") source->attach_buffers(batches, &allocate_host);
    std::uint64_t rows = 0;
    std::size_t next = 0;
    auto t0 = std::chrono::steady_clock::now();
    bool warmed = false;
    while (source->fill(*batches[next++ % batches.size()])) {
      rows += static_cast<std::uint64_t>(batches[(next - 1) % batches.size()]->frames);
      if (!warmed && rows >= warm) {
        warmed = true;
        t0 = std::chrono::steady_clock::now();
      }
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const auto stats = source->gentl_stats();
    const auto c = *source->acquisition_counters();
    if (c.lost_total() != 0 || rows != warm + frames || (mode == "direct" && stats.frames_copied != 0)) {
      std::fprintf(stderr, "run %d: %llu rows, %llu lost, %llu copied: not a clean run\n", r, static_cast<unsigned long long>(rows),
                   static_cast<unsigned long long>(c.lost_total()), static_cast<unsigned long long>(stats.frames_copied));
      return 1;
    }
    source->detach_buffers();
    seconds.push_back(s);
  }
  std::sort(seconds.begin(), seconds.end());
  const double median = seconds[seconds.size() / 2];
  const double fps = static_cast<double>(frames) / median;
  const double mbps = fps * kWidth * kHeight / 1e6;
  std::printf("%-7s %5d %12d %10llu %9.3f %12.0f %10.0f\n", mode.c_str(), write_pixels ? 1 : 0, per_buffer,
              static_cast<unsigned long long>(frames), median, fps, mbps);
  return 0;
}
