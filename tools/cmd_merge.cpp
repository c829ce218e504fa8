// `stripeline merge --head NAME=ENDPOINT ... --transforms FILE.toml --grid X0:X1:DX`:
// subscribe to several heads' streams and merge them into one calibrated
// series in the world frame (streaming/merge.h, docs/scale-out.md "Merging
// heads"): merged rows on --publish, a merged range map and PLY at the end.
// Runs until every head ended its series (exit 0), SIGINT/SIGTERM or
// --duration (exit 0; what was waiting goes out with absent heads marked);
// prints the per-head counters every --stats-interval seconds and at the end.
#include <csignal>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <map>
#include <memory>

#include "app/outputs.h"
#include "calibration/head_alignment.h"
#include "core/errors.h"
#include "streaming/merge.h"
#include "streaming/publisher.h"
#include "tools/commands.h"
#include "tools/scheduling_flags.h"

namespace stripeline::tools {

namespace {

struct Flags {
  std::vector<std::string> heads, server_keys, allow;
  std::string transforms, align = "encoder", overlap = "mean", grid, rule = "mean", publish, ply, range_map, client_key, server_secret;
  int fill = 0, window_ms = 200, max_pending_rows = 4096, send_hwm = 1000, rows_per_message = 8;
  double tolerance_us = 50.0, stats_interval = 0.0, duration = 0.0;
  bool curve = false, ascii = false, quiet = false;
  SchedulingFlags scheduling;
};

// "NAME=VALUE" -> {NAME, VALUE}; InputError naming the flag.
std::pair<std::string, std::string> name_value(const std::string& s, const char* flag, const char* expected) {
  const auto eq = s.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == s.size())
    throw InputError(std::string(flag) + " '" + s + "' is not understood (expected " + expected + ")");
  return {s.substr(0, eq), s.substr(eq + 1)};
}

MergeServiceConfig service_config(const Flags& f) {
  MergeServiceConfig c;
  const HeadTransforms tf = load_head_transforms(f.transforms);
  std::map<std::string, std::string> keys;
  for (const auto& k : f.server_keys) keys.insert(name_value(k, "--server-key", "NAME=FILE: the head's public key file"));
  for (const auto& h : f.heads) {
    const auto [name, endpoint] = name_value(h, "--head", "NAME=ENDPOINT, e.g. left=tcp://10.0.0.11:5556");
    const HeadTransform* t = tf.find(name);
    if (!t) throw InputError(f.transforms + ": no [[head]] named '" + name + "' (expected one for every --head; stripeline align writes them)");
    c.merge.heads.push_back(*t);
    c.endpoints.push_back(endpoint);
    const auto k = keys.find(name);
    c.server_keys.push_back(k == keys.end() ? "" : k->second);
    if (k != keys.end()) keys.erase(k);
  }
  if (!keys.empty()) throw InputError("--server-key " + keys.begin()->first + "=...: no --head of that name (expected a head's name)");
  bool any_key = false;
  for (const auto& k : c.server_keys) any_key = any_key || !k.empty();
  if (!any_key) c.server_keys.clear();
  else if (f.client_key.empty()) throw InputError("--server-key needs --client-key (this merge's secret key file, its public key allowed by the heads)");
  c.client_key = f.client_key;
  c.merge.align = parse_align_key(f.align);
  c.merge.overlap = parse_overlap_rule(f.overlap);
  c.merge.timestamp_tolerance_ns = static_cast<std::int64_t>(f.tolerance_us * 1000.0);
  c.merge.window = std::chrono::milliseconds(f.window_ms);
  c.merge.max_pending_rows = f.max_pending_rows;
  c.merge.rows_per_block = f.rows_per_message;
  PublisherConfig grid;  // the one parser of X_MIN:X_MAX:DX, rule and fill (the publisher's rectified rows)
  grid.rectified_grid = f.grid;
  grid.rectified_rule = f.rule;
  grid.rectified_fill = f.fill;
  try {
    c.merge.grid = grid.rectify_grid();
  } catch (const InputError& e) {
    throw InputError(std::string("--grid/--rule/--fill: ") + e.what());
  }
  c.merge.validate();
  c.publish = f.publish;
  c.send_hwm = f.send_hwm;
  c.curve.enabled = f.curve;
  c.curve.server_secret_key = f.server_secret;
  for (const auto& a : f.allow) c.curve.client_keys.emplace_back(a);
  if (f.curve) c.curve.validate();
  // Bad output names: one line, exit 2, before anything is subscribed (app/outputs.h).
  if (!f.ply.empty()) check_output_path("PLY", f.ply, OutputKind::Ply);
  if (!f.range_map.empty()) {
    const std::string ext = std::filesystem::path(f.range_map).extension().string();
    if (ext != ".tif" && ext != ".tiff") throw InputError("range map '" + f.range_map + "': expected a .tif or .tiff name (a float32 TIFF)");
    check_output_path("range map", f.range_map, OutputKind::Other);
  }
  c.range_map = f.range_map;
  c.ply = f.ply;
  c.ply_ascii = f.ascii;
  c.scheduling = f.scheduling.scheduling();
  return c;
}

void print_counters(const char* when, const MergeServiceConfig& c, const MergeCounters& m) {
  std::printf("merge %s: %llu merged rows (%llu forced out early); latency in the merge p50 %.0f us, p99 %.0f us, max %.0f us\n", when,
              static_cast<unsigned long long>(m.rows), static_cast<unsigned long long>(m.forced), m.latency_p50_us, m.latency_p99_us,
              m.latency_max_us);
  for (std::size_t i = 0; i < m.heads.size(); ++i) {
    const MergeHeadCounters& h = m.heads[i];
    std::printf("  head %s (bit %zu): sent %llu = received %llu + lost %llu; received = merged %llu + late %llu + unmatched %llu + no points %llu + "
                "source-missing %llu; absent from %llu merged rows; series %llu, message gaps %llu, malformed %llu\n",
                c.merge.heads[i].name.c_str(), i, static_cast<unsigned long long>(h.sent), static_cast<unsigned long long>(h.received),
                static_cast<unsigned long long>(h.lost), static_cast<unsigned long long>(h.merged), static_cast<unsigned long long>(h.late),
                static_cast<unsigned long long>(h.unmatched), static_cast<unsigned long long>(h.no_points),
                static_cast<unsigned long long>(h.source_missing), static_cast<unsigned long long>(h.absent),
                static_cast<unsigned long long>(h.series), static_cast<unsigned long long>(h.gap_messages),
                static_cast<unsigned long long>(h.malformed));
  }
  std::fflush(stdout);
}

int merge(const Flags& f) {
  const MergeServiceConfig c = service_config(f);
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);  // before ZeroMQ starts its threads
  MergeService service(c);
  if (!f.quiet) {
    std::printf("merge: %zu heads, align by %s, overlap %s, grid %g:%g:%g mm (%d cells)%s%s\n", c.merge.heads.size(), to_string(c.merge.align),
                to_string(c.merge.overlap), c.merge.grid.x_min, c.merge.grid.x_max, c.merge.grid.dx, c.merge.grid.bins(),
                service.publish_endpoint().empty() ? "" : ", publishing on ", service.publish_endpoint().c_str());
    std::fflush(stdout);
  }
  const double tick = f.stats_interval > 0 ? std::min(f.stats_interval, 0.2) : 0.2;
  double waited = 0.0, since_stats = 0.0;
  const char* how = "complete (every head ended its series)";
  while (!service.done()) {
    const timespec wait{0, static_cast<long>(tick * 1e9)};
    const int sig = sigtimedwait(&stop_signals, nullptr, &wait);
    waited += tick, since_stats += tick;
    if (sig > 0) {
      how = sig == SIGINT ? "stopped (SIGINT)" : "stopped (SIGTERM)";
      break;
    }
    if (f.duration > 0 && waited >= f.duration) {
      how = "stopped (--duration)";
      break;
    }
    if (f.stats_interval > 0 && since_stats >= f.stats_interval) {
      since_stats = 0;
      print_counters("running", c, service.counters());
    }
  }
  service.stop();
  print_counters(how, c, service.counters());
  if (!f.quiet)
    for (const auto& p : service.files()) std::printf("  wrote %s\n", p.string().c_str());
  return 0;
}

}  // namespace

Subcommand add_merge(CLI::App& app) {
  auto* sub = app.add_subcommand("merge", "Merge several heads' streams into one calibrated series in the world frame (docs/scale-out.md)");
  auto f = std::make_shared<Flags>();
  sub->add_option("--head", f->heads, "NAME=ENDPOINT of a head's stream (repeat; head i is bit i of a merged row's head mask)")->required();
  sub->add_option("--transforms", f->transforms, "Head-to-world transforms, TOML (stripeline align writes it)")->required();
  sub->add_option("--grid", f->grid, "X_MIN:X_MAX:DX in world mm: the merged rows' cells")->required();
  sub->add_option("--align", f->align, "Row key: encoder, timestamp or frame")->capture_default_str();
  sub->add_option("--tolerance-us", f->tolerance_us, "--align timestamp: rows this close are one row, microseconds")->capture_default_str();
  sub->add_option("--overlap", f->overlap, "Where heads overlap, per cell: mean (of the heads' values) or quality (the head with the best contrast)")
      ->capture_default_str();
  sub->add_option("--rule", f->rule, "Within one head's cell: max, min, mean or nearest")->capture_default_str();
  sub->add_option("--fill", f->fill, "After the merge, fill gaps of up to N empty cells by linear interpolation")->capture_default_str();
  sub->add_option("--window-ms", f->window_ms, "The oldest waiting row waits at most this long for an absent head (and a head silent this long is not waited for); its rows that come later are counted late")->capture_default_str();
  sub->add_option("--max-pending-rows", f->max_pending_rows,
                  "Merged rows waiting at once; beyond, the oldest goes out without its absent heads (counted forced): at least --window-ms x the heads' rows/s")
      ->capture_default_str();
  sub->add_option("--publish", f->publish, "Publish the merged rows here (bound; the wire format's rectified form)");
  sub->add_option("--send-hwm", f->send_hwm, "Merged messages queued per subscriber before drops (counted)")->capture_default_str();
  sub->add_option("--rows-per-message", f->rows_per_message, "Merged rows per message at most (sent as soon as ready)")->capture_default_str();
  sub->add_option("--ply", f->ply, "Write the merged rows as a PLY (x = cell centre, y = the row's world Y, z) when the series ends");
  sub->add_flag("--ascii", f->ascii, "ASCII PLY instead of binary little-endian");
  f->scheduling.add(sub, "merge");
  sub->add_option("--range-map", f->range_map, "Write the merged range map (float32 TIFF, world Z mm, NaN = no data) when the series ends");
  sub->add_option("--server-key", f->server_keys, "CURVE upstream: NAME=FILE, the head's public key file (repeat per head)");
  sub->add_option("--client-key", f->client_key, "CURVE upstream: this merge's secret key file (mode 0600; its public key allowed by the heads)");
  sub->add_flag("--curve", f->curve, "CURVE downstream: consumers of --publish must be listed with --allow");
  sub->add_option("--server-secret-key", f->server_secret, "CURVE downstream: this merge's secret key file (mode 0600)");
  sub->add_option("--allow", f->allow, "CURVE downstream: an allowed consumer's public key file (repeat)");
  sub->add_option("--stats-interval", f->stats_interval, "Seconds between counter lines (0 = only at the end)")->capture_default_str();
  sub->add_option("--duration", f->duration, "Stop after this many seconds (0 = when every head ended its series, or SIGINT/SIGTERM)")
      ->capture_default_str();
  sub->add_flag("-q,--quiet", f->quiet, "Only the counters");
  return {sub, [f] { return merge(*f); }};
}

}  // namespace stripeline::tools
