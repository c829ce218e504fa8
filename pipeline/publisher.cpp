#include "pipeline/publisher.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "core/errors.h"
#include "core/fixed_point.h"
#include "stages/heightmap_filters.h"
#include "pipeline/wire_format.h"

namespace stripeline {

namespace {
using clock = std::chrono::steady_clock;
using nlohmann::json;

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

bool valid_z85_key(const std::string& k) {
  if (k.size() != 40) return false;
  std::uint8_t out[32];
  return zmq_z85_decode(out, k.c_str()) != nullptr;
}

json drops_json(const std::array<std::uint64_t, kDropReasons>& d) {
  return {{"hwm", d[0]}, {"no_subscriber", d[1]}, {"error", d[2]}};
}
}  // namespace

const char* to_string(DropReason r) {
  switch (r) {
    case DropReason::Hwm: return "hwm";
    case DropReason::NoSubscriber: return "no_subscriber";
    case DropReason::Error: return "error";
  }
  return "?";
}

bool curve_available() { return zmq_has("curve") != 0; }

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
  if (height_bits < 0 || height_bits > 8) fail("height_bits", "must be 0..8");
  if (curve.enabled) {
    if (curve.server_secret_key.empty()) throw ConfigError("security.server_secret_key: is required when security.curve = true");
    if (curve.client_keys.empty())
      throw ConfigError("security.client_keys: is empty, so no client could connect (expected one public key file per allowed client)");
  }
}

bool PublisherConfig::operator==(const PublisherConfig& o) const {
  return endpoint == o.endpoint && send_hwm == o.send_hwm && rows_per_message == o.rows_per_message &&
         heightmap_rows == o.heightmap_rows && stats_interval == o.stats_interval && linger_ms == o.linger_ms &&
         control_timeout_ms == o.control_timeout_ms && height_bits == o.height_bits && heightmap_filters == o.heightmap_filters &&
         curve.enabled == o.curve.enabled &&
         curve.server_secret_key == o.curve.server_secret_key && curve.client_keys == o.curve.client_keys;
}

std::string read_curve_key(const std::filesystem::path& path, bool secret) {
  const std::string what = secret ? "secret key" : "public key";
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
    throw ConfigError(path.string() + ": " + what + " file not found");
  if (secret && (st.st_mode & 077)) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    throw ConfigError(path.string() + ": secret key file is readable by group or others (mode " + mode +
                      "; expected 0600 or 0400: chmod 600 it)");
  }
  std::ifstream in(path);
  if (!in) throw ConfigError(path.string() + ": cannot be read");
  const std::string field = secret ? "secret-key" : "public-key";
  std::string line, bare;
  while (std::getline(in, line)) {
    line = trim(line);
    if (line.empty() || line[0] == '#') continue;
    const auto eq = line.find('=');
    if (eq != std::string::npos && trim(line.substr(0, eq)) == field) {
      std::string v = trim(line.substr(eq + 1));
      if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
      if (!valid_z85_key(v)) throw ConfigError(path.string() + ": " + field + " is not a 40-character Z85 CURVE key");
      return v;
    }
    if (bare.empty() && valid_z85_key(line)) bare = line;
  }
  if (!bare.empty()) return bare;
  throw ConfigError(path.string() + ": no " + what + " found (expected a 40-character Z85 key, or a ZeroMQ certificate with " + field + " = \"...\")");
}

std::pair<std::string, std::string> write_curve_keypair(const std::filesystem::path& base) {
  char pub[41], sec[41];
  if (zmq_curve_keypair(pub, sec) != 0) throw RuntimeFailure(std::string("zmq_curve_keypair failed: ") + zmq_strerror(zmq_errno()));
  auto write = [](const std::filesystem::path& p, const std::string& text, mode_t mode) {
    const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0) throw RuntimeFailure(p.string() + ": cannot be created (" + std::strerror(errno) + ")");
    ::fchmod(fd, mode);
    const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) && ::fsync(fd) == 0;
    ::close(fd);
    if (!ok) throw RuntimeFailure(p.string() + ": write failed");
  };
  const std::string header = "#   ****  Generated by stripeline: ZeroMQ CURVE certificate  ****\nmetadata\ncurve\n";
  write(std::filesystem::path(base.string() + ".pub"), header + "    public-key = \"" + pub + "\"\n", 0644);
  write(std::filesystem::path(base.string() + ".secret"),
        header + "    public-key = \"" + pub + "\"\n    secret-key = \"" + sec + "\"\n", 0600);
  return {pub, sec};
}

// ZAP handler (RFC 27): allows CURVE clients whose public key is listed.
class ZapHandler {
 public:
  ZapHandler(zmq::context_t& ctx, std::set<std::string> allowed) : allowed_(std::move(allowed)), rep_(ctx, zmq::socket_type::rep) {
    rep_.set(zmq::sockopt::linger, 0);
    rep_.bind("inproc://zeromq.zap.01");
    thread_ = std::thread([this] { loop(); });
  }
  ~ZapHandler() {
    stop_ = true;
    thread_.join();
  }
  std::uint64_t denied() const { return denied_.load(); }

 private:
  void loop() {
    while (!stop_) {
      zmq::pollitem_t item{rep_.handle(), 0, ZMQ_POLLIN, 0};
      if (zmq::poll(&item, 1, std::chrono::milliseconds(100)) <= 0) continue;
      std::vector<zmq::message_t> req;
      if (!zmq::recv_multipart(rep_, std::back_inserter(req), zmq::recv_flags::dontwait)) continue;
      if (req.size() < 6) continue;
      const std::string version = req[0].to_string(), request_id = req[1].to_string(), mechanism = req[5].to_string();
      bool ok = false;
      if (mechanism == "CURVE" && req.size() >= 7 && req[6].size() == 32) {
        char z85[41];
        zmq_z85_encode(z85, static_cast<const std::uint8_t*>(req[6].data()), 32);
        ok = allowed_.count(z85) > 0;
        if (!ok) spdlog::warn("publisher: CURVE client {} refused (key not in security.client_keys)", z85);
      }
      if (!ok) ++denied_;
      std::array<zmq::const_buffer, 6> reply = {zmq::buffer(version), zmq::buffer(request_id), zmq::str_buffer("200"),
                                                zmq::str_buffer("OK"), zmq::str_buffer(""), zmq::str_buffer("")};
      if (!ok) {
        reply[2] = zmq::str_buffer("400");
        reply[3] = zmq::str_buffer("unknown client key");
      }
      zmq::send_multipart(rep_, reply);
    }
  }
  std::set<std::string> allowed_;
  zmq::socket_t rep_;
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> denied_{0};
  std::thread thread_;
};

class Publisher::Impl {
 public:
  explicit Impl(PublisherConfig c) : cfg(std::move(c)) {
    cfg.validate();
    hm.keep_primary = !cfg.heightmap_filters.empty();  // only the heightmap block feeds the filters
    if (cfg.curve.enabled) {
      if (!curve_available()) throw ConfigError("security.curve = true, but this libzmq was built without CURVE");
      const std::string secret = read_curve_key(cfg.curve.server_secret_key, true);
      std::set<std::string> allowed;
      for (const auto& k : cfg.curve.client_keys) allowed.insert(read_curve_key(k, false));
      zap = std::make_unique<ZapHandler>(ctx, std::move(allowed));
      sock.set(zmq::sockopt::curve_server, 1);
      sock.set(zmq::sockopt::curve_secretkey, secret);
      sock.set(zmq::sockopt::zap_domain, "stripeline");
    }
    sock.set(zmq::sockopt::sndhwm, cfg.send_hwm);
    sock.set(zmq::sockopt::linger, cfg.linger_ms);
    sock.set(zmq::sockopt::xpub_nodrop, 1);
    sock.set(zmq::sockopt::xpub_verboser, 1);
    try {
      sock.bind(cfg.endpoint);
    } catch (const zmq::error_t& e) {
      throw InputError("publisher.endpoint: cannot bind '" + cfg.endpoint + "' (" + e.what() + ")");
    }
    endpoint = sock.get(zmq::sockopt::last_endpoint);
    spdlog::info("publisher: bound {} (send_hwm {}, {} rows per message{})", endpoint, cfg.send_hwm, cfg.rows_per_message,
                 cfg.curve.enabled ? ", CURVE with client allowlist" : "");
  }

  ~Impl() {
    try {
      sock.close();  // lingers up to linger_ms in the context's threads
      zap.reset();
      ctx.close();
    } catch (const std::exception& e) {
      spdlog::warn("publisher: close failed: {}", e.what());
    }
  }

  // --- subscriptions (XPUB_VERBOSER: one message per subscribe/unsubscribe)
  void drain_subscriptions() {
    zmq::message_t m;
    while (true) {
      zmq::recv_result_t r;
      try {
        r = sock.recv(m, zmq::recv_flags::dontwait);
      } catch (const zmq::error_t&) {
        return;
      }
      if (!r) return;
      if (m.size() == 0) continue;
      const char* d = static_cast<const char*>(m.data());
      std::string topic(d + 1, m.size() - 1);
      if (d[0] == 1) {
        ++subs[topic];
      } else if (d[0] == 0) {
        auto it = subs.find(topic);
        if (it != subs.end() && --it->second <= 0) subs.erase(it);
      }
    }
  }
  int matching(const std::string& topic) const {
    int n = 0;
    for (const auto& [prefix, count] : subs)
      if (topic.compare(0, prefix.size(), prefix) == 0) n += count;
    return n;
  }

  // --- sending
  DropReason send(const wire::Encoded& e, bool control, bool* sent) {
    *sent = false;
    if (matching(e.parts[0]) == 0) return DropReason::NoSubscriber;
    const auto deadline = clock::now() + std::chrono::milliseconds(control ? cfg.control_timeout_ms : 0);
    for (std::size_t i = 0; i < e.parts.size(); ++i) {
      const auto flags = i + 1 < e.parts.size() ? zmq::send_flags::dontwait | zmq::send_flags::sndmore : zmq::send_flags::dontwait;
      const auto part_deadline = i == 0 ? deadline : clock::now() + std::chrono::seconds(1);
      while (true) {
        try {
          if (sock.send(zmq::buffer(e.parts[i]), flags)) break;
        } catch (const zmq::error_t& err) {
          log_error(std::string("send failed: ") + err.what() + (i ? " (in the middle of a message)" : ""));
          return DropReason::Error;
        }
        // EAGAIN: the high-water mark. Data messages never wait.
        if (i == 0 && !control) return DropReason::Hwm;
        if (clock::now() >= part_deadline) {
          if (i == 0) return DropReason::Hwm;
          log_error("send of a later part timed out in the middle of a message");
          return DropReason::Error;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(500));
      }
    }
    *sent = true;
    return DropReason::Hwm;  // unused
  }

  void log_error(const std::string& what) {
    if (errors_logged++ < 10) spdlog::error("publisher: {}", what);
  }

  // A message of the series: takes a seq, counts the outcome. Returns true when sent.
  bool publish(wire::Topic t, const std::function<wire::Encoded(json)>& encode, bool control, std::uint64_t rows) {
    const std::uint64_t s = seq++;
    bool sent = false;
    DropReason reason = DropReason::NoSubscriber;
    if (matching(wire::topic_name(t)) > 0) {
      try {
        const wire::Encoded e = encode(wire::base_header(t, series, s));
        reason = send(e, control, &sent);
        if (sent) bytes_sent += e.bytes();
      } catch (const std::exception& ex) {
        log_error(std::string("encoding a ") + wire::topic_name(t) + " message failed: " + ex.what());
        reason = DropReason::Error;
      }
    }
    if (sent) {
      ++messages_sent;
      if (t == wire::Topic::Profile) {
        rows_published += rows;
        series_rows_published += rows;
        ++series_profile_messages;
      } else if (t == wire::Topic::Heightmap) {
        heightmap_rows_published += rows;
      }
    } else {
      const int r = static_cast<int>(reason);
      ++messages_dropped[r];
      if (t == wire::Topic::Profile) {
        rows_dropped[r] += rows;
        series_rows_dropped[r] += rows;
      }
      if (reason == DropReason::Hwm && hwm_logged++ < 5)
        spdlog::warn("publisher: a subscriber is at the high-water mark ({} messages): {} message seq {} dropped (counted)", cfg.send_hwm,
                     wire::topic_name(t), s);
    }
    return sent;
  }

  json series_context() const {
    json h;
    h["calibration"] = wire::calibration_json(info.calibration);
    h["unit"] = info.calibration.unit();
    h["height_bits"] = cfg.height_bits;
    return h;
  }

  // A heightmap message, through the configured height-map filters first.
  void publish_heightmap() {
    if (!cfg.heightmap_filters.empty()) filter_heightmap(hm);  // hm.keep_primary is set in the constructor
    publish_block(wire::Topic::Heightmap, hm);
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
      filter = make_heightmap_filter(Backend::Auto, b.width, b.rows, filter_steps);
      codes.resize(static_cast<std::size_t>(b.width) * b.rows);
      filtered.resize(codes.size());
    }
    const LinearCalibration& cal = info.calibration;
    const std::size_t per_row = static_cast<std::size_t>(b.slots) * b.width;
    for (std::size_t i = 0; i < codes.size(); ++i) codes[i] = encode_height(b.primary[i], cfg.height_bits);
    filter->run(codes.data(), filtered.data());
    for (int r = 0; r < b.rows; ++r)
      for (int x = 0; x < b.width; ++x) {
        const std::uint16_t code = filtered[static_cast<std::size_t>(r) * b.width + x];
        const float row = decode_height(code, cfg.height_bits);
        b.z[r * per_row + x] = code == 0 ? row : (cal.enabled ? static_cast<float>(cal.z(row)) : row);
      }
  }

  void publish_block(wire::Topic t, const wire::RowBlock& b) {
    publish(
        t, [&](json h) { h.update(series_context()); return wire::encode_rows(t, std::move(h), b); }, false,
        static_cast<std::uint64_t>(b.rows));
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
            {"subscribers", matching("profile")}};
  }

  void send_stats() {
    last_stats = clock::now();
    publish(
        wire::Topic::Stats,
        [&](json h) {
          h["series_rows_in"] = series_rows_in;
          h["series_rows_published"] = series_rows_published;
          h["series_rows_dropped"] = drops_json(series_rows_dropped);
          h["total"] = counters_json();
          return wire::encode_control(wire::Topic::Stats, h);
        },
        false, 0);
  }

  void end_series(const std::string& default_reason) {
    if (!in_series) return;
    if (hm.rows > 0) publish_heightmap();
    hm.clear(info.layout.width, info.profile_slots);
    send_stats();
    publish(
        wire::Topic::SeriesEnd,
        [&](json h) {
          h["reason"] = default_reason;
          h["profile_rows"] = series_rows_published;
          h["profile_messages"] = series_profile_messages;
          h["rows_in"] = series_rows_in;
          h["rows_dropped"] = drops_json(series_rows_dropped);
          h["messages"] = seq;  // messages of the series, this one included
          h.update(annotations);
          return wire::encode_control(wire::Topic::SeriesEnd, h);
        },
        true, 0);
    spdlog::info("publisher: series {} ended ({}): {} rows in, {} published, dropped {} (hwm {}, no_subscriber {}, error {})", series,
                 annotations.value("reason", default_reason), series_rows_in, series_rows_published,
                 series_rows_dropped[0] + series_rows_dropped[1] + series_rows_dropped[2], series_rows_dropped[0], series_rows_dropped[1],
                 series_rows_dropped[2]);
    annotations = json::object();
    in_series = false;
  }

  PublisherConfig cfg;
  zmq::context_t ctx{1};
  std::unique_ptr<ZapHandler> zap;
  zmq::socket_t sock{ctx, zmq::socket_type::xpub};
  std::string endpoint;
  std::mutex mu;
  std::map<std::string, int> subs;

  bool in_series = false;
  std::string series;
  std::uint64_t seq = 0;
  ScanInfo info;
  json annotations = json::object();
  std::uint64_t series_rows_in = 0, series_rows_published = 0, series_profile_messages = 0;
  std::array<std::uint64_t, kDropReasons> series_rows_dropped{};
  wire::RowBlock block, hm;
  bool filters_parsed = false;
  std::vector<FilterStep> filter_steps;  // parsed cfg.heightmap_filters, to8 removed
  std::unique_ptr<HeightMapFilter> filter;
  std::vector<std::uint16_t> codes, filtered;
  clock::time_point last_stats;
  int errors_logged = 0, hwm_logged = 0;

  std::atomic<std::uint64_t> series_count{0}, rows_in{0}, rows_published{0}, messages_sent{0}, heightmap_rows_published{0}, bytes_sent{0};
  std::array<std::atomic<std::uint64_t>, kDropReasons> rows_dropped{}, messages_dropped{};
};

Publisher::Publisher(PublisherConfig config) : impl_(std::make_unique<Impl>(std::move(config))) {}
Publisher::~Publisher() {
  if (impl_ && impl_->in_series) abort();
}

std::string Publisher::endpoint() const { return impl_->endpoint; }
const PublisherConfig& Publisher::config() const { return impl_->cfg; }

void Publisher::begin(const ScanInfo& info) {
  std::lock_guard lock(impl_->mu);
  Impl& m = *impl_;
  if (m.in_series) m.end_series("restarted");
  m.drain_subscriptions();
  m.in_series = true;
  m.series = wire::new_uuid();
  m.seq = 0;
  m.info = info;
  m.series_rows_in = m.series_rows_published = m.series_profile_messages = 0;
  m.series_rows_dropped = {};
  m.block.clear(info.layout.width, info.profile_slots);
  m.hm.clear(info.layout.width, info.profile_slots);
  m.last_stats = clock::now();
  ++m.series_count;
  m.publish(
      wire::Topic::SeriesStart,
      [&](json h) {
        h.update(m.series_context());
        h["source"] = info.source;
        h["backend"] = to_string(info.backend);
        h["method"] = to_string(info.chain.column.method);
        h["width"] = info.layout.width;
        h["frame_height"] = info.layout.frame_height;
        h["pixel_format"] = to_string(info.layout.format);
        h["slots"] = info.profile_slots;
        h["rows_per_message"] = m.cfg.rows_per_message;
        h["heightmap_rows"] = m.cfg.heightmap_rows;
        h["software"] = "stripeline " STRIPELINE_VERSION;
        h["format"] = wire::kFormatVersion;
        for (auto it = m.annotations.begin(); it != m.annotations.end(); ++it)
          if (it.key() != "reason") h[it.key()] = it.value();
        return wire::encode_control(wire::Topic::SeriesStart, h);
      },
      true, 0);
}

void Publisher::consume(const Batch& batch, const ProfileBatch& p) {
  std::lock_guard lock(impl_->mu);
  Impl& m = *impl_;
  m.drain_subscriptions();
  m.rows_in += static_cast<std::uint64_t>(p.frames);
  const bool want_profile = m.matching("profile") > 0;
  for (int f = 0; f < p.frames;) {
    const int n = std::min(m.cfg.rows_per_message, p.frames - f);
    if (want_profile) {
      m.block.clear(p.width, p.slots);
      m.block.append(batch, p, f, n, m.info.calibration, m.series_rows_in);
      m.publish_block(wire::Topic::Profile, m.block);
    } else {  // nobody listens: take the seq and count, without encoding
      ++m.seq;
      ++m.messages_dropped[static_cast<int>(DropReason::NoSubscriber)];
      m.rows_dropped[static_cast<int>(DropReason::NoSubscriber)] += static_cast<std::uint64_t>(n);
      m.series_rows_dropped[static_cast<int>(DropReason::NoSubscriber)] += static_cast<std::uint64_t>(n);
    }
    if (m.cfg.heightmap_rows > 0) {
      int done = 0;
      while (done < n) {
        const int take = std::min(n - done, m.cfg.heightmap_rows - m.hm.rows);
        m.hm.append(batch, p, f + done, take, m.info.calibration, m.series_rows_in + static_cast<std::uint64_t>(done));
        done += take;
        if (m.hm.rows == m.cfg.heightmap_rows) {
          m.publish_heightmap();
          m.hm.clear(p.width, p.slots);
        }
      }
    }
    m.series_rows_in += static_cast<std::uint64_t>(n);
    f += n;
  }
  if (m.cfg.stats_interval > 0 && clock::now() - m.last_stats >= std::chrono::duration<double>(m.cfg.stats_interval)) m.send_stats();
}

void Publisher::finish() {
  std::lock_guard lock(impl_->mu);
  impl_->drain_subscriptions();
  impl_->end_series("complete");
}

void Publisher::abort() noexcept {
  try {
    std::lock_guard lock(impl_->mu);
    impl_->end_series("aborted");
  } catch (...) {
  }
}

void Publisher::annotate(const std::string& key, const std::string& value) {
  std::lock_guard lock(impl_->mu);
  impl_->annotations[key] = value;
}
void Publisher::annotate(const std::string& key, std::uint64_t value) {
  std::lock_guard lock(impl_->mu);
  impl_->annotations[key] = value;
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
  return c;
}

std::string Publisher::series() const {
  std::lock_guard lock(impl_->mu);
  return impl_->series;
}

int Publisher::subscribers() {
  std::lock_guard lock(impl_->mu);
  impl_->drain_subscriptions();
  return impl_->matching("profile");
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
  std::lock_guard lock(impl_->mu);
  Impl& m = *impl_;
  m.drain_subscriptions();
  if (m.in_series && m.cfg.stats_interval > 0 && clock::now() - m.last_stats >= std::chrono::duration<double>(m.cfg.stats_interval))
    m.send_stats();
}

}  // namespace stripeline
