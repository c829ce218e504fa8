#include "calibration/toml_text.h"
#include "app/config.h"

#include <toml++/toml.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string_view>
#include <set>
#include <fstream>
#include <sstream>

#include "core/errors.h"

namespace stripeline {

Config default_config() { return Config{}; }

namespace {

// Reads the keys of one TOML table, remembering which were used so that any
// other key is reported as unknown.
class Section {
 public:
  Section(const toml::table* table, std::string name, std::string origin)
      : table_(table), name_(std::move(name)), origin_(std::move(origin)) {}

  // An integer node, or a floating-point one holding an integral value in
  // range (what toml++'s value<int64_t>() converts; it casts any float, which
  // is undefined beyond int64's range: 1e66 came from the fuzzer).
  static std::optional<std::int64_t> integer_of(const toml::node& n) {
    if (const auto* i = n.as_integer()) return i->get();
    if (const auto* f = n.as_floating_point()) {
      const double d = f->get();
      if (std::isfinite(d) && d == std::trunc(d) && d >= -9.2e18 && d <= 9.2e18) return static_cast<std::int64_t>(d);
    }
    return std::nullopt;
  }

  template <class T>
  void read(const char* key, T& out) {
    if (!table_) return;
    used_.insert(key);
    const toml::node* node = table_->get(key);
    if (!node) return;
    if constexpr (std::is_same_v<T, bool>) {
      if (auto v = node->value<bool>()) return void(out = *v);
      fail(key, "expected true or false");
    } else if constexpr (std::is_same_v<T, std::string>) {
      if (auto v = node->value<std::string>()) return void(out = *v);
      fail(key, "expected a string");
    } else if constexpr (std::is_floating_point_v<T>) {
      if (auto v = node->value<double>()) return void(out = static_cast<T>(*v));
      fail(key, "expected a number");
    } else {
      static_assert(std::is_integral_v<T>);
      auto v = integer_of(*node);
      if (!v) fail(key, "expected an integer");
      if (*v < static_cast<std::int64_t>(std::numeric_limits<T>::min()) ||
          (*v > 0 && static_cast<std::uint64_t>(*v) > static_cast<std::uint64_t>(std::numeric_limits<T>::max())))
        fail(key, "value " + std::to_string(*v) + " does not fit");
      out = static_cast<T>(*v);
    }
  }

  void read_strings(const char* key, std::vector<std::string>& out) {
    std::vector<std::filesystem::path> paths;
    read_paths(key, paths);
    if (table_ && table_->get(key)) out.assign(paths.begin(), paths.end());
  }

  void read_paths(const char* key, std::vector<std::filesystem::path>& out) {
    if (!table_) return;
    used_.insert(key);
    const toml::node* node = table_->get(key);
    if (!node) return;
    const toml::array* arr = node->as_array();
    if (!arr) fail(key, "expected an array of strings");
    out.clear();
    for (const auto& e : *arr) {
      auto v = e.value<std::string>();
      if (!v) fail(key, "expected an array of strings");
      out.emplace_back(*v);
    }
  }

  void read_ints(const char* key, std::vector<std::int64_t>& out) {
    if (!table_) return;
    used_.insert(key);
    const toml::node* node = table_->get(key);
    if (!node) return;
    const toml::array* arr = node->as_array();
    if (!arr) fail(key, "expected an array of integers");
    out.clear();
    for (const auto& e : *arr) {
      auto v = integer_of(e);
      if (!v || *v < 0 || *v > 1000000) fail(key, "expected an array of integers >= 0");
      out.push_back(*v);
    }
  }

  // A sub-table ([camera.gentl]), marked as known; null when absent.
  const toml::table* table(const char* key) {
    if (!table_) return nullptr;
    used_.insert(key);
    const toml::node* node = table_->get(key);
    if (node && !node->as_table()) fail(key, "expected a table");
    return node ? node->as_table() : nullptr;
  }

  void finish() const {
    if (!table_) return;
    for (const auto& [k, v] : *table_)
      if (!used_.count(std::string(k.str()))) fail(std::string(k.str()).c_str(), "unknown key");
  }

  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw ConfigError(origin_ + ": " + name_ + "." + key + ": " + what);
  }

 private:
  const toml::table* table_;
  std::string name_, origin_;
  std::set<std::string> used_;
};

PixelFormat parse_depth(int bits, const Section& s, const char* key) {
  if (bits == 8) return PixelFormat::Mono8;
  if (bits == 16) return PixelFormat::Mono16;
  s.fail(key, std::to_string(bits) + " is not supported (expected 8 or 16)");
}

io::ImageFileFormat parse_file_format(const std::string& f, const Section& s) {
  if (f == "auto") return io::ImageFileFormat::Auto;
  if (f == "tiff") return io::ImageFileFormat::Tiff;
  if (f == "png") return io::ImageFileFormat::Png;
  if (f == "pgm") return io::ImageFileFormat::Pgm;
  if (f == "raw") return io::ImageFileFormat::Raw;
  s.fail("format", "'" + f + "' is not known (expected auto, tiff, png, pgm or raw)");
}

// Runs a section's own validation and names the file and the section in
// its message: "<file>: <section>.<key>: ..." (validators that already name
// their section, e.g. "camera.width", keep it).
template <class F>
void validated(const std::string& origin, const std::string& section, F&& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    const std::string msg = e.what();
    if (msg.rfind(origin + ":", 0) == 0) throw;
    const bool named = msg.rfind(section + ".", 0) == 0 || msg.rfind("security.", 0) == 0 || msg.rfind("publisher.", 0) == 0;
    throw ConfigError(origin + ": " + (named ? msg : section + "." + msg));
  }
}

}  // namespace

Config parse_config(const std::string& text, const std::string& origin) {
  const toml::table root = parse_toml<ConfigError>(text, origin);
  Config c = default_config();
  c.origin = origin;
  for (const auto& [k, v] : root) {
    const std::string key(k.str());
    if (key != "source" && key != "synthetic" && key != "camera" && key != "processing" && key != "output" && key != "calibration" &&
        key != "publisher" && key != "security" && key != "daemon" && key != "http")
      throw ConfigError(origin + ": unknown section or key '" + key +
                        "' (expected source, synthetic, camera, processing, output, calibration, publisher, security, daemon, http)");
    if (!v.is_table()) throw ConfigError(origin + ": '" + key + "' must be a table ([" + key + "])");
  }

  {  // [source]
    Section s(root["source"].as_table(), "source", origin);
    std::string kind = "synthetic", path, format = "auto", channel = c.file.channel.name;
    int raw_width = 0, raw_depth = 8;
    std::int64_t raw_height = 0;
    s.read("kind", kind);
    s.read("path", path);
    s.read("frame_height", c.file.frame_height);
    s.read("format", format);
    s.read("raw_width", raw_width);
    s.read("raw_height", raw_height);
    s.read("raw_depth", raw_depth);
    s.read("rate", c.file.rate);
    s.read("loops", c.file.loops);
    s.read("channel", channel);
    s.finish();
    if (kind == "synthetic")
      c.source = SourceKind::Synthetic;
    else if (kind == "file")
      c.source = SourceKind::File;
    else if (kind == "camera")
      c.source = SourceKind::Camera;
    else
      s.fail("kind", "'" + kind + "' is not known (expected synthetic, file or camera)");
    c.file.path = path;
    c.file.format = parse_file_format(format, s);
    validated(origin, "source", [&] { c.file.channel = io::parse_channel_mix(channel); });
    if (c.file.format == io::ImageFileFormat::Raw || raw_width > 0)
      c.file.raw = io::RawGeometry{raw_width, raw_height, parse_depth(raw_depth, s, "raw_depth")};
    validated(origin, "source", [&] { c.file.validate(); });
    if (c.source == SourceKind::File && path.empty()) s.fail("path", "is required when kind = \"file\"");
  }
  {  // [synthetic]
    Section s(root["synthetic"].as_table(), "synthetic", origin);
    auto& y = c.synthetic;
    int depth = 8;
    s.read("width", y.width);
    s.read("frame_height", y.frame_height);
    s.read("frames", y.frames);
    s.read("depth", depth);
    s.read("seed", y.seed);
    s.read("beam_sigma", y.beam_sigma);
    s.read("peak", y.peak);
    s.read("peak_variation", y.peak_variation);
    s.read("background", y.background);
    s.read("noise", y.noise);
    s.read("speckle", y.speckle);
    s.read("occlusion", y.occlusion);
    s.read("reflection", y.reflection);
    s.read("reflection_strength", y.reflection_strength);
    s.read("frame_rate", y.frame_rate);
    s.read("encoder_step", y.encoder_step);
    s.read("ambient", y.ambient);
    s.read("texture", y.texture);
    s.read("glow", y.glow);
    s.read("glow_width", y.glow_width);
    s.read("second_stripe", y.second_stripe);
    s.read("second_stripe_distance", y.second_stripe_distance);
    s.read("second_stripe_strength", y.second_stripe_strength);
    s.read("dim_segments", y.dim_segments);
    s.read("dim_factor", y.dim_factor);
    s.read("beam_sigma_variation", y.beam_sigma_variation);
    s.finish();
    // 12 bits: 16-bit words holding 0..4095, as 12-bit cameras deliver them.
    if (depth != 8 && depth != 12 && depth != 16) s.fail("depth", std::to_string(depth) + " is not supported (expected 8, 12 or 16)");
    y.bits = depth == 12 ? 12 : 0;
    y.format = depth == 8 ? PixelFormat::Mono8 : PixelFormat::Mono16;
    validated(origin, "synthetic", [&] { y.validate(); });
  }
  {  // [camera]
    Section s(root["camera"].as_table(), "camera", origin);
    auto& k = c.camera;
    std::string trigger = "free-run";
    s.read("id", k.id);
    s.read("width", k.width);
    s.read("height", k.height);
    s.read("offset_x", k.offset_x);
    s.read("offset_y", k.offset_y);
    s.read("pixel_format", k.pixel_format);
    s.read("exposure_us", k.exposure_us);
    s.read("gain", k.gain);
    s.read("frame_rate", k.frame_rate);
    s.read("trigger", trigger);
    s.read("trigger_source", k.trigger_source);
    s.read("trigger_activation", k.trigger_activation);
    s.read("encoder_chunk", k.encoder_chunk);
    s.read_strings("features", k.features);
    s.read("packet_size", k.packet_size);
    s.read("packet_socket", k.packet_socket);
    s.read("direct_buffers", k.direct_buffers);
    s.read("socket_buffer", k.socket_buffer);
    s.read("stream_buffers", k.stream_buffers);
    s.read("frame_timeout", k.frame_timeout);
    s.read("heartbeat_timeout", k.heartbeat_timeout);
    s.read("flush_timeout", k.flush_timeout);
    s.read("gap_fill_limit", k.gap_fill_limit);
    s.read("frames", k.frames);
    s.read("reconnect_interval", k.reconnect_interval);
    s.read("transport", k.transport);
    {  // [camera.gentl]
      Section g(s.table("gentl"), "camera.gentl", origin);
      auto& t = c.gentl;
      g.read("cti", t.cti);
      g.read("device", t.device);
      g.read("frames_per_buffer", t.frames_per_buffer);
      g.read("frames_per_buffer_feature", t.frames_per_buffer_feature);
      g.read_strings("grabber_features", t.grabber_features);
      g.read("frame_info_chunk", t.frame_info_chunk);
      g.read("buffers", t.buffers);
      g.read("event_timeout", t.event_timeout);
      g.finish();
      validated(origin, "camera.gentl", [&] { t.validate(); });
    }
    s.finish();
    if (trigger == "free-run")
      k.trigger = TriggerMode::FreeRun;
    else if (trigger == "external")
      k.trigger = TriggerMode::External;
    else if (trigger == "software")
      k.trigger = TriggerMode::Software;
    else
      s.fail("trigger", "'" + trigger + "' is not known (expected free-run, external or software)");
    validated(origin, "camera", [&] { k.validate(); });
  }
  {  // [processing]
    Section s(root["processing"].as_table(), "processing", origin);
    auto& p = c.pipeline;
    std::string backend = "auto", method = to_string(p.chain.column.method), selection = "strongest";
    std::string estimator = to_string(p.chain.adaptive.estimator);
    s.read("backend", backend);
    s.read("batch_frames", p.batch_frames);
    s.read("buffers", p.buffers);
    s.read("lanes", p.lanes);
    s.read("blur_size", p.chain.blur_size);
    s.read("blur_sigma", p.chain.blur_sigma);
    s.read("threshold_stage", p.chain.threshold_stage);
    s.read("threshold", p.chain.column.threshold);
    s.read("method", method);
    s.read("min_peak", p.chain.column.min_peak);
    s.read("min_width", p.chain.column.min_width);
    s.read("max_width", p.chain.column.max_width);
    s.read("window", p.chain.column.window);
    s.read("neighbours", p.chain.column.neighbours);
    s.read("selection", selection);
    s.read("max_peaks", p.chain.max_peaks);
    s.read("max_points", p.chain.max_points);
    // adaptive method (ranges checked by validate_chain, which names the key)
    s.read("estimator", estimator);
    s.read("min_contrast", p.chain.adaptive.min_contrast);
    s.read("contrast_level", p.chain.adaptive.level);
    s.read("centroid_level", p.chain.adaptive.centroid_level);
    s.read("noise_factor", p.chain.adaptive.noise_factor);
    s.read("stripe_max_width", p.chain.adaptive.max_width);
    s.read("steger_sigma", p.chain.adaptive.steger_sigma);
    s.read("pixel_bits", p.chain.adaptive.pixel_bits);
    s.read("neighbour_columns", p.chain.neighbour_check.columns);
    s.read("neighbour_step", p.chain.neighbour_check.step);
    std::string ambient = to_string(p.ambient.mode);
    s.read("ambient", ambient);
    s.read("dark_frame", p.ambient.dark_frame_path);
    s.read("ambient_off_first", p.ambient.off_first);
    s.finish();
    validated(origin, "processing", [&] {
      p.backend = parse_backend(backend);
      p.chain.column.method = parse_method(method);
      p.chain.column.selection = parse_selection(selection);
      p.chain.adaptive.estimator = parse_estimator(estimator);
      p.ambient.mode = parse_ambient_mode(ambient);
      if (p.ambient.mode != AmbientMode::DarkFrame) p.ambient.dark_frame_path.clear();
      p.validate();
    });
  }
  {  // [output]
    Section s(root["output"].as_table(), "output", origin);
    auto& o = c.output;
    std::string dir = o.dir.string(), ply_format = "binary";
    s.read("dir", dir);
    s.read("ply", o.ply);
    s.read("ply_format", ply_format);
    s.read("heightmap", o.heightmap);
    s.read("preview", o.preview);
    s.read("summary", o.summary);
    s.read("xyz_tiff", o.xyz_tiff);
    s.read("height_bits", o.height_bits);
    s.read_strings("heightmap_filters", o.heightmap_filters);
    s.finish();
    o.dir = dir;
    if (ply_format == "binary")
      o.ply_encoding = io::PlyEncoding::BinaryLittleEndian;
    else if (ply_format == "ascii")
      o.ply_encoding = io::PlyEncoding::Ascii;
    else
      s.fail("ply_format", "'" + ply_format + "' is not known (expected binary or ascii)");
    validated(origin, "output", [&] { o.validate(); });
  }
  {  // [calibration]
    Section s(root["calibration"].as_table(), "calibration", origin);
    auto& k = c.pipeline.calibration;
    std::vector<std::int64_t> roi;
    s.read("enabled", k.enabled);
    s.read("x_scale", k.x_scale);
    s.read("x_offset", k.x_offset);
    s.read("y_scale", k.y_scale);
    s.read("y_offset", k.y_offset);
    s.read("z_scale", k.z_scale);
    s.read("z_offset", k.z_offset);
    s.read("y_from_encoder", k.y_from_encoder);
    // A sheet-of-light calibration file (docs/calibration.md).
    auto& f = c.calibration;
    std::string file;
    s.read("file", file);
    s.read("y_step_mm", f.y_step_mm);
    s.read_ints("roi_offset", roi);
    s.finish();
    if (!file.empty()) f.file = file;  // as source.path: relative to the working directory
    if (!roi.empty()) {
      if (roi.size() != 2) s.fail("roi_offset", "expected [x, y]: two sensor-pixel offsets");
      f.roi_x = static_cast<int>(roi[0]);
      f.roi_y = static_cast<int>(roi[1]);
    }
    if (!file.empty() && k.enabled)
      s.fail("file", "cannot be used with enabled = true (expected either a calibration file or the linear keys)");
    validated(origin, "calibration", [&] { f.validate(); });
  }
  {  // [publisher]
    Section s(root["publisher"].as_table(), "publisher", origin);
    auto& p = c.publisher;
    s.read("enabled", c.publish);
    s.read("endpoint", p.endpoint);
    s.read("send_hwm", p.send_hwm);
    s.read("rows_per_message", p.rows_per_message);
    s.read("heightmap_rows", p.heightmap_rows);
    s.read("rectified_grid", p.rectified_grid);
    s.read("rectified_rule", p.rectified_rule);
    s.read("rectified_fill", p.rectified_fill);
    s.read("stats_interval", p.stats_interval);
    s.read("linger_ms", p.linger_ms);
    s.read("control_timeout_ms", p.control_timeout_ms);
    s.finish();
  }
  {  // [security]
    Section s(root["security"].as_table(), "security", origin);
    auto& k = c.publisher.curve;
    std::string secret;
    s.read("curve", k.enabled);
    s.read("server_secret_key", secret);
    s.read_paths("client_keys", k.client_keys);
    // Key files handed over by systemd's LoadCredential= (configs/stripeline.service,
    // docs/daemon.md "Deployment"): a leading ${CREDENTIALS_DIRECTORY} is that variable.
    auto credential = [&](const char* key, const std::string& path) -> std::string {
      static constexpr std::string_view var = "${CREDENTIALS_DIRECTORY}";
      if (path.compare(0, var.size(), var) != 0) return path;
      const char* dir = std::getenv("CREDENTIALS_DIRECTORY");
      if (dir == nullptr || *dir == '\0')
        s.fail(key, "'" + path + "' names ${CREDENTIALS_DIRECTORY}, which is not set (systemd sets it for a unit with "
                    "LoadCredential=; outside systemd, export CREDENTIALS_DIRECTORY=<folder of the key files>)");
      return std::string(dir) + path.substr(var.size());
    };
    secret = credential("server_secret_key", secret);
    for (auto& key : k.client_keys) key = credential("client_keys", key.string());
    s.finish();
    k.server_secret_key = secret;
  }
  validated(origin, "publisher", [&] { c.publisher.validate(); });
  {  // [daemon]
    Section s(root["daemon"].as_table(), "daemon", origin);
    auto& d = c.daemon;
    s.read("scan_rows", d.scan_rows);
    s.read("pause", d.pause);
    s.read("idle_close", d.idle_close);
    s.read("rate", d.rate);
    s.read("stop_timeout", d.stop_timeout);
    s.read("stall_timeout", d.stall_timeout);
    s.read("log_level", d.log_level);
    s.finish();
    validated(origin, "daemon", [&] { d.validate(); });
  }
  {  // [http]
    Section s(root["http"].as_table(), "http", origin);
    auto& h = c.http;
    s.read("enabled", h.enabled);
    s.read("address", h.address);
    s.read("port", h.port);
    s.read("max_connections", h.max_connections);
    s.read("request_timeout", h.request_timeout);
    s.read("idle_timeout", h.idle_timeout);
    s.finish();
    validated(origin, "http", [&] { h.validate(); });
  }
  return c;
}

Config load_config(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw ConfigError(path.string() + ": config file not found (expected a TOML file)");
  std::ifstream in(path);
  if (!in) throw ConfigError(path.string() + ": cannot be read");
  std::stringstream buffer;
  buffer << in.rdbuf();
  Config c = parse_config(buffer.str(), path.string());
  // A relative source path in a config is relative to the working directory,
  // as on the command line; documented in configs/replay.toml.
  return c;
}

}  // namespace stripeline
