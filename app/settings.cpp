// The settings schema (app/settings.h): one table per section below, one
// line per setting. A line binds the key to its field with field() (the
// value as it is) or custom() (a conversion: a choice of words, a unit, two
// fields from one key); what no single key can check (a key that needs
// another, the section's ranges) is the section's finish/validate step in
// kSections.
#include "app/settings.h"

#include "core/metadata.h"

#include <toml++/toml.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <sstream>
#include <string_view>

#include "calibration/toml_text.h"
#include "core/thread_scheduling.h"
#include "core/errors.h"
#include "stages/chain_keys.h"

namespace stripeline {

namespace {

using stripeline::to_string;

// ---------------------------------------------------------------- the reader

// Reads the keys of one TOML table, remembering which were used so that any
// other key is reported as unknown. Conversions (a word to an enum) are
// deferred until every key was read and the unknown ones reported.
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

  // The key's node, marked as known; null when absent.
  const toml::node* node(const char* key) {
    if (!table_) return nullptr;
    used_.insert(key);
    return table_->get(key);
  }

  template <class T>
  bool read(const char* key, T& out) {
    const toml::node* n = node(key);
    if (!n) return false;
    if constexpr (std::is_same_v<T, bool>) {
      if (auto v = n->value<bool>()) return out = *v, true;
      fail(key, "expected true or false");
    } else if constexpr (std::is_same_v<T, std::string>) {
      if (auto v = n->value<std::string>()) return out = *v, true;
      fail(key, "expected a string");
    } else if constexpr (std::is_floating_point_v<T>) {
      if (auto v = n->value<double>()) return out = static_cast<T>(*v), true;
      fail(key, "expected a number");
    } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
      const toml::array* arr = n->as_array();
      if (!arr) fail(key, "expected an array of strings");
      out.clear();
      for (const auto& e : *arr) {
        auto v = e.value<std::string>();
        if (!v) fail(key, "expected an array of strings");
        out.push_back(*v);
      }
      return true;
    } else if constexpr (std::is_same_v<T, std::vector<std::int64_t>>) {
      const toml::array* arr = n->as_array();
      if (!arr) fail(key, "expected an array of integers");
      out.clear();
      for (const auto& e : *arr) {
        auto v = integer_of(e);
        if (!v || *v < 0 || *v > 1000000) fail(key, "expected an array of integers >= 0");
        out.push_back(*v);
      }
      return true;
    } else {
      static_assert(std::is_integral_v<T>);
      auto v = integer_of(*n);
      if (!v) fail(key, "expected an integer");
      if (*v < static_cast<std::int64_t>(std::numeric_limits<T>::min()) ||
          (*v > 0 && static_cast<std::uint64_t>(*v) > static_cast<std::uint64_t>(std::numeric_limits<T>::max())))
        fail(key, "value " + std::to_string(*v) + " does not fit");
      out = static_cast<T>(*v);
      return true;
    }
  }

  // A sub-table ([camera.gentl]), marked as known; null when absent.
  const toml::table* table(const char* key) {
    const toml::node* n = node(key);
    if (n && !n->as_table()) fail(key, "expected a table");
    return n ? n->as_table() : nullptr;
  }

  void defer(std::function<void()> f) { deferred_.push_back(std::move(f)); }
  void run_deferred() {
    for (auto& f : deferred_) f();
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
  std::vector<std::function<void()>> deferred_;
};

// Runs a section's own conversions and validation and names the file and the
// section in its message: "<file>: <section>.<key>: ..." (validators that
// already name their section, e.g. "camera.width", keep it).
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

// ---------------------------------------------------------------- bindings

enum class Kind { Bool, Integer, Number, String, Strings, Integers };

template <class T>
constexpr Kind kind_of() {
  if constexpr (std::is_same_v<T, bool>) return Kind::Bool;
  else if constexpr (std::is_floating_point_v<T>) return Kind::Number;
  else if constexpr (std::is_integral_v<T>) return Kind::Integer;
  else if constexpr (std::is_same_v<T, std::string>) return Kind::String;
  else if constexpr (std::is_same_v<T, std::vector<std::string>>) return Kind::Strings;
  else return Kind::Integers;
}

const char* type_name(Kind k) {
  switch (k) {
    case Kind::Bool: return "boolean";
    case Kind::Integer: return "integer";
    case Kind::Number: return "number";
    case Kind::String: return "string";
    case Kind::Strings: return "array of strings";
    case Kind::Integers: return "array of integers";
  }
  return "?";
}

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += ch;
  }
  return out + "\"";
}

// A value as TOML writes it (the reference's default column).
template <class T>
std::string toml_text(const T& v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v ? "true" : "false";
  } else if constexpr (std::is_floating_point_v<T>) {
    char buf[64];
    const auto r = std::to_chars(buf, buf + sizeof buf, static_cast<double>(v));
    std::string t(buf, r.ptr);
    if (t.find_first_of(".e") == std::string::npos && t.find("inf") == std::string::npos && t.find("nan") == std::string::npos) t += ".0";
    return t;
  } else if constexpr (std::is_integral_v<T>) {
    return std::to_string(v);
  } else if constexpr (std::is_same_v<T, std::string>) {
    return quoted(v);
  } else {
    std::string t = "[";
    for (std::size_t i = 0; i < v.size(); ++i) t += (i ? ", " : "") + toml_text(v[i]);
    return t + "]";
  }
}

struct Binding {
  Kind kind;
  void (*read)(Section&, const char* key, Config&);
  std::string (*show)(const Config&);
};

// The key is the field: `get` returns a reference to it.
template <class Get>
Binding field(Get) {
  using T = std::remove_reference_t<decltype(Get{}(std::declval<Config&>()))>;
  return Binding{kind_of<T>(), [](Section& s, const char* key, Config& c) { s.read(key, Get{}(c)); },
                 [](const Config& c) { return toml_text(Get{}(const_cast<Config&>(c))); }};
}

// The key is a conversion: `get` gives its value from the configuration,
// `set` stores it (throwing ConfigError("<key>: ...") for a value it refuses),
// after every key of the section was read.
template <class Get, class Set>
Binding custom(Get, Set) {
  using T = decltype(Get{}(std::declval<const Config&>()));
  return Binding{kind_of<T>(),
                 [](Section& s, const char* key, Config& c) {
                   T v = Get{}(c);
                   if (s.read(key, v)) s.defer([&c, v] { Set{}(c, v); });
                 },
                 [](const Config& c) { return toml_text(Get{}(c)); }};
}

struct Setting {
  const char* key;
  const char* flag;   // "" = none
  const char* range;  // "" = any value of the type
  const char* help;
  const char* owner;
  Binding bind;
  std::pair<const char*, const char*> implies{"", ""};
};

#define FIELD(expr) field([](Config& c) -> auto& { return expr; })
#define CHOICE(expr, parse, show)                                           \
  custom([](const Config& c) { return std::string(show(expr)); },           \
         [](Config& c, const std::string& t) { expr = parse(t); })

[[noreturn]] void refuse(const char* key, const std::string& what) { throw ConfigError(std::string(key) + ": " + what); }

// ---------------------------------------------------------------- conversions of one section

const char* to_string(SourceKind k) { return k == SourceKind::File ? "file" : k == SourceKind::Camera ? "camera" : "synthetic"; }
SourceKind parse_source_kind(const std::string& t) {
  if (t == "synthetic") return SourceKind::Synthetic;
  if (t == "file") return SourceKind::File;
  if (t == "camera") return SourceKind::Camera;
  refuse("kind", "'" + t + "' is not known (expected synthetic, file or camera)");
}

const char* to_string(io::ImageFileFormat f) {
  switch (f) {
    case io::ImageFileFormat::Auto: return "auto";
    case io::ImageFileFormat::Tiff: return "tiff";
    case io::ImageFileFormat::Png: return "png";
    case io::ImageFileFormat::Pgm: return "pgm";
    case io::ImageFileFormat::Raw: return "raw";
  }
  return "?";
}
io::ImageFileFormat parse_file_format(const std::string& f) {
  for (auto v : {io::ImageFileFormat::Auto, io::ImageFileFormat::Tiff, io::ImageFileFormat::Png, io::ImageFileFormat::Pgm, io::ImageFileFormat::Raw})
    if (f == to_string(v)) return v;
  refuse("format", "'" + f + "' is not known (expected auto, tiff, png, pgm or raw)");
}

io::RawGeometry& raw_of(Config& c) {
  if (!c.file.raw) c.file.raw = io::RawGeometry{0, 0, PixelFormat::Mono8};
  return *c.file.raw;
}

TriggerMode parse_trigger(const std::string& t) {
  for (auto m : {TriggerMode::FreeRun, TriggerMode::External, TriggerMode::Software})
    if (t == to_string(m)) return m;
  refuse("trigger", "'" + t + "' is not known (expected free-run, external or software)");
}

const char* to_string(io::PlyEncoding e) { return e == io::PlyEncoding::Ascii ? "ascii" : "binary"; }
io::PlyEncoding parse_ply_format(const std::string& t) {
  if (t == "binary") return io::PlyEncoding::BinaryLittleEndian;
  if (t == "ascii") return io::PlyEncoding::Ascii;
  refuse("ply_format", "'" + t + "' is not known (expected binary or ascii)");
}

// Key files handed over by systemd's LoadCredential= (configs/stripeline.service,
// docs/daemon.md "Deployment"): a leading ${CREDENTIALS_DIRECTORY} is that variable.
std::string credential(const char* key, const std::string& path) {
  static constexpr std::string_view var = "${CREDENTIALS_DIRECTORY}";
  if (path.compare(0, var.size(), var) != 0) return path;
  const char* dir = std::getenv("CREDENTIALS_DIRECTORY");
  if (dir == nullptr || *dir == '\0')
    refuse(key, "'" + path + "' names ${CREDENTIALS_DIRECTORY}, which is not set (systemd sets it for a unit with "
                "LoadCredential=; outside systemd, export CREDENTIALS_DIRECTORY=<folder of the key files>)");
  return std::string(dir) + path.substr(var.size());
}

std::string show_channel(const io::ChannelMix& m) { return m.name; }
std::string show_backend(Backend b) { return to_string(b); }

// ---------------------------------------------------------------- the tables

const char* const kSource = "acquisition/file_source.h";
const Setting kSourceSettings[] = {
    {"kind", "", "synthetic, file or camera", "Where frames come from: the simulated scanner, a recording or a camera", "app/config.h",
     CHOICE(c.source, parse_source_kind, to_string)},
    {"path", "", "", "kind = \"file\": the recording (frames concatenated vertically); relative to the working directory", kSource,
     custom([](const Config& c) { return c.file.path.string(); }, [](Config& c, const std::string& t) { c.file.path = t; })},
    {"frame_height", "", "1..4096 (required for a file)", "Rows per frame: the image height must be a multiple", kSource, FIELD(c.file.frame_height)},
    {"format", "--format", "auto, tiff, png, pgm or raw", "The recording's file format (auto: from the extension)", kSource,
     CHOICE(c.file.format, parse_file_format, to_string)},
    {"raw_width", "--raw-width", ">= 0", "Raw files: image width, pixels", kSource,
     custom([](const Config& c) { return c.file.raw ? c.file.raw->width : 0; }, [](Config& c, int v) { raw_of(c).width = v; })},
    {"raw_height", "--raw-height", ">= 0 (0 = from the file size)", "Raw files: image height, pixels", kSource,
     custom([](const Config& c) { return c.file.raw ? c.file.raw->height : std::int64_t{0}; },
            [](Config& c, std::int64_t v) { raw_of(c).height = v; })},
    {"raw_depth", "--raw-depth", "8 or 16", "Raw files: bits per pixel", kSource,
     custom([](const Config& c) { return c.file.raw && c.file.raw->format == PixelFormat::Mono16 ? 16 : 8; },
            [](Config& c, int v) {
              if (v != 8 && v != 16) refuse("raw_depth", std::to_string(v) + " is not supported (expected 8 or 16)");
              raw_of(c).format = v == 8 ? PixelFormat::Mono8 : PixelFormat::Mono16;
            })},
    {"rate", "--rate", ">= 0 (0 = as fast as possible)", "Pace the replay at this many frames per second (emulates a camera)", kSource,
     FIELD(c.file.rate)},
    {"loops", "--loops", ">= 0 (0 = forever)", "Passes over the file", kSource, FIELD(c.file.loops)},
    {"channel", "--channel", "red, green, blue, luma or \"R,G,B\" weights", "Colour recordings: how a pixel becomes grey", "io/channel_mix.h",
     custom([](const Config& c) { return show_channel(c.file.channel); },
            [](Config& c, const std::string& t) { c.file.channel = io::parse_channel_mix(t); })},
};

const char* const kSynth = "acquisition/synthetic_scanner.h";
const Setting kSyntheticSettings[] = {
    {"width", "", "", "Frame width, pixels", kSynth, FIELD(c.synthetic.width)},
    {"frame_height", "", "", "Rows per frame", kSynth, FIELD(c.synthetic.frame_height)},
    {"frames", "", "0 = endless", "Frames of the scan", kSynth, FIELD(c.synthetic.frames)},
    {"depth", "", "8, 12 or 16", "Bits per pixel (12: 16-bit words holding 0..4095, as 12-bit cameras deliver them)", kSynth,
     custom([](const Config& c) { return c.synthetic.bits == 12 ? 12 : c.synthetic.format == PixelFormat::Mono8 ? 8 : 16; },
            [](Config& c, int depth) {
              if (depth != 8 && depth != 12 && depth != 16) refuse("depth", std::to_string(depth) + " is not supported (expected 8, 12 or 16)");
              c.synthetic.bits = depth == 12 ? 12 : 0;
              c.synthetic.format = depth == 8 ? PixelFormat::Mono8 : PixelFormat::Mono16;
            })},
    {"seed", "", "", "Random seed of the scene and the noise", kSynth, FIELD(c.synthetic.seed)},
    {"beam_sigma", "", "", "Stripe half-width (Gaussian sigma), pixels", kSynth, FIELD(c.synthetic.beam_sigma)},
    {"peak", "", "", "Mean stripe peak above the background (8-bit scale)", kSynth, FIELD(c.synthetic.peak)},
    {"peak_variation", "", "0..0.9", "Relative power variation along the line", kSynth, FIELD(c.synthetic.peak_variation)},
    {"background", "", "", "Mean background level", kSynth, FIELD(c.synthetic.background)},
    {"noise", "", "", "Sensor noise sigma", kSynth, FIELD(c.synthetic.noise)},
    {"speckle", "", "0..1", "Multiplicative speckle on the stripe", kSynth, FIELD(c.synthetic.speckle)},
    {"occlusion", "", "0..1", "Fraction of columns with no stripe (shadow)", kSynth, FIELD(c.synthetic.occlusion)},
    {"reflection", "", "0..1", "Fraction of columns with a secondary reflection", kSynth, FIELD(c.synthetic.reflection)},
    {"reflection_strength", "", "", "The reflection's power relative to the stripe", kSynth, FIELD(c.synthetic.reflection_strength)},
    {"frame_rate", "", "", "Frames per second, for timestamps", kSynth, FIELD(c.synthetic.frame_rate)},
    {"encoder_step", "", "0 = no encoder", "Encoder counts per frame", kSynth, FIELD(c.synthetic.encoder_step)},
    {"cached_frames", "", "0 = render every frame",
     "N: render frames 0..N-1 once, frame n shows n mod N (its encoder count and timestamp are n's): the host's cost of a camera, not of rendering",
     kSynth, FIELD(c.synthetic.cached_frames)},
    {"ambient", "", "", "Uneven diffuse ambient light: peak level over the background (8-bit scale)", kSynth, FIELD(c.synthetic.ambient)},
    {"texture", "", "0..0.9", "Surface albedo variation: modulates the ambient light and the stripe", kSynth, FIELD(c.synthetic.texture)},
    {"glow", "", "0..2", "Glow/blooming around the stripe, relative to its power", kSynth, FIELD(c.synthetic.glow)},
    {"glow_width", "", "", "The glow's exponential decay length, pixels", kSynth, FIELD(c.synthetic.glow_width)},
    {"second_stripe", "", "0..1", "Fraction of columns (stretches) with a second, weaker stripe close by", kSynth, FIELD(c.synthetic.second_stripe)},
    {"second_stripe_distance", "", "", "Its distance from the stripe, pixels", kSynth, FIELD(c.synthetic.second_stripe_distance)},
    {"second_stripe_strength", "", "", "Its power relative to the stripe", kSynth, FIELD(c.synthetic.second_stripe_strength)},
    {"dim_segments", "", "0..1", "Fraction of columns (stretches) where the stripes are dimmed", kSynth, FIELD(c.synthetic.dim_segments)},
    {"dim_factor", "", "", "The stripes' power there", kSynth, FIELD(c.synthetic.dim_factor)},
    {"beam_sigma_variation", "", "0..0.8", "Relative beam width variation along the line", kSynth, FIELD(c.synthetic.beam_sigma_variation)},
};

const char* const kCam = "acquisition/camera_source.h";
const Setting kCameraSettings[] = {
    {"id", "", "", "Aravis id (\"Vendor-Model-Serial\"), serial number or IP address; \"\" = the first found", kCam, FIELD(c.camera.id)},
    {"width", "", "0 = leave", "ROI width: the stripe frame, pixels", kCam, FIELD(c.camera.width)},
    {"height", "", "0 = leave", "ROI height: rows per frame", kCam, FIELD(c.camera.height)},
    {"offset_x", "", ">= 0", "ROI offset on the sensor, pixels", kCam, FIELD(c.camera.offset_x)},
    {"offset_y", "", ">= 0", "ROI offset on the sensor, rows", kCam, FIELD(c.camera.offset_y)},
    {"pixel_format", "", "Mono8, Mono10, Mono12, Mono14 or Mono16", "The camera's pixel format", kCam, FIELD(c.camera.pixel_format)},
    {"exposure_us", "", "0 = leave", "Exposure time, microseconds", kCam, FIELD(c.camera.exposure_us)},
    {"gain", "", "< 0 = leave", "Gain, dB (raw units on cameras without Gain)", kCam, FIELD(c.camera.gain)},
    {"frame_rate", "", "0 = leave (required for a software trigger)", "Frames per second", kCam, FIELD(c.camera.frame_rate)},
    {"trigger", "", "free-run, external or software", "How frames are triggered", kCam, CHOICE(c.camera.trigger, parse_trigger, to_string)},
    {"trigger_source", "", "", "External trigger: the camera's TriggerSource entry", kCam, FIELD(c.camera.trigger_source)},
    {"trigger_activation", "", "", "External trigger: the camera's TriggerActivation entry", kCam, FIELD(c.camera.trigger_activation)},
    {"encoder_chunk", "", "", "Chunk feature carrying the encoder count (\"ChunkEncoderValue\"); \"\" = none", kCam, FIELD(c.camera.encoder_chunk)},
    {"features", "", "\"Name=Value\" each", "Extra GenICam settings applied last, in order", kCam, FIELD(c.camera.features)},
    {"packet_size", "", "0 = negotiate", "GigE Vision packet size, bytes", kCam, FIELD(c.camera.packet_size)},
    {"packet_socket", "", "", "Aravis' packet socket (false: the plain socket path, needed on loopback)", kCam, FIELD(c.camera.packet_socket)},
    {"socket_buffer", "", "0 = the OS default", "GigE Vision receive socket buffer, bytes", kCam, FIELD(c.camera.socket_buffer)},
    {"stream_buffers", "", "", "Driver buffers queued for the camera", kCam, FIELD(c.camera.stream_buffers)},
    {"frame_timeout", "", "0 = Aravis' default", "Seconds before the driver gives up on a frame", kCam, FIELD(c.camera.frame_timeout)},
    {"heartbeat_timeout", "", "", "Seconds without an answer before the camera is declared lost", kCam, FIELD(c.camera.heartbeat_timeout)},
    {"flush_timeout", "", "0 = only full batches", "Hand on a partial batch after this many seconds", kCam, FIELD(c.camera.flush_timeout)},
    {"gap_fill_limit", "", "0 = one batch", "Largest gap of lost frames inserted as missing rows", kCam, FIELD(c.camera.gap_fill_limit)},
    {"frames", "", "0 = until stopped", "Stop after this many frames", kCam, FIELD(c.camera.frames)},
    {"reconnect_interval", "", "", "Daemon: seconds between attempts to reopen a lost camera", kCam, FIELD(c.camera.reconnect_interval)},
    {"direct_buffers", "", "", "Frame grabbers: write whole batches into the pipeline's (pinned) buffers (false: the copy path)", kCam,
     FIELD(c.camera.direct_buffers)},
    {"transport", "", "aravis or gentl", "How the camera is reached: Aravis, or a frame grabber's GenTL producer ([camera.gentl])", kCam,
     FIELD(c.camera.transport)},
};

const char* const kGenTL = "acquisition/gentl/gentl_camera.h";
const Setting kGenTLSettings[] = {
    {"cti", "", "", "A .cti file or a folder of them; \"\" = the folders of GENICAM_GENTL64_PATH", kGenTL, FIELD(c.gentl.cti)},
    {"device", "", "", "Device id, serial number or display name (\"interface/device\" picks the interface); \"\" = the first", kGenTL,
     FIELD(c.gentl.device)},
    {"frames_per_buffer", "", "0 = leave", "Frames the grabber concatenates into one buffer", kGenTL, FIELD(c.gentl.frames_per_buffer)},
    {"frames_per_buffer_feature", "", "", "The grabber's feature for frames per buffer", kGenTL, FIELD(c.gentl.frames_per_buffer_feature)},
    {"grabber_features", "", "\"Name=Value\" each", "Settings of the grabber (not the camera), applied in order", kGenTL,
     FIELD(c.gentl.grabber_features)},
    {"frame_info_chunk", "", "", "Switch the camera's chunk mode on: per-frame ids, timestamps, encoder, status", kGenTL,
     FIELD(c.gentl.frame_info_chunk)},
    {"buffers", "", "", "Buffers of our own queued to the grabber", kGenTL, FIELD(c.gentl.buffers)},
    {"event_timeout", "", "", "Seconds one wait for a buffer lasts before stop and flush are checked", kGenTL, FIELD(c.gentl.event_timeout)},
};

const char* const kPipe = "pipeline/pipeline.h";
const char* const kBudget = "pipeline/memory_budget.h";
const char* const kChain = "stages/chain.h";
const char* const kAmbient = "stages/ambient.h";
namespace k = chain_keys;
const Setting kProcessingSettings[] = {
    {"backend", "--backend", "auto, cpu or cuda", "Where the chain runs (auto: CUDA when a GPU is present)", "stages/backend.h",
     CHOICE(c.pipeline.backend, parse_backend, show_backend)},
    {k::batch_frames, "--batch-frames", "0 (from the memory budget, at most 300) or 1..65536 (even with ambient = \"alternate\")",
     "Frames per batch (the grabber's buffer); refused when it does not fit the memory budget", kPipe, FIELD(c.pipeline.batch_frames)},
    {"memory_budget", "--memory-budget", "auto (a quarter of the RAM) or a size: \"512M\", \"4G\"",
     "Host memory the batches may take: frames per batch, buffers and profile slots derive from it (docs/memory.md)", kBudget,
     custom([](const Config& c) { return memory_size_text(c.pipeline.memory.host); },
            [](Config& c, const std::string& t) { c.pipeline.memory.host = parse_memory_size(t, "memory_budget"); })},
    {"device_memory_budget", "--device-memory-budget", "auto (half the GPU's free memory) or a size",
     "CUDA backend: device memory the lanes may take (docs/memory.md)", kBudget,
     custom([](const Config& c) { return memory_size_text(c.pipeline.memory.device); },
            [](Config& c, const std::string& t) { c.pipeline.memory.device = parse_memory_size(t, "device_memory_budget"); })},
    {"buffers", "--buffers", "1..64", "Slots in the pool: batches in flight", kPipe, FIELD(c.pipeline.buffers)},
    {"lanes", "--lanes", "0 (buffers - 1)..64", "Processors working at once", kPipe, FIELD(c.pipeline.lanes)},
    {"lane_scheduling", "--lane-scheduling", "auto, pipeline or threads",
     "Who runs the steps: auto = dedicated lane threads taking the batches in turn for batches of <= 16 frames on CUDA (the live path), oneTBB's "
     "pipeline otherwise (docs/cuda.md)",
     "pipeline/lane_threads.h", CHOICE(c.pipeline.scheduling, parse_lane_scheduling, to_string)},
    {"lane_cpus", "--lane-cpus", "\"\" = any; e.g. \"2-5\"", "The CPUs the lane threads may run on (keeps other work off the live path's cores)",
     "pipeline/lane_threads.h",
     custom([](const Config& c) { return cpu_list_text(c.pipeline.lane_thread_scheduling.cpus); },
            [](Config& c, const std::string& t) { c.pipeline.lane_thread_scheduling.cpus = parse_cpu_list(t, "lane_cpus"); })},
    {"lane_realtime_priority", "--lane-realtime-priority", "0 = off, 1..99",
     "SCHED_FIFO priority of the lane threads (needs CAP_SYS_NICE or LimitRTPRIO=; they spin, so set kernel.sched_rt_runtime_us to -1, or the "
     "kernel's real-time throttling stops them 50 ms a second)",
     "pipeline/lane_threads.h",
     FIELD(c.pipeline.lane_thread_scheduling.fifo_priority)},
    {"live_max_batch", "--live-max-batch", "0 (off) or 1..65536",
     "Live path (batch_frames below it): while frames wait at the source the batch grows up to this many to catch up (docs/architecture.md)",
     "pipeline/live_batching.h", FIELD(c.pipeline.live_max_batch)},
    {"live_max_waiting", "--live-max-waiting", "0 (buffers x live_max_batch), -1 (never drop) or a frame count",
     "Live path: beyond this many frames waiting at the source the oldest are dropped (counted)", "pipeline/live_batching.h",
     FIELD(c.pipeline.live_max_waiting)},
    {k::cuda_graphs, "--cuda-graphs", "", "CUDA, batches of <= 16 frames: replay each slot's copies and kernels as one CUDA graph (docs/cuda.md)", kChain,
     FIELD(c.pipeline.chain.cuda_graphs)},
    {k::persistent_engine, "--persistent-engine", "",
     "CUDA, frames alone through the line model: resident kernels fed through pinned memory instead of a graph a frame (docs/cuda.md)", kChain,
     FIELD(c.pipeline.chain.persistent_engine)},
    {k::blur_size, "-b,--blur", "0 (off) or odd 3..15", "Gaussian blur size", kChain, FIELD(c.pipeline.chain.blur_size)},
    {k::blur_across, "--blur-across", "", "Blur across columns too (false: along the columns only, docs/extraction.md)", kChain,
     FIELD(c.pipeline.chain.blur_across)},
    {k::blur_sigma, "--blur-sigma", "0 (from the size) or 0 < sigma <= 100", "Gaussian blur sigma", kChain, FIELD(c.pipeline.chain.blur_sigma)},
    {k::threshold_stage, "--threshold-stage", "", "Zero the pixels below the threshold before extraction (not for adaptive)", kChain,
     FIELD(c.pipeline.chain.threshold_stage)},
    {k::threshold, "-t,--threshold", "1..255 (Mono8) or 1..65535 (Mono16)", "Stripe threshold (pixel value)", kChain,
     FIELD(c.pipeline.chain.column.threshold)},
    {k::method, "-m,--method", "adaptive, cog, max, window, local-max or all", "Column extraction method", kChain,
     CHOICE(c.pipeline.chain.column.method, parse_method, to_string)},
    {k::min_peak, "--min-peak", "0..the pixel maximum", "cog: the brightest pixel must reach this", kChain, FIELD(c.pipeline.chain.column.min_peak)},
    {k::min_width, "--min-width", "1..4096 (cog: at most the frame height)", "cog: shortest run of pixels above the threshold", kChain,
     FIELD(c.pipeline.chain.column.min_width)},
    {k::max_width, "--max-width", "0 (no limit) or >= min_width", "cog: longest run of pixels above the threshold", kChain,
     FIELD(c.pipeline.chain.column.max_width)},
    {k::window, "--window", "1..4096", "window: pixels scanned from the first one above the threshold", kChain, FIELD(c.pipeline.chain.column.window)},
    {k::neighbours, "--neighbours", "1..64", "local-max: pixels above and below a peak must beat", kChain, FIELD(c.pipeline.chain.column.neighbours)},
    {k::selection, "--selection", "strongest, top, bottom or all", "local-max, adaptive: which peaks a column reports", kChain,
     CHOICE(c.pipeline.chain.column.selection, parse_selection, to_string)},
    {k::max_peaks, "--max-peaks", "1..64 (1..16 with adaptive and selection all)", "Selection all: slots per column", kChain,
     FIELD(c.pipeline.chain.max_peaks)},
    {k::max_points, "--max-points", "0 (frame height)..4096", "Method all: slots per column", kChain, FIELD(c.pipeline.chain.max_points)},
    {k::estimator, "--estimator", "centroid, gauss, parabola or steger", "adaptive: the sub-pixel centre", kChain,
     CHOICE(c.pipeline.chain.adaptive.estimator, parse_estimator, to_string)},
    {k::min_contrast, "--min-contrast", "0..255 (8-bit units)", "adaptive: stripe contrast floor", kChain, FIELD(c.pipeline.chain.adaptive.min_contrast)},
    {k::contrast_level, "--contrast-level", "0 < level < 1", "adaptive: the stripe's run lies above background + level x contrast", kChain,
     FIELD(c.pipeline.chain.adaptive.level)},
    {k::centroid_level, "--centroid-level", "0 <= level < 1", "adaptive centroid: weights above background + level x contrast", kChain,
     FIELD(c.pipeline.chain.adaptive.centroid_level)},
    {k::noise_factor, "--noise-factor", "0 (off)..64", "adaptive: contrast at least this many times the column's row-to-row noise", kChain,
     FIELD(c.pipeline.chain.adaptive.noise_factor)},
    {k::stripe_max_width, "--stripe-max-width", "1..256", "adaptive: widest run at the contrast level, pixels; also the background search radius",
     kChain, FIELD(c.pipeline.chain.adaptive.max_width)},
    {k::steger_sigma, "--steger-sigma", "0.5..2.3", "adaptive steger: derivative-of-Gaussian sigma, pixels", kChain,
     FIELD(c.pipeline.chain.adaptive.steger_sigma)},
    {k::pixel_bits, "--pixel-bits", "0 (from the camera, the file or the data) or 8..16 (8 for Mono8)",
     "adaptive: significant bits of the pixels (10/12/14 for such cameras in 16-bit words)", kChain,
     custom([](const Config& c) { return c.pipeline.chain.adaptive.pixel_bits; },
            [](Config& c, int v) {  // the range here, so a bad value stops before any output exists; Mono8's 8 when the frames are known
              if (v != 0 && (v < 8 || v > 16))
                refuse(k::pixel_bits, std::to_string(v) + " is out of range (expected 0 (from the camera, the file or the data) or 8..16)");
              c.pipeline.chain.adaptive.pixel_bits = v;
            })},
    {k::neighbour_columns, "--neighbour-columns", "0 (off)..16; single-peak profiles only",
     "Remove detections that none of this many columns on each side continues", kChain, FIELD(c.pipeline.chain.neighbour_check.columns)},
    {k::neighbour_step, "--neighbour-step", "0 < step <= 64", "Neighbour check: rows per column a continuing detection may move", kChain,
     FIELD(c.pipeline.chain.neighbour_check.step)},
    {k::line_model, "--line-model", "runs with method adaptive, selection strongest", "Choose the laser line as a path across the columns (--line-model=false: each column alone; docs/extraction.md)",
     kChain, FIELD(c.pipeline.chain.line_model.enabled)},
    {k::line_candidates, "--line-candidates", "2..8", "Line model: stripes kept per column for the choice", kChain, FIELD(c.pipeline.chain.line_model.candidates)},
    {k::line_step, "--line-step", "0..64", "Line model: rows per column the line moves at no cost", kChain, FIELD(c.pipeline.chain.line_model.step)},
    {k::line_jump_cost, "--line-jump-cost", "0..255", "Line model: cost per row moved beyond the step, 8-bit levels", kChain, FIELD(c.pipeline.chain.line_model.jump_cost)},
    {k::line_width_cost, "--line-width-cost", "0..255", "Line model: cost per pixel of stripe width change, 8-bit levels", kChain, FIELD(c.pipeline.chain.line_model.width_cost)},
    {k::line_intensity_cost, "--line-intensity-cost", "0..16", "Line model: cost per level of peak intensity change, 8-bit levels", kChain, FIELD(c.pipeline.chain.line_model.intensity_cost)},
    {k::line_segment_cost, "--line-segment-cost", "0..65535", "Line model: cost to start a line segment (and of a break), 8-bit levels", kChain, FIELD(c.pipeline.chain.line_model.segment_cost)},
    {k::line_min_length, "--line-min-length", "1..4096", "Line model: segments shorter than this many columns are dropped", kChain, FIELD(c.pipeline.chain.line_model.min_length)},
    {k::line_width, "--line-width", "1..256", "Line model: a stripe wider than this (pixels) counts contrast x line_width / width", kChain, FIELD(c.pipeline.chain.line_model.line_width)},
    {"ambient", "--ambient", "none, dark-frame or alternate", "Laser-off frames: none, a dark frame subtracted, or alternate on/off frames",
     kAmbient, CHOICE(c.pipeline.ambient.mode, parse_ambient_mode, to_string)},
    {"dark_frame", "--dark-frame", "", "ambient = \"dark-frame\": the laser-off image (one frame) subtracted from every frame", kAmbient,
     FIELD(c.pipeline.ambient.dark_frame_path), {"ambient", "dark-frame"}},
    {"ambient_off_first", "--off-first", "", "ambient = \"alternate\": each pair starts with the laser-off frame", kAmbient,
     FIELD(c.pipeline.ambient.off_first)},
};

const char* const kOut = "app/outputs.h";
const Setting kOutputSettings[] = {
    {"dir", "-o,--out", "", "Output directory: relative file names go under it", kOut,
     custom([](const Config& c) { return c.output.dir.string(); }, [](Config& c, const std::string& t) { c.output.dir = t; })},
    {"ply", "--ply", ".ply; \"\" = none", "The point cloud", kOut, FIELD(c.output.ply)},
    {"ply_format", "--ply-format", "binary or ascii", "PLY encoding (binary little-endian or ASCII)", kOut,
     CHOICE(c.output.ply_encoding, parse_ply_format, to_string)},
    {"heightmap", "--heightmap", ".png or .tif; \"\" = none", "The 16-bit height map", kOut, FIELD(c.output.heightmap)},
    {"preview", "--preview", ".png; \"\" = none", "An 8-bit preview of the height map", kOut, FIELD(c.output.preview)},
    {"summary", "--summary", ".json; \"\" = none", "A JSON summary of the run", kOut, FIELD(c.output.summary)},
    {"xyz_tiff", "--xyz-tiff", ".tif; \"\" = none", "The organised X/Y/Z export: float32 TIFF, 3 planes (frames x width, NaN = no point)", kOut,
     FIELD(c.output.xyz_tiff)},
    {"height_bits", "--height-bits", "0..8", "Fractional bits of the 16-bit height code (6 = 1/64 px)", kOut, FIELD(c.output.height_bits)},
    {"heightmap_filters", "", "docs/heightmap-filters.md", "Filters applied to the height map before it is written, in order", kOut,
     FIELD(c.output.heightmap_filters)},
};

const char* const kLinear = "core/calibration.h";
const char* const kCalFile = "app/calibration_setup.h";
const Setting kCalibrationSettings[] = {
    {"enabled", "", "", "Linear calibration: x, y, z from column, frame and row by scale and offset", kLinear, FIELD(c.pipeline.calibration.enabled)},
    {"x_scale", "", "", "Linear: mm per column", kLinear, FIELD(c.pipeline.calibration.x_scale)},
    {"x_offset", "", "", "Linear: x of column 0, mm", kLinear, FIELD(c.pipeline.calibration.x_offset)},
    {"y_scale", "", "", "Linear: mm per frame (or per encoder count)", kLinear, FIELD(c.pipeline.calibration.y_scale)},
    {"y_offset", "", "", "Linear: y of frame 0, mm", kLinear, FIELD(c.pipeline.calibration.y_offset)},
    {"z_scale", "", "", "Linear: mm per row", kLinear, FIELD(c.pipeline.calibration.z_scale)},
    {"z_offset", "", "", "Linear: z of row 0, mm", kLinear, FIELD(c.pipeline.calibration.z_offset)},
    {"y_from_encoder", "", "", "Linear: y from the encoder count rather than the frame index", kLinear, FIELD(c.pipeline.calibration.y_from_encoder)},
    {"file", "", "not with enabled = true", "A sheet-of-light calibration file (stripeline calibrate); flag --calibration", kCalFile,
     custom([](const Config& c) { return c.calibration.file.string(); },
            [](Config& c, const std::string& t) {
              if (!t.empty()) c.calibration.file = t;  // as source.path: relative to the working directory
            })},
    {"y_step_mm", "", ">= 0 (0 = the file's)", "With a calibration file: mm per frame along the motion; flag --y-step", kCalFile,
     FIELD(c.calibration.y_step_mm)},
    {"roi_offset", "", "[x, y], >= 0", "With a calibration file: offsets of the frames on the sensor (cameras: read back); flag --roi-offset",
     kCalFile,
     custom(
         [](const Config& c) {
           return c.calibration.roi_x ? std::vector<std::int64_t>{*c.calibration.roi_x, c.calibration.roi_y.value_or(0)}
                                      : std::vector<std::int64_t>{};
         },
         [](Config& c, const std::vector<std::int64_t>& roi) {
           if (roi.empty()) return;
           if (roi.size() != 2) refuse("roi_offset", "expected [x, y]: two sensor-pixel offsets");
           c.calibration.roi_x = static_cast<int>(roi[0]);
           c.calibration.roi_y = static_cast<int>(roi[1]);
         })},
};

const char* const kPub = "streaming/publisher.h";
const Setting kPublisherSettings[] = {
    {"enabled", "", "", "Stream the rows over ZeroMQ (docs/wire-format.md); flag --publish ENDPOINT", "app/config.h", FIELD(c.publish)},
    {"endpoint", "", "", "Where the publisher binds (tcp://127.0.0.1:* = an ephemeral port)", kPub, FIELD(c.publisher.endpoint)},
    {"send_hwm", "", "", "Messages queued per subscriber before sends fail (counted as drops)", kPub, FIELD(c.publisher.send_hwm)},
    {"rows_per_message", "", "", "Profile rows per profile message", kPub, FIELD(c.publisher.rows_per_message)},
    {"heightmap_rows", "", "0 = none", "Rows per height-map message", kPub, FIELD(c.publisher.heightmap_rows)},
    {"points", "", "", "With a sheet-of-light calibration: carry the calibrated X/Y/Z in profile and heightmap messages (false: clients map with the model)",
     kPub, FIELD(c.publisher.points)},
    {"rectified_grid", "", "X_MIN:X_MAX:DX in mm; \"\" = off", "With a calibration file: rectified rows on this X grid", kPub,
     FIELD(c.publisher.rectified_grid)},
    {"rectified_rule", "", "max, min, mean or nearest", "Rectified rows: the rule per bin", kPub, FIELD(c.publisher.rectified_rule)},
    {"rectified_fill", "", ">= 0", "Rectified rows: largest gap (bins) filled by interpolation", kPub, FIELD(c.publisher.rectified_fill)},
    {"stats_interval", "", "0 = only at series end", "Seconds between stats messages within a series", kPub, FIELD(c.publisher.stats_interval)},
    {"linger_ms", "", "", "How long queued messages are still delivered after close, ms", kPub, FIELD(c.publisher.linger_ms)},
    {"control_timeout_ms", "", "", "Series start/end wait this long for room at the high-water mark, ms", kPub,
     FIELD(c.publisher.control_timeout_ms)},
};

const char* const kCurve = "streaming/curve.h";
const Setting kSecuritySettings[] = {
    {"curve", "", "", "CURVE encryption and client authentication of the stream", kCurve, FIELD(c.publisher.curve.enabled)},
    {"server_secret_key", "", "", "The server's Z85 secret key file (a leading ${CREDENTIALS_DIRECTORY} is systemd's)", kCurve,
     custom([](const Config& c) { return c.publisher.curve.server_secret_key.string(); },
            [](Config& c, const std::string& t) { c.publisher.curve.server_secret_key = credential("server_secret_key", t); })},
    {"client_keys", "", "", "Public key files of the clients allowed", kCurve,
     custom(
         [](const Config& c) {
           std::vector<std::string> v;
           for (const auto& p : c.publisher.curve.client_keys) v.push_back(p.string());
           return v;
         },
         [](Config& c, const std::vector<std::string>& v) {
           c.publisher.curve.client_keys.clear();
           for (const auto& p : v) c.publisher.curve.client_keys.emplace_back(credential("client_keys", p));
         })},
};

const char* const kService = "app/service_config.h";
const Setting kDaemonSettings[] = {
    {"scan_rows", "", "1..10000000", "A scan ends after this many rows", kService, FIELD(c.daemon.scan_rows)},
    {"pause", "", "0 = off", "... or at a gap of this many seconds between frame timestamps", kService, FIELD(c.daemon.pause)},
    {"idle_close", "", "0 = off", "... or when no frame arrived for this many seconds", kService, FIELD(c.daemon.idle_close)},
    {"rate", "", "0 = as delivered", "Pace the source at this many frames per second", kService, FIELD(c.daemon.rate)},
    {"stop_timeout", "", "", "SIGTERM: seconds allowed to drain and finish files before exiting 1", kService, FIELD(c.daemon.stop_timeout)},
    {"stall_timeout", "", "", "A batch in flight longer than this is a stall (/healthz 503, no watchdog ping)", kService,
     FIELD(c.daemon.stall_timeout)},
    {"log_level", "", "trace, debug, info, warn or error", "Log level", kService, FIELD(c.daemon.log_level)},
};

const Setting kHttpSettings[] = {
    {"enabled", "", "", "Serve /healthz, /livez, /readyz and /metrics", kService, FIELD(c.http.enabled)},
    {"address", "", "", "Listen address", kService, FIELD(c.http.address)},
    {"port", "", "0 = ephemeral", "Listen port", kService, FIELD(c.http.port)},
    {"max_connections", "", "1..65536", "Connections open at once", kService, FIELD(c.http.max_connections)},
    {"request_timeout", "", "0.05..60", "Seconds from a request's first byte to its last header line", kService, FIELD(c.http.request_timeout)},
    {"idle_timeout", "", "0.1..3600", "Seconds a connection may stay open with no request", kService, FIELD(c.http.idle_timeout)},
    {"viewer", "", "", "Serve the live viewer: the page at / and its updates at /events", kService, FIELD(c.http.viewer)},
    {"max_viewers", "", "1..1024", "Live viewers connected at once (beyond: 503)", kService, FIELD(c.http.max_viewers)},
};

// [measure] and [merge.measure]: one schema, the MeasureConfig at `M`.
#define MEASURE_SETTINGS(M)                                                                                                        \
  {"job", "", "a job file", "Apply this measurement job live (docs/measure.md); \"\" = no measuring", kService, FIELD(M.job)}, \
  {"queue_parts", "", "1..1024", "Parts waiting for the tools at most (beyond: dropped, counted)", kService, FIELD(M.queue_parts)}
const Setting kMeasureSettings[] = {MEASURE_SETTINGS(c.measure)};
const Setting kMergeMeasureSettings[] = {MEASURE_SETTINGS(c.merge.measure)};
#undef MEASURE_SETTINGS

const Setting kModbusSettings[] = {
    {"enabled", "", "", "Serve the latest part's results over Modbus TCP (docs/measure.md)", kService, FIELD(c.modbus.enabled)},
    {"address", "", "", "Listen address", kService, FIELD(c.modbus.address)},
    {"port", "", "0 = ephemeral", "Listen port", kService, FIELD(c.modbus.port)},
};

const char* const kHeads = "app/heads_config.h";
const Setting kMergeSettings[] = {
    {"enabled", "", "", "Merge the [[head]]s' streams in the daemon and publish one merged series (docs/scale-out.md)", kHeads, FIELD(c.merge.enabled)},
    {"transforms", "", "", "Head-to-world transforms (`stripeline align` writes them): one [[head]] per head name", kHeads, FIELD(c.merge.transforms)},
    {"grid", "", "X_MIN:X_MAX:DX in world mm", "The merged rows' X cells", kHeads, FIELD(c.merge.grid)},
    {"rule", "", "max, min, mean or nearest", "Within one head's cell: the rule", kHeads, FIELD(c.merge.rule)},
    {"fill", "", ">= 0", "After the merge, fill gaps of up to this many empty cells", kHeads, FIELD(c.merge.fill)},
    {"align", "", "encoder, timestamp or frame", "The key that makes the heads' rows one merged row", kHeads, FIELD(c.merge.align)},
    {"tolerance_us", "", ">= 0", "align = \"timestamp\": rows this close are one row, microseconds", kHeads, FIELD(c.merge.tolerance_us)},
    {"overlap", "", "mean or quality", "Where heads overlap, per cell: the mean, or the head with the best contrast", kHeads, FIELD(c.merge.overlap)},
    {"window_ms", "", "1..600000", "A row waits at most this long for an absent head, ms", kHeads, FIELD(c.merge.window_ms)},
    {"max_pending_rows", "", "1..1000000",
     "Merged rows waiting at once; beyond, the oldest goes out without its absent heads (counted forced): at least window_ms x the heads' rows/s, "
     "so heads drifting apart within the window still merge",
     kHeads, FIELD(c.merge.max_pending_rows)},
    {"publish", "", "", "The merged stream's endpoint (bound)", kHeads, FIELD(c.merge.publish)},
    {"send_hwm", "", ">= 1", "Merged messages queued per subscriber before drops (counted)", kHeads, FIELD(c.merge.send_hwm)},
    {"rows_per_message", "", "1..65536", "Merged rows per message at most", kHeads, FIELD(c.merge.rows_per_message)},
    {"subscribe_timeout", "", "> 0", "Seconds a head waits for the merge's subscription before it publishes", kHeads, FIELD(c.merge.subscribe_timeout)},
    {"range_map", "", ".tif or .tiff; \"\" = none", "Each merged series' range map (float32, world Z mm), under [output] dir as <run>-merge-<NNNNNN>-<name>",
     kHeads, FIELD(c.merge.range_map)},
    {"ply", "", ".ply; \"\" = none", "Each merged series' PLY (one vertex per cell with data), named like range_map", kHeads, FIELD(c.merge.ply)},
    {"client_key", "", "", "CURVE heads: the merge's secret key file, in every head's security.client_keys (docs/scale-out.md)", kHeads,
     FIELD(c.merge.client_key)},
    {"realtime_priority", "", "0 = off, 1..99",
     "SCHED_FIFO priority of the merge's thread and its sockets' I/O threads, so the heads' extraction does not delay it (needs CAP_SYS_NICE or "
     "LimitRTPRIO=; docs/scale-out.md \"Latency under load\")",
     kHeads, FIELD(c.merge.realtime_priority)},
    {"cpus", "", "\"\" = any; e.g. \"1\" or \"2-3\"", "The CPUs the merge's thread and its I/O threads may run on", kHeads, FIELD(c.merge.cpus)},
};

// [[head]]: its own keys; its sub-tables are the sections above (kHeadSections).
const Setting kHeadSettings[] = {
    {"name", "", "letters, digits, '-', '_', '.'", "Required: the head's label in /metrics, log lines, scan file names and merge.transforms", kHeads,
     FIELD(c.head_name)},
    {"device", "", "0..63", "The CUDA device its pipeline runs on (several heads may name one); inherited: the top level's", "pipeline/pipeline.h",
     FIELD(c.pipeline.device)},
};
const char* const kHeadSections[] = {"source", "synthetic", "camera", "processing", "output", "calibration", "publisher", "security", "measure"};

#undef FIELD
#undef CHOICE

// ---------------------------------------------------------------- the sections

struct SectionRule {
  const char* name;      // "camera.gentl"
  std::span<const Setting> settings;
  const char* children;  // sub-tables it holds ("gentl"), "" = none
  // After the keys and their conversions: what needs several keys (ConfigError("<key>: ...")).
  void (*finish)(Config&);
  // The owner's range checks; `validate_as` names the section in its messages.
  void (*validate)(Config&);
  const char* validate_as = nullptr;
  // Flags over a configuration revisit only the sections they name, and this
  // one with that one (security validates the publisher).
  const char* runs_with = nullptr;
};

void no_step(Config&) {}

const SectionRule kSections[] = {
    {"source", kSourceSettings, "",
     [](Config& c) {  // raw geometry only for raw files or with a width
       if (c.file.raw && !(c.file.format == io::ImageFileFormat::Raw || c.file.raw->width > 0)) c.file.raw.reset();
       if (!c.file.raw && c.file.format == io::ImageFileFormat::Raw) raw_of(c);
     },
     [](Config& c) {
       c.file.validate();
       if (c.source == SourceKind::File && c.file.path.empty()) refuse("path", "is required when kind = \"file\"");
     }},
    {"synthetic", kSyntheticSettings, "", no_step, [](Config& c) { c.synthetic.validate(); }},
    {"camera.gentl", kGenTLSettings, "", no_step, [](Config& c) { c.gentl.validate(); }},
    {"camera", kCameraSettings, "gentl", no_step, [](Config& c) { c.camera.validate(); }},
    {"processing", kProcessingSettings, "",
     [](Config& c) {
       if (c.pipeline.ambient.mode != AmbientMode::DarkFrame) c.pipeline.ambient.dark_frame_path.clear();
     },
     [](Config& c) { c.pipeline.validate(); }},
    {"output", kOutputSettings, "", no_step, [](Config& c) { c.output.validate(); }},
    {"calibration", kCalibrationSettings, "",
     [](Config& c) {
       if (!c.calibration.file.empty() && c.pipeline.calibration.enabled)
         refuse("file", "cannot be used with enabled = true (expected either a calibration file or the linear keys)");
     },
     [](Config& c) { c.calibration.validate(); }},
    {"publisher", kPublisherSettings, "", no_step, no_step},
    {"security", kSecuritySettings, "", no_step, [](Config& c) { c.publisher.validate(); }, "publisher", "publisher"},
    {"daemon", kDaemonSettings, "", no_step, [](Config& c) { c.daemon.validate(); }},
    {"http", kHttpSettings, "", no_step, [](Config& c) { c.http.validate(); }},
    {"measure", kMeasureSettings, "", no_step, [](Config& c) { c.measure.validate(); }},
    {"modbus", kModbusSettings, "", no_step, [](Config& c) { c.modbus.validate(); }},
    {"merge", kMergeSettings, "measure", no_step, [](Config& c) { c.merge.validate(); }},
    {"merge.measure", kMergeMeasureSettings, "", no_step,
     [](Config& c) {
       c.merge.measure.validate();
       if (!c.merge.measure.job.empty() && !c.merge.enabled) refuse("job", "needs merge.enabled = true (a job on the merged scan)");
     }},
};

const toml::table* table_of(const toml::table& root, std::string_view name) {
  const toml::table* t = &root;
  while (t && !name.empty()) {
    const auto dot = name.find('.');
    const toml::node* n = t->get(name.substr(0, dot));
    t = n ? n->as_table() : nullptr;
    name = dot == std::string_view::npos ? std::string_view{} : name.substr(dot + 1);
  }
  return t;
}

void check_top_level(const toml::table& root, const std::string& origin) {
  for (const auto& [k, v] : root) {
    const std::string key(k.str());
    if (key == "head") {
      if (!v.is_array_of_tables()) throw ConfigError(origin + ": 'head' must be [[head]] sections (an array of tables)");
      continue;
    }
    bool known = false;
    for (const auto& s : kSections) known = known || key == s.name;
    if (!known)
      throw ConfigError(origin + ": unknown section or key '" + key +
                        "' (expected source, synthetic, camera, processing, output, calibration, publisher, security, daemon, http, measure, modbus, merge, [[head]])");
    if (!v.is_table()) throw ConfigError(origin + ": '" + key + "' must be a table ([" + key + "])");
  }
}

void read_section(Config& c, const toml::table& root, const SectionRule& rule, const std::string& origin) {
  const std::string name = rule.name;
  const toml::table* parent = &root;
  if (const auto dot = name.rfind('.'); dot != std::string::npos) parent = table_of(root, name.substr(0, dot));
  const std::string leaf = name.substr(name.rfind('.') + 1);
  const toml::node* node = parent ? parent->get(leaf) : nullptr;
  if (node && !node->as_table()) throw ConfigError(origin + ": " + name + ": expected a table");
  Section s(node ? node->as_table() : nullptr, name, origin);
  for (const Setting& setting : rule.settings) setting.bind.read(s, setting.key, c);
  for (std::string_view children = rule.children; !children.empty();) {
    const auto comma = children.find(',');
    s.table(std::string(children.substr(0, comma)).c_str());
    children = comma == std::string_view::npos ? std::string_view{} : children.substr(comma + 1);
  }
  s.finish();
  validated(origin, name, [&] {
    s.run_deferred();
    rule.finish(c);
  });
  validated(origin, rule.validate_as ? rule.validate_as : name, [&] { rule.validate(c); });
}

// The sections of `root` over `c`; with `only_present`, the sections `root` holds.
void apply_settings(Config& c, const toml::table& root, const std::string& origin, bool only_present) {
  check_top_level(root, origin);
  for (const SectionRule& rule : kSections)
    if (!only_present || table_of(root, rule.name) || (rule.runs_with && table_of(root, rule.runs_with))) read_section(c, root, rule, origin);
}

// Lays `over` onto `base` key by key (sub-tables merged, values replaced).
void overlay(toml::table& base, const toml::table& over) {
  for (const auto& [k, v] : over) {
    toml::node* b = base.get(k.str());
    if (v.is_table() && b && b->is_table()) overlay(*b->as_table(), *v.as_table());
    else base.insert_or_assign(k.str(), v);
  }
}

bool good_head_name(const std::string& n) {
  if (n.empty() || n.size() > 64) return false;
  for (char ch : n)
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_' || ch == '.')) return false;
  return true;
}

// One [[head]]: the file's sections with its own laid over them, read by the
// same schema; messages name "head[i].<section>.<key>".
std::shared_ptr<Config> read_head(const toml::table& root, const toml::table& h, std::size_t i, const std::string& origin) {
  const std::string name = "head[" + std::to_string(i) + "]";
  toml::table merged = root;
  merged.erase("head");
  merged.erase("merge");
  for (const char* sec : kHeadSections) {
    const toml::node* t = h.get(sec);
    if (!t) continue;
    if (!t->is_table()) throw ConfigError(origin + ": " + name + "." + sec + ": expected a table ([head." + sec + "])");
    if (toml::node* b = merged.get(sec); b && b->is_table()) overlay(*b->as_table(), *t->as_table());
    else merged.insert_or_assign(sec, *t);
  }
  auto hc = std::make_shared<Config>(default_config());
  hc->origin = origin;
  try {
    apply_settings(*hc, merged, origin, false);
  } catch (const ConfigError& e) {
    std::string msg = e.what();
    if (msg.rfind(origin + ": ", 0) == 0) msg = origin + ": " + name + "." + msg.substr(origin.size() + 2);
    throw ConfigError(msg);
  }
  Section s(&h, name, origin);
  for (const Setting& setting : kHeadSettings) setting.bind.read(s, setting.key, *hc);
  for (const char* sec : kHeadSections) s.table(sec);
  s.finish();
  validated(origin, name, [&] {
    s.run_deferred();
    if (!good_head_name(hc->head_name))
      refuse("name", hc->head_name.empty() ? std::string("is required (expected a name of letters, digits, '-', '_' or '.')")
                                           : "'" + hc->head_name + "' is not a head name (expected 1..64 letters, digits, '-', '_' or '.')");
    hc->pipeline.validate();
  });
  return hc;
}

void read_heads(Config& c, const toml::table& root, const std::string& origin) {
  c.heads.clear();
  const toml::node* n = root.get("head");
  if (!n) {
    if (c.merge.enabled) throw ConfigError(origin + ": merge.enabled: needs [[head]] sections (the merge of one daemon's heads)");
    return;
  }
  const toml::array& heads = *n->as_array();
  for (std::size_t i = 0; i < heads.size(); ++i) {
    auto hc = read_head(root, *heads[i].as_table(), i, origin);
    c.heads.push_back(HeadEntry{hc->head_name, hc});
  }
  try {
    check_heads(c.heads, c.merge);
  } catch (const ConfigError& e) {
    throw ConfigError(origin + ": " + e.what());
  }
}

std::string flag_display(const std::string& flag) {  // "-t,--threshold" -> "--threshold"
  const auto comma = flag.rfind(',');
  return comma == std::string::npos ? flag : flag.substr(comma + 1);
}

}  // namespace

void read_settings(Config& config, const std::string& text, const std::string& origin) {
  const toml::table root = parse_toml<ConfigError>(text, origin);
  apply_settings(config, root, origin, false);
  read_heads(config, root, origin);
}

const std::vector<SettingInfo>& settings() {
  static const std::vector<SettingInfo> all = [] {
    std::vector<SettingInfo> out;
    const Config defaults = default_config();
    for (const char* order : {"source", "synthetic", "camera", "camera.gentl", "processing", "output", "calibration", "publisher", "security",
                              "daemon", "http", "measure", "modbus", "merge", "merge.measure"})
      for (const SectionRule& rule : kSections) {
        if (std::string_view(rule.name) != order) continue;
        for (const Setting& s : rule.settings)
          out.push_back(SettingInfo{rule.name, s.key, s.flag, type_name(s.bind.kind), s.range, s.bind.show(defaults), s.help, s.owner,
                                    {s.implies.first, s.implies.second}});
      }
    for (const Setting& s : kHeadSettings)
      out.push_back(SettingInfo{"head", s.key, s.flag, type_name(s.bind.kind), s.range, s.bind.show(defaults), s.help, s.owner, {}});
    return out;
  }();
  return all;
}

std::string settings_digest(const Config& config) {
  // The file names say where outputs go, not how they are made.
  static const std::set<std::string> names = {"output.dir", "output.ply", "output.heightmap", "output.preview", "output.summary", "output.xyz_tiff"};
  std::string text;
  for (const char* section : {"source", "processing", "output", "calibration"})
    for (const SectionRule& rule : kSections) {
      if (std::string_view(rule.name) != section) continue;
      for (const Setting& s : rule.settings) {
        const std::string key = std::string(section) + "." + s.key;
        if (!names.contains(key)) text += key + " = " + s.bind.show(config) + "\n";
      }
    }
  return metadata::fnv1a_hex(text);
}

std::string settings_values(const Config& config) {
  std::string text;
  for (const SectionRule& rule : kSections)
    for (const Setting& s : rule.settings) text += std::string(rule.name) + "." + s.key + " = " + s.bind.show(config) + "\n";
  for (const Setting& s : kHeadSettings) text += std::string("head.") + s.key + " = " + s.bind.show(config) + "\n";
  return text;
}

void apply_setting_flags(Config& config, const std::vector<GivenSetting>& given) {
  toml::table root;
  auto section_of = [&root](const std::string& name) -> toml::table& {
    toml::table* t = &root;
    std::string_view rest = name;
    while (!rest.empty()) {
      const auto dot = rest.find('.');
      const std::string part(rest.substr(0, dot));
      if (!t->contains(part)) t->insert(part, toml::table{});
      t = (*t)[part].as_table();
      rest = dot == std::string_view::npos ? std::string_view{} : rest.substr(dot + 1);
    }
    return *t;
  };
  std::set<std::string> named;
  for (const auto& g : given) named.insert(g.setting->toml_name());
  for (const auto& g : given) {
    const SettingInfo& s = *g.setting;
    const std::string flag = flag_display(s.flag);
    toml::table& t = section_of(s.section);
    const char* end = g.text.c_str() + g.text.size();
    if (s.type == "boolean") {
      if (g.text != "true" && g.text != "false") throw ConfigError(flag + " '" + g.text + "': expected true or false");
      t.insert_or_assign(s.key, g.text == "true");
    } else if (s.type == "integer") {
      std::int64_t v = 0;
      const auto r = std::from_chars(g.text.c_str(), end, v);
      if (r.ec != std::errc() || r.ptr != end) throw ConfigError(flag + " '" + g.text + "': expected an integer");
      t.insert_or_assign(s.key, v);
    } else if (s.type == "number") {
      char* stop = nullptr;
      const double v = std::strtod(g.text.c_str(), &stop);
      if (g.text.empty() || stop != end) throw ConfigError(flag + " '" + g.text + "': expected a number");
      t.insert_or_assign(s.key, v);
    } else if (s.type == "string") {
      t.insert_or_assign(s.key, g.text);
    } else {
      throw ConfigError(flag + ": a list cannot be given as a flag (expected [" + s.section + "] " + s.key + " in a configuration)");
    }
    if (!s.implies.first.empty() && !named.count(s.section + "." + s.implies.first))
      t.insert_or_assign(s.implies.first, s.implies.second);
  }
  static const std::string origin = "command line";
  try {
    apply_settings(config, root, origin, true);
  } catch (const ConfigError& e) {
    std::string msg = e.what();
    if (msg.rfind(origin + ": ", 0) == 0) msg = msg.substr(origin.size() + 2);
    for (const auto& g : given)  // name the flag whose key the message names
      if (!g.setting->flag.empty() && msg.rfind(g.setting->toml_name(), 0) == 0) throw ConfigError(flag_display(g.setting->flag) + ": " + msg);
    throw ConfigError(origin + ": " + msg);
  }
}

std::string settings_markdown() {
  std::ostringstream o;
  o << "# Settings\n\n"
    << "Every key of a configuration file and the flag that sets it on the command line, generated from the schema\n"
    << "(app/settings.cpp) by `stripeline settings --markdown > docs/settings.md`; a test fails when this file and the\n"
    << "schema differ. Flags override the file on `run` ([processing], [output]) and `replay` (also [source]).\n"
    << "The owner is the header whose struct holds the setting and whose `validate()` checks it.\n";
  std::string section;
  auto cell = [](std::string t) {
    for (std::size_t i = 0; (i = t.find('|', i)) != std::string::npos; i += 2) t.replace(i, 1, "\\|");
    return t;
  };
  for (const SettingInfo& s : settings()) {
    if (s.section != section) {
      section = s.section;
      o << "\n## " << (section == "head" ? "[[head]]" : "[" + section + "]") << "\n\n";
      if (section == "head")
        o << "Several heads in one daemon (app/heads_config.h, docs/daemon.md): each [[head]] has these keys and any of the sections\n"
          << "source, synthetic, camera, processing, output, calibration, publisher, security and measure as its own sub-tables\n"
          << "([head.processing], ...), laid key by key over the top-level ones.\n\n";
      o << "| key | flag | type | range | default | meaning | owner |\n|---|---|---|---|---|---|---|\n";
    }
    o << "| `" << s.key << "` | " << (s.flag.empty() ? "" : "`" + s.flag + "`") << " | " << s.type << " | " << cell(s.range) << " | `"
      << cell(s.default_text) << "` | " << cell(s.help) << " | " << s.owner << " |\n";
  }
  return o.str();
}

std::string settings_text() {
  std::ostringstream o;
  std::string section;
  for (const SettingInfo& s : settings()) {
    if (s.section != section) {
      section = s.section;
      o << (o.tellp() > 0 ? "\n" : "") << (section == "head" ? "[[head]]   (and any section above as [head.<section>])" : "[" + section + "]") << "\n";
    }
    o << "  " << s.key << " = " << s.default_text << (s.flag.empty() ? "" : "   (" + s.flag + ")") << "\n      " << s.help
      << (s.range.empty() ? "" : "; " + s.range) << "\n";
  }
  return o.str();
}

}  // namespace stripeline
