// The merge at a paced rate (docs/scale-out.md, "Merging heads: cost"):
// HEADS synthetic heads (tests/synthetic_head_rows.h: WIDTH columns, one
// slot, the processor's points in the span) publish through the real
// Publisher on ipc at RATE rows/s each, 8 rows a message; the real
// MergeService subscribes to them and publishes the merged rows; this
// program subscribes to the merged stream and, beside it, directly to head 0.
// Per merged row: latency = its arrival here - the latest time a head's
// publisher was handed that row (publish -> merged out), and per head-0 row
// the same for the direct subscription (publish -> out, no merge): the merge
// adds the difference. Rows accounted from the merge's counters. Not a test:
// nothing is asserted (the exit code says whether every row was accounted).
// With PROXY=1 the merged stream also goes through the fan-out proxy
// (streaming/proxy.h, zmq_proxy_steerable XSUB -> XPUB, on ipc) to a third
// subscriber: per merged row, its arrival through the proxy minus its arrival
// straight from the merge is what the proxy adds.
//
//   merge_bench [WIDTH=256] [RATE=10000] [SECONDS=5] [HEADS=3] [DX=0.2] [PROXY=0] [RT=0]
//
// RT > 0 runs the merge's and the proxy's threads (and their ZeroMQ I/O
// threads) SCHED_FIFO at that priority ([merge] realtime_priority, `proxy
// --realtime-priority`; docs/scale-out.md, "Latency under load"), and this
// program's readers likewise (a consumer that needs the rows promptly), so
// that both the direct and the merged path are read without a wait for a
// core. The heads' publishing stays time-shared (the heads are the load).
//
// Each head sees 40 mm (local X -20..20) over WIDTH columns, the heads 35 mm
// apart (5 mm overlaps); the merged grid spans them all in DX mm cells.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "core/errors.h"
#include "core/profile_mapping.h"
#include "streaming/merge.h"
#include "streaming/proxy.h"
#include "streaming/publisher.h"
#include "streaming/subscriber.h"
#include "streaming/zmq_context.h"
#include "../tests/synthetic_head_rows.h"

using namespace stripeline;
using steady = std::chrono::steady_clock;

namespace {

struct Quantiles {
  double p50 = 0, p99 = 0, max = 0;
  std::size_t n = 0;
};

Quantiles quantiles(std::vector<double> v) {
  Quantiles q;
  q.n = v.size();
  if (v.empty()) return q;
  std::sort(v.begin(), v.end());
  q.p50 = v[v.size() / 2];
  q.p99 = v[std::min(v.size() - 1, static_cast<std::size_t>(0.99 * static_cast<double>(v.size())))];
  q.max = v.back();
  return q;
}

// The merge's own work without sockets: HEADS heads' profile messages
// encoded once, then decoded (wire::decode) and merged (Merger::on_message)
// in a loop; returns {decode us, merge us} per merged row.
std::pair<double, double> merge_alone(int width, int heads, double dx, std::uint64_t frames) {
  constexpr int kRows = 8;
  std::vector<std::vector<std::vector<std::string>>> wire_msgs(static_cast<std::size_t>(heads));
  MergeConfig mc;
  for (int h = 0; h < heads; ++h) {
    const double shift = 35.0 * (h - (heads - 1) / 2.0);
    test::SyntheticHeadRows rows(width, kRows, -20.0, 20.0, [shift](std::uint64_t f, double x) {
      return 5.0 + std::sin(0.2 * (x + shift) + 0.001 * static_cast<double>(f));
    });
    const ProfileMapping mapping(LinearCalibration{}, kDefaultHeightCodeBits, rows.info("x").sheet);
    const std::string series = wire::new_uuid();
    for (std::uint64_t f = 0; f < frames; f += kRows) {
      nlohmann::json hd = wire::base_header(wire::Topic::Profile, series, f / kRows);
      hd["calibration"] = wire::calibration_json(LinearCalibration{});
      wire_msgs[static_cast<std::size_t>(h)].push_back(
          wire::encode_rows(wire::Topic::Profile, hd, rows.span(f, kRows), 0, kRows, mapping, f, true).strings());
    }
    mc.heads.push_back(HeadTransform::in_plane("h" + std::to_string(h), 0.0, shift, 0.0));
  }
  const double half = 35.0 * (heads - 1) / 2.0 + 20.0;
  mc.grid = {-half, half, dx, 0, kernels::RectifyRule::Mean};
  std::uint64_t out = 0;
  Merger m(mc, [&](const MergedBlock& b) { out += static_cast<std::uint64_t>(b.rows.rows); });
  steady::duration decoding{}, merging{};
  for (std::size_t i = 0; i < wire_msgs[0].size(); ++i)
    for (int h = 0; h < heads; ++h) {
      const auto t0 = steady::now();
      const wire::Decoded d = wire::decode(wire_msgs[static_cast<std::size_t>(h)][i]);
      const auto t1 = steady::now();
      m.on_message(h, d, t1);
      decoding += t1 - t0;
      merging += steady::now() - t1;
    }
  const double rows = static_cast<double>(out);
  return {std::chrono::duration<double, std::micro>(decoding).count() / rows, std::chrono::duration<double, std::micro>(merging).count() / rows};
}

}  // namespace

int run(int argc, char** argv) {
  const int width = argc > 1 ? std::atoi(argv[1]) : 256;
  const double rate = argc > 2 ? std::atof(argv[2]) : 10000.0;
  const double seconds = argc > 3 ? std::atof(argv[3]) : 5.0;
  const int heads = argc > 4 ? std::atoi(argv[4]) : 3;
  const double dx = argc > 5 ? std::atof(argv[5]) : 0.2;
  const bool with_proxy = argc > 6 && std::atoi(argv[6]) != 0;
  const ThreadScheduling scheduling{argc > 7 ? std::atoi(argv[7]) : 0, {}};
  constexpr int kRowsPerMessage = 8;
  const auto frames = static_cast<std::uint64_t>(rate * seconds) / kRowsPerMessage * kRowsPerMessage;
  {
    const auto [decode_us, merge_us] = merge_alone(width, heads, dx, 8000);
    std::printf("merge_bench: the merge alone (no sockets, one thread), %d heads of %d columns: decode %.1f us + merge %.1f us per merged row "
                "(%.0f merged rows/s)\n", heads, width, decode_us, merge_us, 1e6 / (decode_us + merge_us));
  }
  const std::string tag = std::to_string(::getpid());

  // Heads side by side: local X -20..20 mm, 35 mm apart (5 mm overlaps), a gentle wave.
  std::vector<std::unique_ptr<test::SyntheticHeadRows>> rows;
  std::vector<std::unique_ptr<Publisher>> pubs;
  MergeServiceConfig mc;
  for (int h = 0; h < heads; ++h) {
    const double shift = 35.0 * (h - (heads - 1) / 2.0);
    rows.push_back(std::make_unique<test::SyntheticHeadRows>(width, kRowsPerMessage, -20.0, 20.0, [shift](std::uint64_t f, double x) {
      return 5.0 + std::sin(0.2 * (x + shift) + 0.001 * static_cast<double>(f));
    }));
    PublisherConfig pc;
    pc.endpoint = "ipc:///tmp/stripeline-merge-bench-" + tag + "-" + std::to_string(h);
    pc.rows_per_message = kRowsPerMessage;
    pc.send_hwm = 100000;
    pc.stats_interval = 0;
    pubs.push_back(std::make_unique<Publisher>(pc));
    mc.merge.heads.push_back(HeadTransform::in_plane("h" + std::to_string(h), 0.0, shift, 0.0));
    mc.endpoints.push_back(pubs.back()->endpoint());
  }
  const double half = 35.0 * (heads - 1) / 2.0 + 20.0;
  mc.merge.grid = {-half, half, dx, 0, kernels::RectifyRule::Mean};
  mc.merge.window = std::chrono::milliseconds(100);
  mc.publish = "ipc:///tmp/stripeline-merge-bench-" + tag + "-merged";
  mc.send_hwm = 100000;
  mc.scheduling = scheduling;
  MergeService merge(mc);
  zmq::context_t ctx = make_zmq_context(scheduling, "merge_bench");  // the bench's sockets share one I/O thread
  Subscriber merged(SubscriberOptions{merge.publish_endpoint(), 100000, "", ""}, &ctx);
  Subscriber direct(SubscriberOptions{pubs[0]->endpoint(), 100000, "", ""}, &ctx);
  std::unique_ptr<StreamProxy> proxy;
  std::unique_ptr<Subscriber> proxied;
  if (with_proxy) {
    ProxyConfig pc;
    pc.frontend = merge.publish_endpoint();
    pc.backend = "ipc:///tmp/stripeline-merge-bench-" + tag + "-proxy";
    pc.hwm = 100000;
    pc.scheduling = scheduling;
    proxy = std::make_unique<StreamProxy>(pc);
    proxied = std::make_unique<Subscriber>(SubscriberOptions{proxy->backend_endpoint(), 100000, "", ""}, &ctx);
    if (!merge.wait_for_subscribers(2, std::chrono::seconds(10))) return std::fprintf(stderr, "merge_bench: the proxy did not subscribe\n"), 1;
  }
  for (int h = 0; h < heads; ++h)  // head 0: the merge and the direct subscriber
    if (!pubs[static_cast<std::size_t>(h)]->wait_for_subscribers(h == 0 ? 2 : 1, std::chrono::seconds(10)))
      return std::fprintf(stderr, "merge_bench: head %d has no subscriber\n", h), 1;
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the merged stream's subscription reaches its XPUB

  // When each head's publisher was handed each frame (steady clock, ns).
  std::vector<std::unique_ptr<std::atomic<std::int64_t>[]>> handed;
  for (int h = 0; h < heads; ++h) handed.push_back(std::make_unique<std::atomic<std::int64_t>[]>(frames));
  std::vector<double> merged_lat, direct_lat;
  // Arrival (steady ns) of each frame's merged row: straight from the merge, and through the proxy.
  std::vector<std::int64_t> merged_at(frames, 0), proxied_at(frames, 0);
  merged_lat.reserve(frames);
  direct_lat.reserve(frames);
  std::atomic<bool> publishing{true};
  auto now_ns = [] { return std::chrono::duration_cast<std::chrono::nanoseconds>(steady::now().time_since_epoch()).count(); };
  // Each reader: the messages of `topic` until the series ends (or, once the
  // publishers are done, nothing more comes), with their arrival time.
  auto read_until_end = [&](Subscriber& from, wire::Topic topic, auto on_message) {
    apply_to_current_thread(scheduling, "merge_bench reader");
    while (true) {
      auto d = from.receive(std::chrono::milliseconds(2000));
      if (!d) {
        if (!publishing) break;
        continue;
      }
      if (d->topic == wire::Topic::SeriesEnd) break;
      if (d->topic == topic) on_message(*d, now_ns());
    }
  };
  std::thread merged_reader([&] {
    read_until_end(merged, wire::Topic::Heightmap, [&](const auto& d, std::int64_t t) {
      for (int r = 0; r < d.rows->rows; ++r) {
        const auto& e = d.rows->encoder[static_cast<std::size_t>(r)];
        if (!e) continue;
        const auto f = static_cast<std::uint64_t>(*e / 4);
        std::int64_t last = 0;
        for (int h = 0; h < heads; ++h) last = std::max(last, handed[static_cast<std::size_t>(h)][f].load(std::memory_order_relaxed));
        merged_lat.push_back((t - last) / 1000.0);
        if (f < frames) merged_at[f] = t;
      }
    });
  });
  std::thread proxied_reader([&] {
    if (!proxied) return;
    read_until_end(*proxied, wire::Topic::Heightmap, [&](const auto& d, std::int64_t t) {
      for (int r = 0; r < d.rows->rows; ++r)
        if (const auto& e = d.rows->encoder[static_cast<std::size_t>(r)]; e && static_cast<std::uint64_t>(*e / 4) < frames)
          proxied_at[static_cast<std::uint64_t>(*e / 4)] = t;
    });
  });
  std::thread direct_reader([&] {
    read_until_end(direct, wire::Topic::Profile, [&](const auto& d, std::int64_t t) {
      for (int r = 0; r < d.rows->rows; ++r)
        direct_lat.push_back((t - handed[0][d.rows->frame_ids[static_cast<std::size_t>(r)]].load(std::memory_order_relaxed)) / 1000.0);
    });
  });

  for (int h = 0; h < heads; ++h) pubs[static_cast<std::size_t>(h)]->begin(rows[static_cast<std::size_t>(h)]->info("head " + std::to_string(h)));
  const auto period = std::chrono::duration_cast<steady::duration>(std::chrono::duration<double>(kRowsPerMessage / rate));
  const auto t0 = steady::now();
  for (std::uint64_t f = 0; f < frames; f += kRowsPerMessage) {
    std::this_thread::sleep_until(t0 + period * static_cast<long>(f / kRowsPerMessage));
    for (int h = 0; h < heads; ++h) {
      const ProfileSpan s = rows[static_cast<std::size_t>(h)]->span(f, kRowsPerMessage);
      const std::int64_t t = now_ns();
      for (int r = 0; r < kRowsPerMessage; ++r) handed[static_cast<std::size_t>(h)][f + static_cast<std::uint64_t>(r)].store(t, std::memory_order_relaxed);
      pubs[static_cast<std::size_t>(h)]->consume(s);
    }
  }
  const double took = std::chrono::duration<double>(steady::now() - t0).count();
  for (auto& p : pubs) p->finish();
  const bool done = merge.wait_done(std::chrono::seconds(10));
  publishing = false;
  merge.stop();
  merged_reader.join();
  direct_reader.join();
  proxied_reader.join();

  const MergeCounters c = merge.counters();
  const Quantiles m = quantiles(merged_lat), d = quantiles(direct_lat);
  std::printf("merge_bench: %d heads x %llu rows of %d columns at %.0f rows/s per head (%.2f s, paced %.0f rows/s), 8 rows a message, ipc; "
              "merged grid %d cells of %g mm; merge and proxy scheduling: %s\n", heads, static_cast<unsigned long long>(frames), width, rate, took,
              static_cast<double>(frames) / took, mc.merge.grid.bins(), dx, scheduling.describe().c_str());
  std::printf("  publish -> merged out: p50 %.0f us, p99 %.0f us, max %.0f us (%zu rows)\n", m.p50, m.p99, m.max, m.n);
  std::printf("  publish -> direct out (head 0, no merge): p50 %.0f us, p99 %.0f us, max %.0f us (%zu rows)\n", d.p50, d.p99, d.max, d.n);
  std::printf("  added by the merge: p50 %.0f us, p99 %.0f us; inside the merge (last head's row in -> merged row out): p50 %.0f us, p99 %.0f us, max %.1f us\n",
              m.p50 - d.p50, m.p99 - d.p99, c.latency_p50_us, c.latency_p99_us, c.latency_max_us);
  if (proxy) {
    std::vector<double> added;
    std::size_t missing = 0;
    for (std::uint64_t f = 0; f < frames; ++f) {
      if (merged_at[f] == 0) continue;
      if (proxied_at[f] == 0) {
        ++missing;
        continue;
      }
      added.push_back((proxied_at[f] - merged_at[f]) / 1000.0);
    }
    const Quantiles p = quantiles(added);
    const ProxyCounters pc = proxy->statistics();
    std::printf("  added by the proxy (per merged row: through the proxy - straight from the merge): p50 %.0f us, p99 %.0f us, max %.0f us "
                "(%zu rows; %zu not through the proxy); proxy passed %llu messages, %llu bytes\n",
                p.p50, p.p99, p.max, p.n, missing, static_cast<unsigned long long>(pc.backend_messages_out),
                static_cast<unsigned long long>(pc.backend_bytes_out));
  }
  bool accounted = done && c.rows == frames;
  for (std::size_t h = 0; h < c.heads.size(); ++h) {
    const MergeHeadCounters& k = c.heads[h];
    const bool ok = k.sent == frames && k.received + k.lost == k.sent &&
                    k.received == k.merged + k.late + k.unmatched + k.no_points + k.source_missing && k.merged + k.absent == c.rows;
    accounted = accounted && ok;
    std::printf("  head %zu: sent %llu = received %llu + lost %llu; merged %llu, late %llu, absent from %llu of %llu merged rows: %s\n", h,
                static_cast<unsigned long long>(k.sent), static_cast<unsigned long long>(k.received), static_cast<unsigned long long>(k.lost),
                static_cast<unsigned long long>(k.merged), static_cast<unsigned long long>(k.late), static_cast<unsigned long long>(k.absent),
                static_cast<unsigned long long>(c.rows), ok ? "every row accounted for" : "NOT ACCOUNTED");
  }
  std::printf("  merged rows %llu of %llu frames; %s\n", static_cast<unsigned long long>(c.rows), static_cast<unsigned long long>(frames),
              accounted ? "all accounted" : "INCOMPLETE");
  return accounted ? 0 : 1;
}

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const InputError& e) {  // a bad argument, or a scheduling this process has no right to: one line
    std::fprintf(stderr, "merge_bench: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "merge_bench: %s\n", e.what());
    return 1;
  }
}
