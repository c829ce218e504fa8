// A synthetic head as its own process (tests/test_merge.cpp kills and
// restarts it): the real Publisher bound on ENDPOINT, frames [FIRST, END) of
// tests/synthetic_head_rows.h paced at RATE rows/s, 8 rows a message.
//
//   synthetic_head_publisher ENDPOINT FIRST END RATE SHIFT_MM [HOLD_AFTER]
//
// Waits (10 s at most) for a subscriber first. Prints "published F" after
// each message (F = frames published so far, counting from FIRST). With
// HOLD_AFTER, it stops publishing once frame HOLD_AFTER - 1 is out, prints
// "holding", and waits to be killed (no series-end: a crash as the merge sees it).
// CURVE (scripts/netns-heads.sh): with SYNTHETIC_HEAD_CURVE_SECRET=FILE (this
// head's secret key) and SYNTHETIC_HEAD_CURVE_ALLOW=FILE (the one subscriber's
// public key, e.g. the merge's) in the environment, only that key is let in.
// With SYNTHETIC_HEAD_GO_FILE=FILE, once its subscriber is in it prints
// "subscribed" and starts only when FILE exists (several heads started
// together, as on one encoder: scripts/netns-heads.sh).
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "streaming/publisher.h"
#include "synthetic_head_rows.h"

using namespace stripeline;

int main(int argc, char** argv) {
  if (argc < 6) return std::fprintf(stderr, "usage: %s ENDPOINT FIRST END RATE SHIFT_MM [HOLD_AFTER]\n", argv[0]), 2;
  const std::uint64_t first = std::strtoull(argv[2], nullptr, 10), end = std::strtoull(argv[3], nullptr, 10);
  const double rate = std::atof(argv[4]), shift = std::atof(argv[5]);
  const std::uint64_t hold = argc > 6 ? std::strtoull(argv[6], nullptr, 10) : end;
  constexpr int kRows = 8;
  test::SyntheticHeadRows rows(256, kRows, -20.0, 20.0, [shift](std::uint64_t, double x) { return 5.0 + std::sin(0.2 * (x + shift)); });
  PublisherConfig pc;
  pc.endpoint = argv[1];
  pc.rows_per_message = kRows;
  pc.send_hwm = 100000;
  pc.stats_interval = 0;
  pc.linger_ms = 30000;  // a head that ends with messages still queued (a slow link) delivers them before it exits
  if (const char* secret = std::getenv("SYNTHETIC_HEAD_CURVE_SECRET")) {
    const char* allow = std::getenv("SYNTHETIC_HEAD_CURVE_ALLOW");
    if (!allow) return std::fprintf(stderr, "SYNTHETIC_HEAD_CURVE_SECRET needs SYNTHETIC_HEAD_CURVE_ALLOW (the subscriber's public key file)\n"), 2;
    pc.curve.enabled = true;
    pc.curve.server_secret_key = secret;
    pc.curve.client_keys = {allow};
  }
  Publisher pub(pc);
  if (!pub.wait_for_subscribers(1, std::chrono::seconds(10))) return std::fprintf(stderr, "no subscriber\n"), 1;
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // every subscription in
  if (const char* go = std::getenv("SYNTHETIC_HEAD_GO_FILE")) {
    std::printf("subscribed\n");
    std::fflush(stdout);
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (::access(go, F_OK) != 0) {
      if (std::chrono::steady_clock::now() > give_up) return std::fprintf(stderr, "%s did not appear within 60 s\n", go), 1;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  pub.begin(rows.info("synthetic head"));
  const auto period = std::chrono::duration<double>(kRows / rate);
  const auto t0 = std::chrono::steady_clock::now();
  for (std::uint64_t f = first; f < end; f += kRows) {
    if (f >= hold) {
      std::printf("holding\n");
      std::fflush(stdout);
      for (;;) ::pause();
    }
    std::this_thread::sleep_until(t0 + std::chrono::duration_cast<std::chrono::steady_clock::duration>(period * static_cast<double>((f - first) / kRows)));
    const int n = static_cast<int>(std::min<std::uint64_t>(kRows, end - f));
    pub.consume(rows.span(f, n));
    std::printf("published %llu\n", static_cast<unsigned long long>(f + static_cast<std::uint64_t>(n) - first));
    std::fflush(stdout);
  }
  pub.finish();
  return 0;
}
