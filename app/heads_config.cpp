#include "app/heads_config.h"

#include <filesystem>
#include <set>

#include "app/config.h"
#include "calibration/head_alignment.h"
#include "core/errors.h"
#include "core/thread_scheduling.h"
#include "kernels/rectify.h"
#include "streaming/curve.h"

namespace stripeline {

namespace {
[[noreturn]] void fail(const std::string& key, const std::string& what) { throw ConfigError(key + ": " + what); }

// The public key of the secret key in a key file (ConfigError as read_curve_key).
std::string curve_public_key_of(const std::filesystem::path& secret_key_file) {
  const std::string secret = read_curve_key(secret_key_file, true);
  char pub[41];
  if (zmq_curve_public(pub, secret.c_str()) != 0) throw ConfigError(secret_key_file.string() + ": not a valid CURVE secret key");
  return pub;
}

// The grid, its rule and fill as the publisher's rectified rows read them (the one parser of X_MIN:X_MAX:DX).
kernels::RectifyGrid grid_of(const DaemonMergeConfig& m) {
  PublisherConfig g;
  g.rectified_grid = m.grid;
  g.rectified_rule = m.rule;
  g.rectified_fill = m.fill;
  return g.rectify_grid();
}

ThreadScheduling scheduling_of(const DaemonMergeConfig& m) { return {m.realtime_priority, parse_cpu_list(m.cpus, "cpus")}; }
}  // namespace

void DaemonMergeConfig::validate() const {
  if (!enabled) return;
  if (transforms.empty()) fail("transforms", "is required with enabled = true (expected the file `stripeline align` writes)");
  if (grid.empty()) fail("grid", "is required with enabled = true (expected X_MIN:X_MAX:DX in world mm)");
  try {
    grid_of(*this).validate();
  } catch (const InputError& e) {
    fail("grid", e.what());
  }
  try {
    parse_align_key(align);
  } catch (const InputError& e) {
    fail("align", e.what());
  }
  try {
    parse_overlap_rule(overlap);
  } catch (const InputError& e) {
    fail("overlap", e.what());
  }
  if (!(tolerance_us >= 0)) fail("tolerance_us", "must be >= 0 microseconds");
  if (window_ms < 1 || window_ms > 600000) fail("window_ms", "must be 1..600000 ms");
  if (max_pending_rows < 1 || max_pending_rows > 1000000) fail("max_pending_rows", "must be 1..1000000 rows");
  if (publish.find("://") == std::string::npos) fail("publish", "'" + publish + "' is not a ZeroMQ endpoint (expected e.g. tcp://127.0.0.1:5570)");
  if (send_hwm < 1) fail("send_hwm", "must be >= 1");
  if (rows_per_message < 1 || rows_per_message > 65536) fail("rows_per_message", "must be 1..65536");
  if (!(subscribe_timeout > 0 && subscribe_timeout <= 3600)) fail("subscribe_timeout", "must be > 0 and <= 3600 seconds");
  const auto ext = [](const std::string& name) { return std::filesystem::path(name).extension().string(); };
  if (!range_map.empty() && ext(range_map) != ".tif" && ext(range_map) != ".tiff")
    fail("range_map", "'" + range_map + "': expected a .tif or .tiff name (a float32 TIFF)");
  if (!ply.empty() && ext(ply) != ".ply") fail("ply", "'" + ply + "': expected a .ply name");
  if (realtime_priority < 0 || realtime_priority > 99) fail("realtime_priority", "must be 0 (off) or 1..99 (SCHED_FIFO)");
  scheduling_of(*this).validate("cpus");
}

void check_heads(const std::vector<HeadEntry>& heads, const DaemonMergeConfig& merge) {
  std::set<std::string> names, endpoints;
  for (std::size_t i = 0; i < heads.size(); ++i) {
    const std::string key = "head[" + std::to_string(i) + "]";
    const Config& c = *heads[i].config;
    if (!names.insert(heads[i].name).second) fail(key + ".name", "'" + heads[i].name + "' is the name of an earlier head (expected one name per head)");
    if (c.publish && c.publisher.endpoint.find(":*") == std::string::npos && !endpoints.insert(c.publisher.endpoint).second)
      fail(key + ".publisher.endpoint", "'" + c.publisher.endpoint + "' is an earlier head's (expected one endpoint per head)");
    if (merge.enabled && !c.publish) fail(key + ".publisher.enabled", "must be true with [merge] enabled (the merge subscribes to every head's stream)");
    if (merge.enabled && c.publisher.curve.enabled && merge.client_key.empty())
      fail(key + ".security.curve", "needs merge.client_key with [merge] enabled (the merge's secret key file, listed in the head's security.client_keys)");
    if (merge.enabled && !merge.measure.job.empty() && heads[i].name == "merged")
      fail(key + ".name", "'merged' labels the merged scan's job ([merge.measure]) in /metrics and records (expected another name)");
    if (merge.enabled && c.publisher.endpoint.find(":*") != std::string::npos)
      fail(key + ".publisher.endpoint", "'" + c.publisher.endpoint + "' is ephemeral; with [merge] enabled every head needs a fixed endpoint");
  }
  if (merge.enabled && heads.empty()) fail("merge.enabled", "needs [[head]] sections (the merge of one daemon's heads)");
  if (merge.enabled && endpoints.count(merge.publish)) fail("merge.publish", "'" + merge.publish + "' is a head's endpoint (expected its own)");
}

MergeServiceConfig merge_service_config(const DaemonMergeConfig& m, const std::vector<HeadEntry>& heads) {
  MergeServiceConfig c;
  const HeadTransforms tf = load_head_transforms(m.transforms);
  for (const HeadEntry& h : heads) {
    const HeadTransform* t = tf.find(h.name);
    if (!t) throw InputError(m.transforms + ": no [[head]] named '" + h.name + "' (merge.transforms: expected one for every head of the daemon)");
    c.merge.heads.push_back(*t);
    // The head's own endpoint; a wildcard address is reached on loopback.
    std::string ep = h.config->publisher.endpoint;
    if (const auto star = ep.find("://*:"); star != std::string::npos) ep.replace(star + 3, 1, "127.0.0.1");
    c.endpoints.push_back(ep);
    // CURVE: the head's server public key, from its own certificate (a bare secret key holds no public key to read).
    const CurveConfig& curve = h.config->publisher.curve;
    c.server_keys.push_back(curve.enabled ? curve.server_secret_key.string() : "");
    if (curve.enabled && read_curve_key(curve.server_secret_key, false) != curve_public_key_of(curve.server_secret_key))
      throw ConfigError(curve.server_secret_key.string() + ": head '" + h.name +
                        "': with [merge] a head's server_secret_key must be a ZeroMQ certificate with public-key and secret-key (`stripeline daemon --keygen BASE` writes one)");
  }
  c.client_key = m.client_key;
  if (!m.client_key.empty()) read_curve_key(m.client_key, true);  // missing, unreadable or too open: refused at start (ConfigError)
  c.merge.align = parse_align_key(m.align);
  c.merge.overlap = parse_overlap_rule(m.overlap);
  c.merge.timestamp_tolerance_ns = static_cast<std::int64_t>(m.tolerance_us * 1000.0);
  c.merge.window = std::chrono::milliseconds(m.window_ms);
  c.merge.max_pending_rows = m.max_pending_rows;
  c.merge.rows_per_block = m.rows_per_message;
  c.merge.grid = grid_of(m);
  c.merge.validate();
  c.publish = m.publish;
  c.send_hwm = m.send_hwm;
  c.scheduling = scheduling_of(m);
  c.scheduling.check_permitted("merge.realtime_priority");  // at start, naming the key (the service checks again)
  return c;
}

}  // namespace stripeline
