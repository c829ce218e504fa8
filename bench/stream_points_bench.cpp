// Publish -> subscribe throughput of calibrated rows, with and without the
// carried points (issue 30, docs/wire-format.md "Calibrated points"): the
// real Publisher sink bound on loopback, the real Subscriber decoding every
// message on another thread. Rows are a synthetic span WIDTH columns wide,
// one slot, every column detected, the processor's points already in the
// span (as a CUDA batch hands them over), so the figure is the stream's own
// cost: encode, send, receive, decode. Not a test: nothing is asserted.
//
//   stream_points_bench [WIDTH=2048] [ROWS=20000] [REPS=3] [ENDPOINT=ipc:///tmp/stripeline-points-bench.sock]
//
// Prints, per mode (points on/off), rows/s per repetition and the median,
// and bytes per row as received.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/profile_mapping.h"
#include "streaming/publisher.h"
#include "streaming/subscriber.h"
#include "../tests/example_models.h"

using namespace stripeline;
using clock_type = std::chrono::steady_clock;

int main(int argc, char** argv) {
  const int width = argc > 1 ? std::atoi(argv[1]) : 2048;
  const int rows = argc > 2 ? std::atoi(argv[2]) : 20000;
  const int reps = argc > 3 ? std::atoi(argv[3]) : 3;
  const std::string endpoint = argc > 4 ? argv[4] : "ipc:///tmp/stripeline-points-bench.sock";
  constexpr int kBatch = 64;
  auto sheet = std::make_shared<AppliedCalibration>();
  sheet->model = test::realistic_model();
  sheet->roi_y = 428;
  const ProfileMapping mapping(LinearCalibration{}, 6, sheet);
  // One batch of kBatch rows: a stripe across, with the processor's points.
  std::vector<std::int32_t> position(static_cast<std::size_t>(kBatch) * width);
  std::vector<std::uint16_t> intensity(position.size(), 200), swidth(position.size(), 3), quality(position.size(), 40);
  std::vector<std::uint8_t> count(position.size(), 1);
  std::vector<float> xyz(position.size() * 3);
  std::vector<FrameMeta> meta(kBatch);
  ProfileSpan span;
  span.frames = kBatch, span.width = width, span.slots = 1, span.meta = meta.data(), span.position = position.data();
  span.intensity = intensity.data(), span.stripe_width = swidth.data(), span.quality = quality.data(), span.count = count.data();
  for (int f = 0; f < kBatch; ++f)
    for (int x = 0; x < width; ++x) position[static_cast<std::size_t>(f) * width + x] = (100 + (x * 7 + f) % 50) * 256 + (x * 37) % 256;
  for (int f = 0; f < kBatch; ++f)
    for (int x = 0; x < width; ++x) {
      double X, dY, Z;
      float* o = xyz.data() + 3 * (static_cast<std::size_t>(f) * width + x);
      if (mapping.point(span, f, 0, x, 0.0, X, dY, Z)) o[0] = static_cast<float>(X), o[1] = static_cast<float>(dY), o[2] = static_cast<float>(Z);
      else o[0] = o[1] = o[2] = std::numeric_limits<float>::quiet_NaN();
    }
  span.xyz = xyz.data();
  ScanInfo info;
  info.layout.width = width;
  info.layout.frame_height = 256;
  info.layout.frames = kBatch;
  info.sheet = sheet;
  info.source = "stream_points_bench";
  for (const bool points : {true, false}) {
    std::vector<double> rates;
    double bytes_per_row = 0;
    for (int rep = 0; rep < reps; ++rep) {
      PublisherConfig cfg;
      cfg.endpoint = endpoint;
      cfg.points = points;
      cfg.send_hwm = 100000;  // no drops: the subscriber's pace is the figure
      cfg.stats_interval = 0;
      Publisher pub(cfg);
      Subscriber sub(SubscriberOptions{pub.endpoint(), 100000, "", ""});
      if (!pub.wait_for_subscribers(1, std::chrono::seconds(10))) return std::fprintf(stderr, "no subscription\n"), 1;
      std::uint64_t received = 0;
      std::thread reader([&] {
        while (true) {
          auto d = sub.receive(std::chrono::milliseconds(5000));
          if (!d) break;
          if (d->topic == wire::Topic::Profile) received += static_cast<std::uint64_t>(d->rows->rows);
          if (d->topic == wire::Topic::SeriesEnd) break;
        }
      });
      const auto t0 = clock_type::now();
      pub.begin(info);
      for (int sent = 0; sent < rows; sent += kBatch) {
        span.first_index = static_cast<std::uint64_t>(sent);
        pub.consume(span.subspan(0, std::min(kBatch, rows - sent)));
      }
      pub.finish();
      reader.join();
      const double s = std::chrono::duration<double>(clock_type::now() - t0).count();
      if (received != static_cast<std::uint64_t>(rows)) std::fprintf(stderr, "received %llu of %d rows\n", static_cast<unsigned long long>(received), rows);
      rates.push_back(received / s);
      bytes_per_row = static_cast<double>(sub.bytes()) / rows;
      std::printf("points %-3s rep %d: %.0f rows/s (%.1f MB/s received)\n", points ? "on" : "off", rep, received / s, sub.bytes() / s / 1e6);
    }
    std::sort(rates.begin(), rates.end());
    std::printf("points %-3s width %d: median %.0f rows/s, %.0f bytes per row received (all parts, headers included)\n", points ? "on" : "off",
                width, rates[rates.size() / 2], bytes_per_row);
  }
  return 0;
}
