// The merge of head streams (streaming/merge.h): alignment, the world grid,
// the overlap rule, the accounting; then the service around it (sockets,
// thread, merged stream, files).
#include "streaming/merge.h"

#include <spdlog/spdlog.h>
#include <zmq.hpp>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <limits>
#include <mutex>

#include "core/errors.h"
#include "core/metadata.h"
#include "io/float_tiff_writer.h"
#include "io/ply_writer.h"
#include "streaming/sender.h"
#include "streaming/zmq_context.h"
#include "streaming/series.h"
#include "streaming/subscriber.h"

namespace stripeline {

namespace {
using nlohmann::json;
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();


// Latencies in 1 us bins up to 200 ms (the last bin holds everything beyond).
class LatencyHistogram {
 public:
  void add(double us) {
    const auto i = static_cast<std::size_t>(std::clamp(us, 0.0, static_cast<double>(kBins - 1)));
    ++bins_[i];
    ++n_;
    max_ = std::max(max_, us);
  }
  double quantile(double q) const {
    if (n_ == 0) return 0.0;
    const auto want = static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(n_)));
    std::uint64_t seen = 0;
    for (std::size_t i = 0; i < kBins; ++i)
      if ((seen += bins_[i]) >= want) return static_cast<double>(i) + 1.0;  // the bin's upper edge
    return max_;
  }
  double max() const { return max_; }

 private:
  static constexpr std::size_t kBins = 200'000;
  std::vector<std::uint64_t> bins_ = std::vector<std::uint64_t>(kBins, 0);
  std::uint64_t n_ = 0;
  double max_ = 0;
};

}  // namespace

const char* to_string(AlignKey k) {
  switch (k) {
    case AlignKey::Encoder: return "encoder";
    case AlignKey::Timestamp: return "timestamp";
    case AlignKey::Frame: return "frame";
  }
  return "?";
}
const char* to_string(OverlapRule r) { return r == OverlapRule::Mean ? "mean" : "quality"; }

AlignKey parse_align_key(const std::string& s) {
  if (s == "encoder") return AlignKey::Encoder;
  if (s == "timestamp") return AlignKey::Timestamp;
  if (s == "frame") return AlignKey::Frame;
  throw InputError("align key '" + s + "' is not known (expected encoder, timestamp or frame)");
}

OverlapRule parse_overlap_rule(const std::string& s) {
  if (s == "mean") return OverlapRule::Mean;
  if (s == "quality") return OverlapRule::Quality;
  throw InputError("overlap rule '" + s + "' is not known (expected mean or quality)");
}

void MergeConfig::validate() const {
  if (heads.empty() || heads.size() > static_cast<std::size_t>(kMaxMergeHeads))
    throw InputError("merge: " + std::to_string(heads.size()) + " heads (expected 1.." + std::to_string(kMaxMergeHeads) + ")");
  for (std::size_t i = 0; i < heads.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (heads[i].name == heads[j].name) throw InputError("merge: head '" + heads[i].name + "' is given twice (expected one name per head)");
  grid.validate();
  if (timestamp_tolerance_ns < 0) throw InputError("merge: timestamp tolerance " + std::to_string(timestamp_tolerance_ns) + " ns (expected >= 0)");
  if (window.count() < 1 || window.count() > 600'000) throw InputError("merge: window " + std::to_string(window.count()) + " ms (expected 1..600000)");
  if (max_pending_rows < 1 || max_pending_rows > 1'000'000) throw InputError("merge: max_pending_rows must be 1..1000000");
  if (rows_per_block < 1 || rows_per_block > 65536) throw InputError("merge: rows_per_block must be 1..65536");
}

json MergeCounters::json(const MergeConfig& config) const {
  nlohmann::json h = nlohmann::json::object();
  for (std::size_t i = 0; i < heads.size() && i < config.heads.size(); ++i) {
    const MergeHeadCounters& c = heads[i];
    h[config.heads[i].name] = {{"bit", i},           {"sent", c.sent},           {"received", c.received},
                               {"lost", c.lost},     {"merged", c.merged},       {"late", c.late},
                               {"unmatched", c.unmatched}, {"no_points", c.no_points}, {"source_missing", c.source_missing},
                               {"absent", c.absent}, {"series", c.series},       {"messages", c.messages},
                               {"gap_messages", c.gap_messages}, {"malformed", c.malformed}};
  }
  return {{"rows", rows}, {"rows_no_head", rows_no_head}, {"forced", forced}, {"heads", h},
          {"latency_us", {{"p50", latency_p50_us}, {"p99", latency_p99_us}, {"max", latency_max_us}}}};
}

// ---------------------------------------------------------------------------
// Merger

struct Merger::Impl {
  using Clock = Merger::Clock;
  struct Head {
    std::string series;            // the current series
    bool open = false;             // a series seen and not ended
    std::uint64_t next_row = 0;    // series_row expected next in it
    std::uint64_t sent_closed = 0; // rows numbered by the series before it
    std::optional<std::int64_t> last_key;
    bool heard = false;
    Clock::time_point last_message;
    wire::GapTracker gaps;
    MergeHeadCounters c;
  };
  // A merged row waiting for its heads: per head its binned cells.
  struct Pending {
    std::int64_t key = 0;
    std::uint64_t heads = 0;
    Clock::time_point completed;  // when its last head's row came
    std::vector<float> z;            // [heads][bins]
    std::vector<std::uint16_t> q;    // [heads][bins]: best quality of the head's points in the cell
    std::vector<std::uint64_t> frame_id;
    std::vector<std::int64_t> timestamp;
    std::vector<std::optional<std::int64_t>> encoder;
    std::vector<double> y;
  };

  Impl(const MergeConfig& c, Output o) : cfg(c), out(std::move(o)), heads(c.heads.size()) {
    bins = cfg.grid.bins();
    per_head = cfg.grid;
    per_head.fill = 0;  // gaps are filled after the merge
    key_scratch.assign(static_cast<std::size_t>(bins), 0.0f);
    n_scratch.assign(static_cast<std::size_t>(bins), 0);
    merged_z.assign(static_cast<std::size_t>(bins), kNaN);
    all = cfg.heads.size() == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << cfg.heads.size()) - 1;
    block.rows.clear(bins, 1);
  }

  std::optional<std::int64_t> key_of(const wire::RowBlock& b, int r) const {
    switch (cfg.align) {
      case AlignKey::Encoder: return b.encoder[static_cast<std::size_t>(r)];
      case AlignKey::Timestamp: return b.timestamps_ns[static_cast<std::size_t>(r)];
      case AlignKey::Frame: return static_cast<std::int64_t>(b.frame_ids[static_cast<std::size_t>(r)]);
    }
    return std::nullopt;
  }
  std::int64_t tolerance() const { return cfg.align == AlignKey::Timestamp ? cfg.timestamp_tolerance_ns : 0; }

  Pending* acquire(std::int64_t key, Clock::time_point now) {
    Pending* p;
    if (!free_rows.empty()) {
      p = free_rows.back().release();
      free_rows.pop_back();
    } else {
      p = new Pending;
      const std::size_t n = cfg.heads.size();
      p->z.resize(n * static_cast<std::size_t>(bins));
      p->q.resize(n * static_cast<std::size_t>(bins));
      p->frame_id.resize(n), p->timestamp.resize(n), p->encoder.resize(n), p->y.resize(n);
    }
    p->key = key;
    p->heads = 0;
    p->completed = now;
    return p;
  }
  void release(Pending* p) { free_rows.emplace_back(p); }

  // The waiting row of this key, made (in key order) when there is none;
  // nullptr when making room sent out a later row first (the key is late).
  Pending* row_for(std::int64_t key, Clock::time_point now) {
    const std::int64_t tol = tolerance();
    auto it = pending.end();
    while (it != pending.begin()) {
      Pending* p = *(it - 1);
      if (key >= p->key - tol && key <= p->key + tol) return p;
      if (p->key < key) break;
      --it;
    }
    if (static_cast<int>(pending.size()) >= cfg.max_pending_rows) {
      ++forced;
      emit_front(now);
      if (key <= emitted_upto + tol) return nullptr;
      it = std::lower_bound(pending.begin(), pending.end(), key, [](const Pending* p, std::int64_t k) { return p->key < k; });
    }
    return *pending.insert(it, acquire(key, now));
  }

  // One head row's points through its transform onto the grid (the grid's
  // rule within the cell), with each cell's best quality.
  void bin(int h, const wire::RowBlock& b, int r, Pending& p) {
    const HeadTransform& tf = cfg.heads[static_cast<std::size_t>(h)];
    float* z = p.z.data() + static_cast<std::size_t>(h) * bins;
    std::uint16_t* q = p.q.data() + static_cast<std::size_t>(h) * bins;
    const kernels::RectifyAccumulator acc{z, key_scratch.data(), n_scratch.data()};
    acc.clear(bins);
    std::fill(q, q + bins, std::uint16_t{0});
    const std::size_t per_row = static_cast<std::size_t>(b.slots) * b.width;
    const float* pts = b.points.data() + static_cast<std::size_t>(r) * per_row * 3;
    const std::uint16_t* qual = b.quality.data() + static_cast<std::size_t>(r) * per_row;
    const double my = b.motion_y[static_cast<std::size_t>(r)];
    for (std::size_t i = 0; i < per_row; ++i) {
      const float* pt = pts + 3 * i;
      if (std::isnan(pt[0])) continue;
      double wx, wy, wz;
      tf.apply(pt[0], my + static_cast<double>(pt[1]), pt[2], wx, wy, wz);
      const int cell = kernels::RectifyAccumulator::bin_of(per_head, bins, wx);
      if (cell < 0) continue;
      acc.add(per_head, bins, wx, wz);
      q[cell] = std::max(q[cell], qual[i]);
    }
    acc.finish(per_head, bins);
    const auto hs = static_cast<std::size_t>(h);
    p.frame_id[hs] = b.frame_ids[static_cast<std::size_t>(r)];
    p.timestamp[hs] = b.timestamps_ns[static_cast<std::size_t>(r)];
    p.encoder[hs] = b.encoder[static_cast<std::size_t>(r)];
    p.y[hs] = tf.r[4] * my + tf.t[1];
  }

  void rows(int h, const wire::RowBlock& b, Clock::time_point now) {
    Head& hd = heads[static_cast<std::size_t>(h)];
    if (b.series_row > hd.next_row) hd.c.lost += b.series_row - hd.next_row;  // numbered, never came
    hd.next_row = std::max(hd.next_row, b.series_row + static_cast<std::uint64_t>(b.rows));
    const std::uint64_t bit = std::uint64_t{1} << h;
    for (int r = 0; r < b.rows; ++r) {
      ++hd.c.received;
      const std::optional<std::int64_t> key = key_of(b, r);
      if (!key || (hd.last_key && *key <= *hd.last_key)) {
        ++hd.c.unmatched;
        continue;
      }
      hd.last_key = key;
      if (b.missing[static_cast<std::size_t>(r)]) {
        ++hd.c.source_missing;
        continue;
      }
      if (!b.has_points()) {
        if (hd.c.no_points++ == 0)
          spdlog::warn("merge: head {} sends rows without calibrated points (expected a sheet-of-light calibration and publisher.points = true)",
                       cfg.heads[static_cast<std::size_t>(h)].name);
        continue;
      }
      if (emitted_any && *key <= emitted_upto + tolerance()) {
        ++hd.c.late;
        continue;
      }
      Pending* p = row_for(*key, now);
      if (!p) {
        ++hd.c.late;
        continue;
      }
      if (p->heads & bit) {  // a second row of this head within the tolerance
        ++hd.c.unmatched;
        continue;
      }
      bin(h, b, r, *p);
      p->heads |= bit;
      p->completed = now;
      ++hd.c.merged;
    }
  }

  // Whether the oldest row may go: every absent head has passed its key,
  // has been silent for the window, or ended its series; or the row has
  // been the oldest for the window (a head running ahead of the others
  // makes rows early: they wait from when they are next, not from then).
  bool ready(const Pending& p, Clock::time_point now) const {
    if (p.heads == all || now - front_since >= cfg.window) return true;
    for (std::size_t h = 0; h < heads.size(); ++h) {
      if (p.heads & (std::uint64_t{1} << h)) continue;
      const Head& hd = heads[h];
      if (hd.last_key && *hd.last_key > p.key + tolerance()) continue;
      // A head not heard yet gets the window from the line's first message,
      // not from the merge's start: heads starting together after the merge
      // has waited a while are not silent.
      const Clock::time_point heard = hd.heard ? hd.last_message : line_started;
      if (now - heard >= cfg.window) continue;
      if (hd.heard && !hd.open) continue;
      return false;
    }
    return true;
  }

  void merge_cells(const Pending& p) {
    const std::size_t n = cfg.heads.size();
    for (int i = 0; i < bins; ++i) {
      float sum = 0.0f, best = kNaN;
      int count = 0, best_q = -1;
      for (std::size_t h = 0; h < n; ++h) {
        if (!(p.heads & (std::uint64_t{1} << h))) continue;
        const float v = p.z[h * bins + i];
        if (std::isnan(v)) continue;
        sum += v;
        ++count;
        const int q = p.q[h * bins + i];
        if (q > best_q) best_q = q, best = v;
      }
      merged_z[static_cast<std::size_t>(i)] = count == 0 ? kNaN : cfg.overlap == OverlapRule::Mean ? sum / static_cast<float>(count) : best;
    }
    kernels::RectifyAccumulator::fill_gaps(merged_z.data(), bins, cfg.grid.fill);
  }

  void emit_front(Clock::time_point now) {
    Pending* p = pending.front();
    pending.pop_front();
    front_seen = nullptr;
    merge_cells(*p);
    wire::RowBlock& rb = block.rows;
    if (rb.rows == 0) rb.series_row = rb.index = rows_out;
    rb.z.insert(rb.z.end(), merged_z.begin(), merged_z.end());
    rb.intensity.resize(rb.z.size(), 0);
    rb.stripe_width.resize(rb.z.size(), 0);
    rb.quality.resize(rb.z.size(), 0);
    int first = -1;
    for (std::size_t h = 0; h < heads.size(); ++h) {
      if (p->heads & (std::uint64_t{1} << h)) {
        if (first < 0) first = static_cast<int>(h);
      } else {
        ++heads[h].c.absent;
      }
    }
    const auto f = static_cast<std::size_t>(first < 0 ? 0 : first);
    rb.frame_ids.push_back(first < 0 ? static_cast<std::uint64_t>(p->key) : p->frame_id[f]);
    rb.timestamps_ns.push_back(first < 0 ? 0 : p->timestamp[f]);
    rb.encoder.push_back(first < 0 ? std::nullopt : p->encoder[f]);
    rb.missing.push_back(p->heads == 0 ? 1 : 0);
    ++rb.rows;
    block.heads.push_back(p->heads);
    block.y_mm.push_back(first < 0 ? std::numeric_limits<double>::quiet_NaN() : p->y[f]);
    rows_no_head += p->heads == 0;
    latency.add(std::chrono::duration<double, std::micro>(now - p->completed).count());
    emitted_upto = p->key;
    emitted_any = true;
    ++rows_out;
    release(p);
    if (rb.rows >= cfg.rows_per_block) hand_out();
  }

  void hand_out() {
    if (block.rows.rows == 0) return;
    out(block);
    block.rows.clear(bins, 1);
    block.heads.clear();
    block.y_mm.clear();
  }

  void drain(Clock::time_point now) {
    while (!pending.empty()) {
      if (pending.front() != front_seen) front_seen = pending.front(), front_since = now;
      if (!ready(*pending.front(), now)) break;
      emit_front(now);
    }
    hand_out();
  }

  void series_end(Head& hd, const wire::Decoded& m) {
    const std::uint64_t rows_in = m.header.value("rows_in", hd.next_row);
    if (rows_in > hd.next_row) hd.c.lost += rows_in - hd.next_row;  // taken by the publisher, never received
    hd.sent_closed += std::max(rows_in, hd.next_row);
    hd.next_row = 0;
    hd.open = false;
  }

  MergeConfig cfg;
  Output out;
  std::vector<Head> heads;
  int bins = 0;
  kernels::RectifyGrid per_head;
  std::vector<float> key_scratch, merged_z;
  std::vector<std::uint32_t> n_scratch;
  std::uint64_t all = 0;
  std::deque<Pending*> pending;
  const Pending* front_seen = nullptr;  // the oldest waiting row, and since when it is
  Clock::time_point front_since;
  std::vector<std::unique_ptr<Pending>> free_rows;
  MergedBlock block;
  std::int64_t emitted_upto = 0;
  bool emitted_any = false;
  std::uint64_t rows_out = 0, rows_no_head = 0, forced = 0;
  LatencyHistogram latency;
  Clock::time_point line_started;  // the first message from any head
  bool line_heard = false;
};

Merger::Merger(MergeConfig config, Output out) : config_((config.validate(), std::move(config))), impl_(std::make_unique<Impl>(config_, std::move(out))) {}

Merger::~Merger() {
  for (auto* p : impl_->pending) delete p;
}

void Merger::on_message(int h, const wire::Decoded& m, Clock::time_point now) {
  Impl::Head& hd = impl_->heads.at(static_cast<std::size_t>(h));
  if (!impl_->line_heard) impl_->line_started = now, impl_->line_heard = true;
  hd.heard = true;
  hd.last_message = now;
  ++hd.c.messages;
  if (m.series != hd.series) {  // a new series: the head (re)started, or we joined it
    if (hd.open) hd.sent_closed += hd.next_row;  // it ended without series-end (killed): what it numbered is what it sent
    hd.series = m.series;
    hd.open = true;
    hd.next_row = 0;
    ++hd.c.series;
  }
  if (auto g = hd.gaps.observe(m.series, m.seq)) hd.c.gap_messages += g->count;
  switch (m.topic) {
    case wire::Topic::Profile: impl_->rows(h, *m.rows, now); break;
    case wire::Topic::SeriesEnd: impl_->series_end(hd, m); break;
    default: break;
  }
  impl_->drain(now);
}

void Merger::on_malformed(int h) { ++impl_->heads.at(static_cast<std::size_t>(h)).c.malformed; }

void Merger::expire(Clock::time_point now) { impl_->drain(now); }

void Merger::flush_all(Clock::time_point now) {
  while (!impl_->pending.empty()) impl_->emit_front(now);
  impl_->hand_out();
}

bool Merger::all_ended() const {
  if (!impl_->pending.empty()) return false;
  for (const auto& h : impl_->heads)
    if (!h.heard || h.open) return false;
  return true;
}

MergeCounters Merger::counters() const {
  MergeCounters c;
  c.rows = impl_->rows_out;
  c.rows_no_head = impl_->rows_no_head;
  c.forced = impl_->forced;
  for (const auto& h : impl_->heads) {
    MergeHeadCounters hc = h.c;
    hc.sent = h.sent_closed + (h.open ? h.next_row : 0);
    c.heads.push_back(hc);
  }
  c.latency_p50_us = impl_->latency.quantile(0.50);
  c.latency_p99_us = impl_->latency.quantile(0.99);
  c.latency_max_us = impl_->latency.max();
  return c;
}

// ---------------------------------------------------------------------------
// MergeService

struct MergeService::Impl {
  explicit Impl(MergeServiceConfig c) : cfg(std::move(c)) {
    cfg.merge.validate();
    const std::size_t n = cfg.merge.heads.size();
    if (cfg.endpoints.size() != n)
      throw InputError("merge: " + std::to_string(cfg.endpoints.size()) + " endpoints for " + std::to_string(n) + " heads (expected one per head)");
    if (!cfg.server_keys.empty() && cfg.server_keys.size() != n) throw InputError("merge: CURVE server keys must be given per head");
    for (std::size_t i = 0; i < n; ++i) {
      const std::string key = cfg.server_keys.empty() ? "" : cfg.server_keys[i];
      subs.push_back(std::make_unique<Subscriber>(SubscriberOptions{cfg.endpoints[i], cfg.rcv_hwm, key, key.empty() ? "" : cfg.client_key}, &ctx));
    }
    if (!cfg.publish.empty()) {
      if (cfg.publish.find("://") == std::string::npos)
        throw InputError("merge: publish endpoint '" + cfg.publish + "' is not a ZeroMQ endpoint (expected e.g. tcp://127.0.0.1:5570)");
      sender = std::make_unique<Sender>(SenderOptions{cfg.publish, cfg.send_hwm, 1000, 1000, cfg.curve, cfg.scheduling});
    }
    merger = std::make_unique<Merger>(cfg.merge, [this](const MergedBlock& b) { on_block(b); });
    thread = std::thread([this] { loop(); });
  }

  ~Impl() { stop(); }

  json grid_json() const {
    const auto& g = cfg.merge.grid;
    return {{"x_min", g.x_min}, {"x_max", g.x_max}, {"dx", g.dx}, {"bins", g.bins()}, {"rule", kernels::rectify_rule_name(g.rule)}, {"fill", g.fill}};
  }

  // Sends one message of the merged series (counted like the publisher's: a
  // message nobody subscribed to is a no_subscriber drop).
  void send(wire::Topic t, const std::function<wire::Message(json)>& encode, bool control, std::uint64_t rows) {
    if (!sender) return;
    sender->drain_subscriptions();
    const std::uint64_t seq = series.take_seq();
    std::optional<DropReason> dropped = DropReason::NoSubscriber;
    if (sender->matching(wire::topic_name(t)) > 0) {
      wire::Message m = encode(wire::base_header(t, series.id(), seq));
      dropped = sender->send(m, control);
    }
    if (rows == 0) return;
    if (dropped) rows_dropped[static_cast<int>(*dropped)] += rows;
    else rows_published += rows;
  }

  void start_series() {
    series.start();
    started = true;
    send(
        wire::Topic::SeriesStart,
        [&](json h) {
          h.update(json(metadata::document("series-start")));
          h["source"] = "merge";
          h["width"] = cfg.merge.grid.bins();
          h["slots"] = 1;
          h["unit"] = "mm";
          h["point_unit"] = "mm";
          h["calibration"] = wire::calibration_json(LinearCalibration{});
          h["height_bits"] = kDefaultHeightCodeBits;
          h["rows_per_message"] = cfg.merge.rows_per_block;
          h["heightmap_rows"] = cfg.merge.rows_per_block;
          h["format"] = wire::kFormatVersion;
          h["form"] = "rectified";
          h["grid"] = grid_json();
          json heads = json::array();
          for (std::size_t i = 0; i < cfg.merge.heads.size(); ++i) heads.push_back({{"name", cfg.merge.heads[i].name}, {"bit", i}, {"endpoint", cfg.endpoints[i]}});
          h["merge"] = {{"heads", heads}, {"align", to_string(cfg.merge.align)}, {"overlap", to_string(cfg.merge.overlap)},
                        {"window_ms", cfg.merge.window.count()}, {"timestamp_tolerance_ns", cfg.merge.timestamp_tolerance_ns}};
          return wire::encode_control(wire::Topic::SeriesStart, h);
        },
        true, 0);
  }

  void on_block(const MergedBlock& b) {
    if (!started) start_series();
    rows_in += static_cast<std::uint64_t>(b.rows.rows);
    send(
        wire::Topic::Heightmap,
        [&](json h) {
          h["calibration"] = wire::calibration_json(LinearCalibration{});
          h["unit"] = "mm";
          h["height_bits"] = kDefaultHeightCodeBits;
          h["form"] = "rectified";
          h["grid"] = grid_json();
          h["heads"] = b.heads;
          return wire::encode_rows(wire::Topic::Heightmap, std::move(h), b.rows);
        },
        false, static_cast<std::uint64_t>(b.rows.rows));
    if (cfg.on_rows) cfg.on_rows(b);
    send_measurements();
    if (!cfg.range_map.empty() || !cfg.ply.empty()) {
      range_rows.insert(range_rows.end(), b.rows.z.begin(), b.rows.z.end());
      row_y.insert(row_y.end(), b.y_mm.begin(), b.y_mm.end());
    }
  }

  // The measured parts held (publish_measurement), in the open series.
  void send_measurements() {
    std::vector<json> parts;
    {
      std::lock_guard lock(held_mu);
      if (!started || held.empty()) return;
      parts.swap(held);
    }
    for (auto& part : parts)
      send(
          wire::Topic::Measurement,
          [&](json h) {
            h["part"] = std::move(part);
            return wire::encode_control(wire::Topic::Measurement, h);
          },
          false, 0);
  }

  void end_series(const char* reason) {
    if (!started) start_series();
    if (cfg.on_series_end) cfg.on_series_end();
    send_measurements();
    const MergeCounters c = merger->counters();
    send(
        wire::Topic::SeriesEnd,
        [&](json h) {
          h["reason"] = reason;
          h["profile_rows"] = 0;
          h["profile_messages"] = 0;
          h["rows_in"] = rows_in;
          h["merged_rows"] = rows_published;
          h["rows_dropped"] = drops_json(rows_dropped);
          h["messages"] = series.messages();
          h["merge"] = c.json(cfg.merge);
          return wire::encode_control(wire::Topic::SeriesEnd, h);
        },
        true, 0);
    series.close();
    write_files();
  }

  void write_files() {
    const int bins = cfg.merge.grid.bins();
    const auto rows = static_cast<std::int64_t>(range_rows.size() / static_cast<std::size_t>(bins));
    if (rows == 0) return;
    metadata::Json d = metadata::document("range-map");
    d["values"] = "world Z mm, NaN = no data (stripeline merge)";
    d["grid"] = grid_json();
    d["grid"]["x_min_mm"] = cfg.merge.grid.x_min;  // as a range map of `replay --range-map` names them
    d["grid"]["dx_mm"] = cfg.merge.grid.dx;
    const auto first = std::find_if(row_y.begin(), row_y.end(), [](double y) { return std::isfinite(y); });
    if (cfg.y_step_mm > 0 && first != row_y.end())
      d["calibration"] = {{"y_source", "frame"}, {"y_step_mm", cfg.y_step_mm},
                          {"y_offset_mm", *first - cfg.y_step_mm * static_cast<double>(first - row_y.begin())}};
    if (!cfg.range_map.empty()) {
      io::write_float_tiff(cfg.range_map, range_rows.data(), bins, rows, metadata::text(d));
      written.push_back(cfg.range_map);
    }
    if (!cfg.ply.empty()) {
      io::PlyWriter ply(cfg.ply, cfg.ply_ascii ? io::PlyEncoding::Ascii : io::PlyEncoding::BinaryLittleEndian,
                        {"stripeline merge: merged rows, x = world X cell centre, y = the row's world Y, z = world Z; units mm"});
      std::vector<io::PlyVertex> v;
      for (std::int64_t r = 0; r < rows; ++r) {
        v.clear();
        for (int i = 0; i < bins; ++i) {
          const float z = range_rows[static_cast<std::size_t>(r) * bins + i];
          if (std::isnan(z)) continue;
          io::PlyVertex p;
          p.x = static_cast<float>(cfg.merge.grid.x_min + i * cfg.merge.grid.dx);
          p.y = row_y[static_cast<std::size_t>(r)];
          p.z = z;
          v.push_back(p);
        }
        ply.write(v.data(), v.size());
      }
      ply.finish();
      written.push_back(cfg.ply);
    }
  }

  void loop() {
    try {  // checked when the context was made: a refusal now is the kernel's change of mind
      apply_to_current_thread(cfg.scheduling, "merge");
    } catch (const std::exception& e) {
      spdlog::error("{} (the merge runs with the default scheduling)", e.what());
    }
    if (sender) {
      sender->drain_subscriptions();
      subscribers = sender->matching("heightmap");
    }
    std::vector<zmq::pollitem_t> items;
    for (auto& s : subs) items.push_back({s->poll_handle(), 0, ZMQ_POLLIN, 0});
    std::vector<std::uint64_t> malformed_seen(subs.size(), 0);
    const auto tick = std::chrono::milliseconds(std::clamp<long>(cfg.merge.window.count() / 4, 1, 10));
    try {
      while (!stopping.load()) {
        zmq::poll(items.data(), items.size(), tick);
        std::lock_guard lock(mu);
        for (std::size_t i = 0; i < subs.size(); ++i) {
          if (!(items[i].revents & ZMQ_POLLIN)) continue;
          for (int k = 0; k < 256; ++k) {  // at most this many per head per turn: the others get their turn
            auto m = subs[i]->receive(std::chrono::milliseconds(0));
            while (subs[i]->malformed() > malformed_seen[i]) ++malformed_seen[i], merger->on_malformed(static_cast<int>(i));
            if (!m) break;
            merger->on_message(static_cast<int>(i), *m, Merger::Clock::now());
          }
        }
        merger->expire(Merger::Clock::now());
        send_measurements();
        if (sender) {
          sender->drain_subscriptions();
          subscribers = sender->matching("heightmap");
        }
        if (merger->all_ended()) {
          end_series("complete");
          finished = true;
          break;
        }
      }
      if (!finished) {
        std::lock_guard lock(mu);
        merger->flush_all(Merger::Clock::now());
        end_series("stopped");
        finished = true;
      }
    } catch (const std::exception& e) {
      spdlog::error("merge: {}", e.what());
      error = e.what();
      finished = true;
    }
    done_cv.notify_all();
  }

  void stop() {
    stopping = true;
    if (thread.joinable()) thread.join();
  }

  MergeServiceConfig cfg;
  zmq::context_t ctx{make_zmq_context(cfg.scheduling, "merge")};  // one I/O thread for every head's socket
  std::vector<std::unique_ptr<Subscriber>> subs;
  std::unique_ptr<Sender> sender;
  std::unique_ptr<Merger> merger;
  Series series;
  bool started = false;
  std::uint64_t rows_in = 0, rows_published = 0;
  std::array<std::uint64_t, kDropReasons> rows_dropped{};
  std::vector<float> range_rows;
  std::vector<double> row_y;
  std::mutex held_mu;  // guards held (never with mu: publish_measurement runs on a measuring thread)
  std::vector<json> held;
  std::vector<std::filesystem::path> written;
  std::string error;
  mutable std::mutex mu;
  std::condition_variable done_cv;
  std::atomic<bool> stopping{false};
  std::atomic<bool> finished{false};
  std::atomic<int> subscribers{0};
  std::thread thread;
};

MergeService::MergeService(MergeServiceConfig config) : impl_(std::make_unique<Impl>(std::move(config))) {}
MergeService::~MergeService() = default;

std::string MergeService::publish_endpoint() const { return impl_->sender ? impl_->sender->endpoint() : ""; }
bool MergeService::done() const { return impl_->finished.load(); }

bool MergeService::wait_for_subscribers(int n, std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (impl_->subscribers.load() < n) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

bool MergeService::wait_done(std::chrono::milliseconds timeout) const {
  std::unique_lock lock(impl_->mu);
  return impl_->done_cv.wait_for(lock, timeout, [this] { return impl_->finished.load(); });
}

void MergeService::stop() {
  impl_->stop();
  if (!impl_->error.empty()) throw RuntimeFailure("merge: " + impl_->error);
}

void MergeService::publish_measurement(const nlohmann::json& part) {
  std::lock_guard lock(impl_->held_mu);
  auto& held = impl_->held;
  if (held.size() >= 64) held.erase(held.begin());
  held.push_back(part);
}

MergeCounters MergeService::counters() const {
  std::lock_guard lock(impl_->mu);
  return impl_->merger->counters();
}

std::vector<std::filesystem::path> MergeService::files() const {
  std::lock_guard lock(impl_->mu);
  return impl_->written;
}

}  // namespace stripeline
