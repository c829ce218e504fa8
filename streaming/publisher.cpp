// The publisher: profiles in, wire messages out. The socket and its drop
// accounting are streaming/sender.cpp, CURVE streaming/curve.cpp, the series
// bookkeeping streaming/series.cpp; this file encodes rows and decides what
// goes out when.
#include "streaming/publisher.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <mutex>
#include <thread>

#include "core/errors.h"
#include "core/metadata.h"
#include "core/profile_mapping.h"
#include "stages/heightmap_filters.h"
#include "streaming/series.h"
#include "streaming/wire_format.h"

namespace stripeline {

namespace {
using clock = std::chrono::steady_clock;
using nlohmann::json;
}  // namespace

void PublisherConfig::validate() const {
  auto fail = [](const std::string& key, const std::string& what) { throw ConfigError("publisher." + key + ": " + what); };
  if (endpoint.find("://") == std::string::npos)
    fail("endpoint", "'" + endpoint + "' is not a ZeroMQ endpoint (expected e.g. tcp://127.0.0.1:5556 or ipc:///run/stripeline.sock)");
  if (send_hwm < 1 || send_hwm > 10'000'000) fail("send_hwm", std::to_string(send_hwm) + " is out of range (expected 1..10000000 messages)");
  if (rows_per_message < 1 || rows_per_message > 65536) fail("rows_per_message", "must be 1..65536");
  if (heightmap_rows < 0 || heightmap_rows > 1'000'000) fail("heightmap_rows", "must be 0 (off)..1000000");
  if (!(stats_interval >= 0.0)) fail("stats_interval", "must be >= 0 seconds");
  if (linger_ms < 0 || linger_ms > 60000) fail("linger_ms", "must be 0..60000");
  if (control_timeout_ms < 0 || control_timeout_ms > 60000) fail("control_timeout_ms", "must be 0..60000");
  try {
    validate_height_bits(height_bits);
  } catch (const ConfigError& e) {
    throw ConfigError(std::string("publisher.") + e.what());
  }
  try {
    kernels::parse_rectify_rule(rectified_rule);
  } catch (const InputError& e) {
    fail("rectified_rule", e.what());
  }
  if (rectified_fill < 0 || rectified_fill > 1'000'000) fail("rectified_fill", "must be 0..1000000 bins");
  if (!rectified_grid.empty()) {
    if (heightmap_rows == 0) fail("rectified_grid", "needs heightmap_rows > 0 (rectified rows follow each heightmap message)");
    try {
      rectify_grid();
    } catch (const InputError& e) {
      fail("rectified_grid", e.what());
    }
  }
  curve.validate();
}

kernels::RectifyGrid PublisherConfig::rectify_grid() const {
  kernels::RectifyGrid g;
  char tail = 0;
  if (std::sscanf(rectified_grid.c_str(), "%lf:%lf:%lf%c", &g.x_min, &g.x_max, &g.dx, &tail) != 3)
    throw InputError("'" + rectified_grid + "' is not X_MIN:X_MAX:DX in mm (e.g. -50:50:0.1)");
  g.rule = kernels::parse_rectify_rule(rectified_rule);
  g.fill = rectified_fill;
  g.validate();
  return g;
}

class Publisher::Impl {
 public:
  explicit Impl(PublisherConfig c)
      : cfg((c.validate(), std::move(c))),
        sender(SenderOptions{cfg.endpoint, cfg.send_hwm, cfg.linger_ms, cfg.control_timeout_ms, cfg.curve, {}}) {
    hm.keep_primary = !cfg.heightmap_filters.empty();  // only the heightmap block feeds the filters
    spdlog::info("publisher: bound {} (send_hwm {}, {} rows per message{})", sender.endpoint(), cfg.send_hwm, cfg.rows_per_message,
                 cfg.curve.enabled ? ", CURVE with client allowlist" : "");
  }

  // A message of the open series: takes a seq, encodes it only if someone
  // listens, sends it, counts the outcome. Returns true when sent.
  bool publish(wire::Topic t, const std::function<wire::Message(json)>& encode, bool control, std::uint64_t rows) {
    const std::uint64_t seq = series.take_seq();
    std::optional<DropReason> dropped = DropReason::NoSubscriber;
    std::size_t bytes = 0;
    if (sender.matching(wire::topic_name(t)) > 0) {
      try {
        wire::Message m = encode(wire::base_header(t, series.id(), seq));
        bytes = m.bytes();
        dropped = sender.send(m, control);
      } catch (const std::exception& ex) {
        if (errors_logged++ < 10) spdlog::error("publisher: encoding a {} message failed: {}", wire::topic_name(t), ex.what());
        dropped = DropReason::Error;
      }
    }
    series.record(t, rows, dropped);
    if (!dropped) {
      ++messages_sent;
      bytes_sent += bytes;
      if (t == wire::Topic::Profile) rows_published += rows;
      if (t == wire::Topic::Heightmap) heightmap_rows_published += rows;
      return true;
    }
    const int r = static_cast<int>(*dropped);
    ++messages_dropped[r];
    if (control && *dropped != DropReason::NoSubscriber) {
      // Never silent: every lost series-start/series-end is counted and logged.
      ++control_dropped[t == wire::Topic::SeriesStart ? 0 : 1];
      spdlog::error("publisher: {} of series {} not sent ({}): a subscriber stayed at the high-water mark for publisher.control_timeout_ms = {} ms "
                    "(counted in stripeline_control_messages_dropped_total)",
                    wire::topic_name(t), series.id(), to_string(*dropped), cfg.control_timeout_ms);
    }
    if (t == wire::Topic::Profile) rows_dropped[r] += rows;
    if (*dropped == DropReason::Hwm && hwm_logged++ < 5)
      spdlog::warn("publisher: a subscriber is at the high-water mark ({} messages): {} message seq {} dropped (counted)", cfg.send_hwm,
                   wire::topic_name(t), seq);
    return false;
  }

  json series_context() const {
    json h;
    h["calibration"] = wire::calibration_json(info.calibration);
    h["unit"] = info.calibration.unit();
    h["height_bits"] = cfg.height_bits;
    return h;
  }

  void publish_rows(const ProfileSpan& p, int first, int count) {
    publish(
        wire::Topic::Profile,
        [&](json h) {
          h.update(series_context());
          return wire::encode_rows(wire::Topic::Profile, std::move(h), p, first, count, mapping, series.counters().rows_in, cfg.points);
        },
        false, static_cast<std::uint64_t>(count));
  }

  // A heightmap message of the rows gathered so far, through the configured
  // height-map filters first.
  void publish_heightmap() {
    if (!cfg.heightmap_filters.empty()) filter_heightmap(hm);  // hm.keep_primary is set in the constructor
    publish(
        wire::Topic::Heightmap,
        [&](json h) {
          h.update(series_context());
          return wire::encode_rows(wire::Topic::Heightmap, std::move(h), hm);
        },
        false, static_cast<std::uint64_t>(hm.rows));
    if (rectified && rect.rows > 0) {
      publish(
          wire::Topic::Heightmap,
          [&](json h) {
            h.update(series_context());
            h["form"] = "rectified";
            h["unit"] = "mm";
            h["grid"] = {{"x_min", grid.x_min}, {"x_max", grid.x_max}, {"dx", grid.dx}, {"bins", bins},
                         {"rule", cfg.rectified_rule}, {"fill", grid.fill}};
            return wire::encode_rows(wire::Topic::Heightmap, std::move(h), rect);
          },
          false, 0);
      rect.clear(bins, 1);
    }
  }

  // Frames [first, first + count) of a span as rectified rows: each frame's
  // calibrated points (the processor's, computed on its backend) binned onto
  // the grid, Z in mm, NaN = no data. Only z carries data; the other parts
  // are zero.
  void append_rectified(const ProfileSpan& p, int first, int count, std::uint64_t series_row_of_first) {
    if (rect.rows == 0) {
      rect.series_row = series_row_of_first;
      rect.index = p.index(first);
    }
    for (int f = first; f < first + count; ++f) {
      const FrameMeta& m = p.meta[f];
      rect.frame_ids.push_back(m.frame_id);
      rect.timestamps_ns.push_back(m.timestamp_ns);
      rect.encoder.push_back(m.has_encoder ? std::optional<std::int64_t>(m.encoder) : std::nullopt);
      rect.missing.push_back(m.missing ? 1 : 0);
      const std::size_t at = rect.z.size();
      rect.z.resize(at + static_cast<std::size_t>(bins));
      const kernels::RectifyAccumulator acc{rect.z.data() + at, rect_key.data(), rect_n.data()};
      acc.clear(bins);
      const double y = mapping.point_y(p.index(f), m);
      for (int x = 0; x < p.width; ++x)
        for (int s = 0; s < p.peaks(f, x); ++s) {
          double X, Y, Z;
          if (mapping.point(p, f, s, x, y, X, Y, Z)) acc.add(grid, bins, X, Z);
        }
      acc.finish(grid, bins);
      rect.intensity.resize(rect.intensity.size() + static_cast<std::size_t>(bins), 0);
      rect.stripe_width.resize(rect.stripe_width.size() + static_cast<std::size_t>(bins), 0);
      rect.quality.resize(rect.quality.size() + static_cast<std::size_t>(bins), 0);
      ++rect.rows;
    }
  }

  // Filters slot 0 of the block in the height-code domain, from the exact
  // fixed-point positions (so the result equals the file sink's), then back
  // to z. Set up once per block height (a scan's last message may be shorter).
  void filter_heightmap(wire::RowBlock& b) {
    if (!filters_parsed) {
      filter_steps = parse_filter_step_list(cfg.heightmap_filters);
      if (filter_steps.back().op == FilterOp::To8) filter_steps.pop_back();  // the preview's business, not the stream's
      filters_parsed = true;
    }
    if (filter_steps.empty()) return;
    if (!filter || filter->width() != b.width || filter->height() != b.rows) {
      filter = make_heightmap_filter(cfg.filter_backend, b.width, b.rows, filter_steps);
      codes.resize(static_cast<std::size_t>(b.width) * b.rows);
      filtered.resize(codes.size());
    }
    const std::size_t per_row = static_cast<std::size_t>(b.slots) * b.width;
    for (std::size_t i = 0; i < codes.size(); ++i) codes[i] = mapping.height_code(b.primary[i]);
    filter->run(codes.data(), filtered.data());
    for (int r = 0; r < b.rows; ++r)
      for (int x = 0; x < b.width; ++x) b.z[r * per_row + x] = mapping.z_of_code(filtered[static_cast<std::size_t>(r) * b.width + x]);
  }

  json counters_json() const {
    std::array<std::uint64_t, kDropReasons> rd{}, md{};
    for (int i = 0; i < kDropReasons; ++i) rd[i] = rows_dropped[i], md[i] = messages_dropped[i];
    return {{"rows_in", rows_in.load()},
            {"rows_published", rows_published.load()},
            {"rows_dropped", drops_json(rd)},
            {"messages_sent", messages_sent.load()},
            {"messages_dropped", drops_json(md)},
            {"bytes_sent", bytes_sent.load()},
            {"subscribers", sender.matching("profile")}};
  }

  void send_stats() {
    last_stats = clock::now();
    publish(
        wire::Topic::Stats,
        [&](json h) {
          const SeriesCounters& c = series.counters();
          h["series_rows_in"] = c.rows_in;
          h["series_rows_published"] = c.rows_published;
          h["series_rows_dropped"] = drops_json(c.rows_dropped);
          h["total"] = counters_json();
          return wire::encode_control(wire::Topic::Stats, h);
        },
        false, 0);
  }

  bool stats_due() const {
    return series.open() && cfg.stats_interval > 0 && clock::now() - last_stats >= std::chrono::duration<double>(cfg.stats_interval);
  }

  void start_series(const ScanInfo& scan) {
    if (series.open()) end_series("restarted");
    sender.drain_subscriptions();
    series.start();  // keeps the annotations made before it
    info = scan;
    // With the sheet: the points of rectified rows and of the points parts (z stays in rows).
    mapping = ProfileMapping(scan.calibration, cfg.height_bits, scan.sheet);
    hm.clear(scan.layout.width, scan.profile_slots);
    rectified = !cfg.rectified_grid.empty() && scan.sheet != nullptr;
    if (!cfg.rectified_grid.empty() && !scan.sheet)
      spdlog::warn("publisher: rectified_grid is set but the scan has no sheet-of-light calibration: no rectified rows");
    if (rectified) {
      grid = cfg.rectify_grid();
      bins = grid.bins();
      rect.clear(bins, 1);
      rect_key.assign(static_cast<std::size_t>(bins), 0.0f);
      rect_n.assign(static_cast<std::size_t>(bins), 0);
    }
    last_stats = clock::now();
    ++series_count;
    publish(
        wire::Topic::SeriesStart,
        [&](json h) {
          h.update(series_context());
          h["source"] = scan.source;
          h["backend"] = to_string(scan.backend);
          h["method"] = to_string(scan.chain.column.method);
          h["width"] = scan.layout.width;
          h["frame_height"] = scan.layout.frame_height;
          h["pixel_format"] = to_string(scan.layout.format);
          if (scan.pixel_bits.known()) {  // docs/data-model.md, "Significant bits"
            h["pixel_bits"] = scan.pixel_bits.bits;
            h["pixel_bits_origin"] = to_string(scan.pixel_bits.origin);
          }
          h["slots"] = scan.profile_slots;
          h["rows_per_message"] = cfg.rows_per_message;
          h["heightmap_rows"] = cfg.heightmap_rows;
          h.update(json(metadata::document("series-start")));  // stripeline, schema, software (core/metadata.h)
          h["format"] = wire::kFormatVersion;
          // Rows stay in the sensor form (z = row); the model maps them to mm.
          if (scan.sheet) {
            h["sheet_calibration"] = wire::sheet_calibration_json(*scan.sheet);
            h["point_unit"] = "mm";
            h["points"] = cfg.points;  // whether row messages carry the points parts
          }
          if (!cfg.heightmap_filters.empty())
            h["heightmap_filters"] = {{"steps", cfg.heightmap_filters}, {"backend", to_string(resolve_backend(cfg.filter_backend))}};
          for (auto it = series.annotations.begin(); it != series.annotations.end(); ++it)
            if (it.key() != "reason") h[it.key()] = it.value();
          return wire::encode_control(wire::Topic::SeriesStart, h);
        },
        true, 0);
    send_measurements();  // those measured while no series was open
  }

  // Measured parts (a measurement message each) in the open series; while
  // none is open they wait (at most kHeldMeasurements, the oldest dropped and
  // counted) for the next series-start.
  static constexpr std::size_t kHeldMeasurements = 64;
  void send_measurements() {
    if (!series.open()) return;
    for (auto& part : held_measurements)
      publish(
          wire::Topic::Measurement,
          [&](json h) {
            h["part"] = std::move(part);
            return wire::encode_control(wire::Topic::Measurement, h);
          },
          false, 0);
    held_measurements.clear();
  }

  void rows(const ProfileSpan& p) {
    sender.drain_subscriptions();
    rows_in += static_cast<std::uint64_t>(p.frames);
    for (int f = 0; f < p.frames;) {
      const int n = std::min(cfg.rows_per_message, p.frames - f);
      publish_rows(p, f, n);
      if (cfg.heightmap_rows > 0) {
        int done = 0;
        while (done < n) {
          const int take = std::min(n - done, cfg.heightmap_rows - hm.rows);
          hm.append(p, f + done, take, mapping, series.counters().rows_in + static_cast<std::uint64_t>(done), cfg.points);
          if (rectified) append_rectified(p, f + done, take, series.counters().rows_in + static_cast<std::uint64_t>(done));
          done += take;
          if (hm.rows == cfg.heightmap_rows) {
            publish_heightmap();
            hm.clear(p.width, p.slots);
          }
        }
      }
      series.add_rows_in(static_cast<std::uint64_t>(n));
      f += n;
    }
    if (stats_due()) send_stats();
  }

  void end_series(const std::string& default_reason) {
    if (!series.open()) return;
    if (hm.rows > 0) publish_heightmap();
    hm.clear(info.layout.width, info.profile_slots);
    send_stats();
    publish(
        wire::Topic::SeriesEnd,
        [&](json h) {
          const SeriesCounters& c = series.counters();
          h["reason"] = default_reason;
          h["profile_rows"] = c.rows_published;
          h["profile_messages"] = c.profile_messages;
          h["rows_in"] = c.rows_in;
          h["rows_dropped"] = drops_json(c.rows_dropped);
          h["messages"] = series.messages();  // messages of the series, this one included
          h.update(series.annotations);
          return wire::encode_control(wire::Topic::SeriesEnd, h);
        },
        true, 0);
    const SeriesCounters& c = series.counters();
    spdlog::info("publisher: series {} ended ({}): {} rows in, {} published, dropped {} (hwm {}, no_subscriber {}, error {})", series.id(),
                 series.annotations.value("reason", default_reason), c.rows_in, c.rows_published,
                 c.rows_dropped[0] + c.rows_dropped[1] + c.rows_dropped[2], c.rows_dropped[0], c.rows_dropped[1], c.rows_dropped[2]);
    series.close();
  }

  PublisherConfig cfg;
  Sender sender;
  // mu guards everything below but the atomics (which counters() reads without it).
  std::mutex mu;
  Series series;
  ScanInfo info;
  ProfileMapping mapping;
  wire::RowBlock hm;  // rows gathered for the next heightmap message
  // Rectified rows (cfg.rectified_grid with a sheet-of-light calibration).
  bool rectified = false;
  kernels::RectifyGrid grid;
  int bins = 0;
  wire::RowBlock rect;
  std::vector<float> rect_key;
  std::vector<std::uint32_t> rect_n;
  bool filters_parsed = false;
  std::vector<FilterStep> filter_steps;  // parsed cfg.heightmap_filters, to8 removed
  std::unique_ptr<HeightMapFilter> filter;
  std::vector<std::uint16_t> codes, filtered;
  clock::time_point last_stats;
  std::vector<json> held_measurements;
  int errors_logged = 0, hwm_logged = 0;

  std::atomic<std::uint64_t> series_count{0}, rows_in{0}, rows_published{0}, messages_sent{0}, heightmap_rows_published{0}, bytes_sent{0};
  std::array<std::atomic<std::uint64_t>, kDropReasons> rows_dropped{}, messages_dropped{};
  std::array<std::atomic<std::uint64_t>, 2> control_dropped{};
  std::atomic<int> subscribers{0};  // the last count, for readers that must not wait on mu
};

Publisher::Publisher(PublisherConfig config) : impl_(std::make_unique<Impl>(std::move(config))) {}
Publisher::~Publisher() {
  if (impl_ && impl_->series.open()) abort();
}

std::string Publisher::endpoint() const { return impl_->sender.endpoint(); }
const PublisherConfig& Publisher::config() const { return impl_->cfg; }

void Publisher::begin(const ScanInfo& info) {
  std::lock_guard lock(impl_->mu);
  impl_->start_series(info);
}

void Publisher::consume(const ProfileSpan& p) {
  std::lock_guard lock(impl_->mu);
  impl_->rows(p);
}

void Publisher::finish() {
  std::lock_guard lock(impl_->mu);
  impl_->sender.drain_subscriptions();
  impl_->end_series("complete");
}

void Publisher::abort() noexcept {
  try {
    std::lock_guard lock(impl_->mu);
    impl_->end_series("aborted");
  } catch (...) {
  }
}

void Publisher::publish_measurement(const nlohmann::json& part) {
  std::lock_guard lock(impl_->mu);
  auto& held = impl_->held_measurements;
  if (held.size() >= Impl::kHeldMeasurements) {
    held.erase(held.begin());
    ++impl_->messages_dropped[static_cast<int>(DropReason::NoSubscriber)];
  }
  held.push_back(part);
  impl_->send_measurements();
}

void Publisher::annotate(const std::string& key, const std::string& value) {
  std::lock_guard lock(impl_->mu);
  impl_->series.annotations[key] = value;
}
void Publisher::annotate(const std::string& key, std::uint64_t value) {
  std::lock_guard lock(impl_->mu);
  impl_->series.annotations[key] = value;
}

PublisherCounters Publisher::counters() const {
  const Impl& m = *impl_;
  PublisherCounters c;
  c.series = m.series_count.load();
  c.rows_in = m.rows_in.load();
  c.rows_published = m.rows_published.load();
  c.messages_sent = m.messages_sent.load();
  c.heightmap_rows_published = m.heightmap_rows_published.load();
  c.bytes_sent = m.bytes_sent.load();
  for (int i = 0; i < kDropReasons; ++i) {
    c.rows_dropped[i] = m.rows_dropped[i].load();
    c.messages_dropped[i] = m.messages_dropped[i].load();
  }
  for (std::size_t i = 0; i < c.control_dropped.size(); ++i) c.control_dropped[i] = m.control_dropped[i].load();
  return c;
}

std::string Publisher::series() const {
  std::lock_guard lock(impl_->mu);
  return impl_->series.id();
}

int Publisher::subscribers() {
  std::unique_lock lock(impl_->mu, std::try_to_lock);
  if (!lock) return impl_->subscribers.load();  // a send (a control message may wait seconds) holds the socket
  impl_->sender.drain_subscriptions();
  impl_->subscribers = impl_->sender.matching("profile");
  return impl_->subscribers.load();
}

bool Publisher::wait_for_subscribers(int n, std::chrono::milliseconds timeout) {
  const auto deadline = clock::now() + timeout;
  while (true) {
    if (subscribers() >= n) return true;
    if (clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

void Publisher::tick() {
  std::unique_lock lock(impl_->mu, std::try_to_lock);
  if (!lock) return;  // busy sending: it reads the subscriptions itself
  impl_->sender.drain_subscriptions();
  if (impl_->stats_due()) impl_->send_stats();
}

}  // namespace stripeline
