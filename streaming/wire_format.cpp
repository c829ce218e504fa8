#include "streaming/wire_format.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cctype>
#include <cmath>
#include <chrono>
#include <cstring>
#include <limits>
#include <random>
#include <string_view>

#include "core/errors.h"
#include "core/fixed_point.h"
#include "core/metadata.h"

namespace stripeline::wire {

static_assert(std::endian::native == std::endian::little,
              "the wire format is little-endian; a big-endian host needs byte swaps in encode_rows/decode");

namespace {
constexpr const char* kTopicNames[] = {"series-start", "profile", "heightmap", "series-end", "stats", "measurement"};

template <class T>
zmq::message_t message_of(const std::vector<T>& v) {
  return zmq::message_t(v.data(), v.size() * sizeof(T));
}

template <class T>
void vector_from(std::string_view part, std::size_t expected, std::vector<T>& out, const char* name) {
  if (part.size() != expected * sizeof(T))
    throw MalformedMessage("size", std::string("array '") + name + "' has " + std::to_string(part.size()) + " bytes (expected " +
                                       std::to_string(expected * sizeof(T)) + ")");
  out.resize(expected);
  if (expected) std::memcpy(out.data(), part.data(), part.size());
}

// The descriptions of a row message's arrays (header "parts"): z,
// intensity, width, quality [rows, slots, width], then with points the
// points [rows, slots, width, 3] and motion_y [rows].
struct PartDescription {
  const char* name;
  const char* dtype;
};
constexpr PartDescription kRowParts[] = {{"z", "<f4"}, {"intensity", "<u2"}, {"width", "<u2"}, {"quality", "<u2"}, {"points", "<f4"}, {"motion_y", "<f8"}};
// Part i's shape: [rows, slots, width], points [rows, slots, width, 3], motion_y [rows].
struct PartShape {
  std::array<std::int64_t, 4> dims{};
  std::size_t n = 0;
  nlohmann::json json() const { return nlohmann::json(std::vector<std::int64_t>(dims.begin(), dims.begin() + static_cast<long>(n))); }
};
PartShape part_shape(std::size_t i, int rows, int slots, int width) {
  if (i == 5) return {{rows, 0, 0, 0}, 1};
  if (i == 4) return {{rows, slots, width, 3}, 4};
  return {{rows, slots, width, 0}, 3};
}

nlohmann::json part_descriptions(int rows, int slots, int width, bool points) {
  nlohmann::json parts = nlohmann::json::array();
  for (std::size_t i = 0; i < (points ? 6u : 4u); ++i)
    parts.push_back({{"name", kRowParts[i].name}, {"dtype", kRowParts[i].dtype}, {"shape", part_shape(i, rows, slots, width).json()}});
  return parts;
}

// The row fields of a profile/heightmap header: `meta(i)` gives row i's
// frame id, timestamp, encoder and missing flag.
template <class Meta>
void add_row_fields(nlohmann::json& h, std::uint64_t series_row, std::uint64_t index, int rows, int width, int slots, bool points,
                    const Meta& meta) {
  h["series_row"] = series_row;
  h["index"] = index;
  h["rows"] = rows;
  h["width"] = width;
  h["slots"] = slots;
  nlohmann::json ids = nlohmann::json::array(), ts = nlohmann::json::array(), enc = nlohmann::json::array(),
                 missing = nlohmann::json::array();
  for (int i = 0; i < rows; ++i) {
    const auto [id, t, e, m] = meta(i);
    ids.push_back(id);
    ts.push_back(t);
    enc.push_back(e ? nlohmann::json(*e) : nlohmann::json(nullptr));
    if (m) missing.push_back(i);
  }
  h["frame"] = rows > 0 ? ids.front() : nlohmann::json(0);
  h["frame_ids"] = std::move(ids);
  h["timestamps_ns"] = std::move(ts);
  h["encoder"] = std::move(enc);
  h["missing_rows"] = std::move(missing);
  if (points) h["point_unit"] = "mm";
  h["parts"] = part_descriptions(rows, slots, width, points);
}

struct RowMeta {
  std::uint64_t frame_id;
  std::int64_t timestamp_ns;
  std::optional<std::int64_t> encoder;
  bool missing;
};

zmq::message_t text_message(const std::string& s) { return zmq::message_t(s.data(), s.size()); }
}  // namespace

const char* topic_name(Topic t) { return kTopicNames[static_cast<int>(t)]; }

std::optional<Topic> parse_topic(const std::string& name) {
  for (int i = 0; i < 6; ++i)
    if (name == kTopicNames[i]) return static_cast<Topic>(i);
  return std::nullopt;
}

std::string htype(Topic t) { return std::string("stripeline-") + topic_name(t) + "-" + kFormatVersion; }

std::string new_uuid() {
  static thread_local std::mt19937_64 rng([] {
    std::random_device rd;
    std::seed_seq seq{rd(), rd(), rd(), rd(), static_cast<unsigned>(std::chrono::steady_clock::now().time_since_epoch().count())};
    return std::mt19937_64(seq);
  }());
  std::uint64_t a = rng(), b = rng();
  a = (a & 0xFFFFFFFFFFFF0FFFull) | 0x0000000000004000ull;  // version 4
  b = (b & 0x3FFFFFFFFFFFFFFFull) | 0x8000000000000000ull;  // variant 10
  char s[37];
  std::snprintf(s, sizeof s, "%08x-%04x-%04x-%04x-%012llx", static_cast<unsigned>(a >> 32), static_cast<unsigned>((a >> 16) & 0xFFFF),
                static_cast<unsigned>(a & 0xFFFF), static_cast<unsigned>(b >> 48), static_cast<unsigned long long>(b & 0xFFFFFFFFFFFFull));
  return s;
}

std::int64_t unix_time_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void RowBlock::clear(int w, int s) {
  rows = 0;
  width = w;
  slots = s;
  frame_ids.clear();
  timestamps_ns.clear();
  encoder.clear();
  missing.clear();
  z.clear();
  intensity.clear();
  stripe_width.clear();
  quality.clear();
  primary.clear();
  points.clear();
  motion_y.clear();
}

double points_row(const ProfileSpan& p, int f, const ProfileMapping& mapping, float* out) {
  const float none = std::numeric_limits<float>::quiet_NaN();
  for (int s = 0; s < p.slots; ++s)
    for (int x = 0; x < p.width; ++x) {
      float* o = out + 3 * (static_cast<std::size_t>(s) * p.width + x);
      double X, dY, Z;
      // y = 0: dY comes back as the float the processor computed (Y - motion_y).
      if (s < p.peaks(f, x) && mapping.point(p, f, s, x, 0.0, X, dY, Z)) {
        o[0] = static_cast<float>(X);
        o[1] = static_cast<float>(dY);
        o[2] = static_cast<float>(Z);
      } else {
        o[0] = o[1] = o[2] = none;
      }
    }
  return mapping.point_y(p.index(f), p.meta[f]);
}

void RowBlock::append(const ProfileSpan& p, int first, int count, const ProfileMapping& mapping, std::uint64_t series_row_of_first,
                      bool with_points) {
  with_points = with_points && mapping.sheet() != nullptr;
  if (rows == 0) {
    series_row = series_row_of_first;
    index = p.index(first);
    width = p.width;
    slots = p.slots;
  }
  const std::size_t per_row = static_cast<std::size_t>(p.slots) * p.width;
  for (int f = first; f < first + count; ++f) {
    const FrameMeta& m = p.meta[f];
    frame_ids.push_back(m.frame_id);
    timestamps_ns.push_back(m.timestamp_ns);
    encoder.push_back(m.has_encoder ? std::optional<std::int64_t>(m.encoder) : std::nullopt);
    missing.push_back(m.missing ? 1 : 0);
    z.resize(z.size() + per_row);
    mapping.z_row(p, f, z.data() + z.size() - per_row);
    if (keep_primary)
      for (int x = 0; x < p.width; ++x) primary.push_back(p.primary(f, x));
    if (with_points) {
      points.resize(points.size() + 3 * per_row);
      motion_y.push_back(points_row(p, f, mapping, points.data() + points.size() - 3 * per_row));
    }
    // Slots beyond the peaks found carry whatever the processor left: zero them.
    for (int s = 0; s < p.slots; ++s)
      for (int x = 0; x < p.width; ++x) {
        const bool filled = s < p.peaks(f, x);
        const std::size_t i = p.slot_index(f, s, x);
        intensity.push_back(filled ? p.intensity[i] : std::uint16_t{0});
        stripe_width.push_back(filled ? p.stripe_width[i] : std::uint16_t{0});
        quality.push_back(filled && p.quality != nullptr ? p.quality[i] : std::uint16_t{0});
      }
    ++rows;
  }
}

// Written by the one metadata serializer (core/metadata.h).
nlohmann::json calibration_json(const LinearCalibration& c) { return nlohmann::json(metadata::linear_calibration(c)); }

LinearCalibration calibration_from_json(const nlohmann::json& j) {
  LinearCalibration c;
  if (!j.is_object()) return c;
  c.enabled = j.value("enabled", false);
  c.x_scale = j.value("x_scale", 1.0);
  c.x_offset = j.value("x_offset", 0.0);
  c.y_scale = j.value("y_scale", 1.0);
  c.y_offset = j.value("y_offset", 0.0);
  c.z_scale = j.value("z_scale", 1.0);
  c.z_offset = j.value("z_offset", 0.0);
  c.y_from_encoder = j.value("y_from_encoder", false);
  return c;
}

nlohmann::json sheet_calibration_json(const AppliedCalibration& c) { return nlohmann::json(metadata::sheet_calibration(c)); }

std::shared_ptr<const AppliedCalibration> sheet_calibration_from_json(const nlohmann::json& j) {
  if (!j.is_object()) return nullptr;
  try {
    auto c = std::make_shared<AppliedCalibration>();
    SheetOfLightModel& m = c->model;
    m.kind = j.at("model").get<std::string>() == "linear" ? SheetOfLightModel::Kind::Linear : SheetOfLightModel::Kind::SheetOfLight;
    c->id = j.value("id", std::string());
    c->file = j.value("file", std::string());
    c->file_sha = j.value("file_fnv1a", std::string());
    m.unit = j.value("unit", std::string("mm"));
    // Integers within an image's range (a float cast to int out of range is undefined).
    const auto roi = [&](int i) {
      const nlohmann::json& v = j.at("roi_offset").at(i);
      if (!v.is_number_integer() || v.get<std::int64_t>() < 0 || v.get<std::int64_t>() > kMaxWidth * 4) throw std::out_of_range("roi");
      return static_cast<int>(v.get<std::int64_t>());
    };
    c->roi_x = roi(0);
    c->roi_y = roi(1);
    m.y_from_encoder = j.value("y_source", std::string("frame")) == "encoder";
    m.y_step = j.at("y_step_mm").get<double>();
    m.y_offset = j.value("y_offset_mm", 0.0);
    m.cu = j.at("centre").at(0).get<double>();
    m.cv = j.at("centre").at(1).get<double>();
    m.scale = j.at("scale").get<double>();
    const auto d = j.at("distortion").get<std::vector<double>>();
    const auto h = j.at("homography").get<std::vector<double>>();
    if (d.size() != sol::kDistortionCount || h.size() != 9 || !(m.scale > 0) || !std::isfinite(m.scale)) return nullptr;
    for (double v : d)
      if (!std::isfinite(v)) return nullptr;
    for (double v : h)
      if (!std::isfinite(v)) return nullptr;
    for (double v : {m.y_step, m.y_offset, m.cu, m.cv})
      if (!std::isfinite(v)) return nullptr;
    for (int i = 0; i < sol::kDistortionCount; ++i) m.distortion[i] = d[i];
    for (int i = 0; i < 9; ++i) m.homography[i] = h[i];
    m.skew_about_x_deg = j.value("skew_about_x_deg", 0.0);
    m.skew_about_z_deg = j.value("skew_about_z_deg", 0.0);
    return c;
  } catch (const nlohmann::json::exception&) {
    return nullptr;
  } catch (const std::out_of_range&) {
    return nullptr;
  }
}

std::size_t Message::bytes() const {
  std::size_t n = 0;
  for (const auto& p : parts) n += p.size();
  return n;
}

std::vector<std::string> Message::strings() const {
  std::vector<std::string> out;
  out.reserve(parts.size());
  for (const auto& p : parts) out.push_back(p.to_string());
  return out;
}

nlohmann::json base_header(Topic t, const std::string& series, std::uint64_t seq) {
  return {{"htype", htype(t)}, {"series", series}, {"seq", seq}, {"time_ns", unix_time_ns()}};
}

Message encode_control(Topic t, const nlohmann::json& header) {
  Message m;
  m.parts.push_back(text_message(topic_name(t)));
  m.parts.push_back(text_message(header.dump()));
  return m;
}

Message encode_rows(Topic t, nlohmann::json h, const ProfileSpan& p, int first, int count, const ProfileMapping& mapping,
                    std::uint64_t series_row_of_first, bool points) {
  points = points && mapping.sheet() != nullptr;
  add_row_fields(h, series_row_of_first, p.index(first), count, p.width, p.slots, points, [&](int i) {
    const FrameMeta& m = p.meta[first + i];
    return RowMeta{m.frame_id, m.timestamp_ns, m.has_encoder ? std::optional<std::int64_t>(m.encoder) : std::nullopt, m.missing};
  });
  const std::size_t per_row = static_cast<std::size_t>(p.slots) * p.width, n = per_row * static_cast<std::size_t>(count);
  zmq::message_t z(n * sizeof(float)), intensity(n * sizeof(std::uint16_t)), width(n * sizeof(std::uint16_t)),
      quality(n * sizeof(std::uint16_t));
  float* zo = z.data<float>();
  auto* io = intensity.data<std::uint16_t>();
  auto* wo = width.data<std::uint16_t>();
  auto* qo = quality.data<std::uint16_t>();
  for (int r = 0; r < count; ++r) {
    const int f = first + r;
    mapping.z_row(p, f, zo + r * per_row);
    // Slots beyond the peaks found carry whatever the processor left: zeros go out.
    for (int s = 0; s < p.slots; ++s) {
      const std::size_t src = p.slot_index(f, s, 0), dst = r * per_row + static_cast<std::size_t>(s) * p.width;
      for (int x = 0; x < p.width; ++x) {
        const bool filled = s < p.peaks(f, x);
        io[dst + x] = filled ? p.intensity[src + x] : std::uint16_t{0};
        wo[dst + x] = filled ? p.stripe_width[src + x] : std::uint16_t{0};
        qo[dst + x] = filled && p.quality != nullptr ? p.quality[src + x] : std::uint16_t{0};
      }
    }
  }
  Message m;
  m.parts.reserve(8);
  m.parts.push_back(text_message(topic_name(t)));
  m.parts.push_back(text_message(h.dump()));
  m.parts.push_back(std::move(z));
  m.parts.push_back(std::move(intensity));
  m.parts.push_back(std::move(width));
  m.parts.push_back(std::move(quality));
  if (points) {
    zmq::message_t xyz(3 * n * sizeof(float)), motion(static_cast<std::size_t>(count) * sizeof(double));
    for (int r = 0; r < count; ++r) motion.data<double>()[r] = points_row(p, first + r, mapping, xyz.data<float>() + 3 * r * per_row);
    m.parts.push_back(std::move(xyz));
    m.parts.push_back(std::move(motion));
  }
  return m;
}

Message encode_rows(Topic t, nlohmann::json h, const RowBlock& r) {
  add_row_fields(h, r.series_row, r.index, r.rows, r.width, r.slots, r.has_points(),
                 [&](int i) { return RowMeta{r.frame_ids[i], r.timestamps_ns[i], r.encoder[i], r.missing[i] != 0}; });
  Message m;
  m.parts.reserve(8);
  m.parts.push_back(text_message(topic_name(t)));
  m.parts.push_back(text_message(h.dump()));
  m.parts.push_back(message_of(r.z));
  m.parts.push_back(message_of(r.intensity));
  m.parts.push_back(message_of(r.stripe_width));
  m.parts.push_back(message_of(r.quality));
  if (r.has_points()) {
    m.parts.push_back(message_of(r.points));
    m.parts.push_back(message_of(r.motion_y));
  }
  return m;
}

namespace {
Decoded decode_parts(const std::vector<std::string_view>& parts);
}  // namespace

Decoded decode(const std::vector<std::string>& parts) {
  std::vector<std::string_view> views(parts.begin(), parts.end());
  return decode_parts(views);
}

Decoded decode(const std::vector<zmq::message_t>& parts) {
  std::vector<std::string_view> views;
  views.reserve(parts.size());
  for (const auto& p : parts) views.emplace_back(static_cast<const char*>(p.data()), p.size());
  return decode_parts(views);
}

namespace {
using nlohmann::json;

[[noreturn]] void malformed(const char* reason, const std::string& problem) { throw MalformedMessage(reason, problem); }

// Typed access to header fields: absent -> nullopt (or the caller's
// default), present with another type or out of range -> MalformedMessage.
// JSON integers only (1.0 is not an integer here, as in the Python client).
std::optional<std::uint64_t> opt_u64(const json& h, const char* key, std::uint64_t max = std::numeric_limits<std::uint64_t>::max()) {
  const auto it = h.find(key);
  if (it == h.end()) return std::nullopt;
  if (!it->is_number_unsigned())
    malformed(it->is_number_integer() ? "range" : "field",
              std::string("'") + key + "' is " + printable(it->dump(), 40) + " (expected an unsigned integer)");
  const std::uint64_t v = it->get<std::uint64_t>();
  if (v > max) malformed("range", std::string("'") + key + "' is " + std::to_string(v) + " (expected at most " + std::to_string(max) + ")");
  return v;
}
std::uint64_t need_u64(const json& h, const char* key, std::uint64_t max = std::numeric_limits<std::uint64_t>::max()) {
  const auto v = opt_u64(h, key, max);
  if (!v) malformed("field", std::string("header field '") + key + "' is missing");
  return *v;
}
std::optional<int> opt_int(const json& h, const char* key, int lo, int hi) {
  const auto it = h.find(key);
  if (it == h.end()) return std::nullopt;
  if (!it->is_number_integer())
    malformed("field", std::string("'") + key + "' is " + printable(it->dump(), 40) + " (expected an integer)");
  const bool neg = it->is_number_integer() && !it->is_number_unsigned();
  const std::int64_t v = neg ? it->get<std::int64_t>() : static_cast<std::int64_t>(std::min<std::uint64_t>(it->get<std::uint64_t>(), std::uint64_t{1} << 62));
  if (v < lo || v > hi)
    malformed("range", std::string("'") + key + "' is " + printable(it->dump(), 40) + " (expected " + std::to_string(lo) + ".." + std::to_string(hi) + ")");
  return static_cast<int>(v);
}
int need_int(const json& h, const char* key, int lo, int hi) {
  const auto v = opt_int(h, key, lo, hi);
  if (!v) malformed("field", std::string("header field '") + key + "' is missing");
  return *v;
}
std::int64_t as_i64(const json& v, const char* what) {
  if (v.is_number_unsigned()) {
    if (v.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      malformed("range", std::string(what) + " is " + printable(v.dump(), 40) + " (expected a signed 64-bit integer)");
    return static_cast<std::int64_t>(v.get<std::uint64_t>());
  }
  if (!v.is_number_integer()) malformed("field", std::string(what) + " is " + printable(v.dump(), 40) + " (expected an integer)");
  return v.get<std::int64_t>();
}
void opt_string(const json& h, const char* key) {
  const auto it = h.find(key);
  if (it != h.end() && !it->is_string())
    malformed("field", std::string("'") + key + "' is " + printable(it->dump(), 40) + " (expected a string)");
}
double finite_number(const json& v, const char* what) {
  if (!v.is_number() || !std::isfinite(v.get<double>()))
    malformed("field", std::string(what) + " is " + printable(v.dump(), 40) + " (expected a finite number)");
  return v.get<double>();
}
const json& need_array(const json& h, const char* key) {
  const auto it = h.find(key);
  if (it == h.end()) malformed("field", std::string("header field '") + key + "' is missing");
  if (!it->is_array()) malformed("field", std::string("'") + key + "' is not an array");
  return *it;
}

// The linear calibration block, checked: an object of finite numbers and booleans.
LinearCalibration checked_calibration(const json& h) {
  const auto it = h.find("calibration");
  if (it == h.end()) return {};
  if (!it->is_object()) malformed("field", "'calibration' is not an object");
  const json& j = *it;
  for (const char* b : {"enabled", "y_from_encoder"})
    if (j.contains(b) && !j[b].is_boolean()) malformed("field", std::string("'calibration.") + b + "' is not true or false");
  for (const char* k : {"x_scale", "x_offset", "y_scale", "y_offset", "z_scale", "z_offset"})
    if (j.contains(k)) finite_number(j[k], (std::string("'calibration.") + k + "'").c_str());
  opt_string(j, "unit");
  LinearCalibration c = calibration_from_json(j);
  if (c.enabled && c.z_scale == 0.0) malformed("range", "'calibration.z_scale' is 0 (expected a non-zero scale)");
  return c;
}

// A series id as log lines may show it: 1..64 characters of [A-Za-z0-9._:-] (a UUID).
void check_series(const json& h) {
  const auto it = h.find("series");
  if (it == h.end()) malformed("field", "header field 'series' is missing");
  if (!it->is_string()) malformed("field", "'series' is " + printable(it->dump(), 40) + " (expected a string)");
  const std::string& s = it->get_ref<const std::string&>();
  const bool ok = !s.empty() && s.size() <= 64 && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_' || c == ':';
  });
  if (!ok) malformed("field", "'series' is '" + printable(s, 40) + "' (expected 1..64 characters of A-Z a-z 0-9 . _ : -, a UUID)");
}

void check_series_start(const json& h) {
  need_int(h, "width", 0, kMaxWidth);
  const int frame_height = opt_int(h, "frame_height", 0, kMaxFrameHeight).value_or(0);
  opt_int(h, "slots", 1, kMaxFrameHeight);
  opt_int(h, "rows_per_message", 0, kMaxRowsPerMessage);
  opt_int(h, "heightmap_rows", 0, kMaxRowsPerMessage);
  const int bits = opt_int(h, "height_bits", 0, 8).value_or(kDefaultHeightCodeBits);
  if (frame_height > max_frame_height_for_code(bits))
    malformed("range", "frame_height " + std::to_string(frame_height) + " does not fit the height code with height_bits " +
                           std::to_string(bits) + " (expected at most " + std::to_string(max_frame_height_for_code(bits)) + ")");
  for (const char* k : {"source", "backend", "method", "pixel_format", "pixel_bits_origin", "software", "format", "point_unit"}) opt_string(h, k);
  opt_int(h, "pixel_bits", 8, 16);
  opt_u64(h, "scan");
  if (const auto u = h.find("unit"); u != h.end() && !(u->is_string() && (*u == "mm" || *u == "px")))
    malformed("field", "'unit' is " + printable(u->dump(), 20) + " (expected \"mm\" or \"px\")");
  checked_calibration(h);
  if (const auto pt = h.find("points"); pt != h.end() && !pt->is_boolean())
    malformed("field", "'points' is " + printable(pt->dump(), 20) + " (expected true or false)");
  if (const auto sc = h.find("sheet_calibration"); sc != h.end() && !sheet_calibration_from_json(*sc))
    malformed("field", "'sheet_calibration' is not a complete sheet-of-light model");
}

void check_series_end(const json& h) {
  for (const char* k : {"profile_rows", "profile_messages", "rows_in", "messages", "scan"}) opt_u64(h, k);
  opt_string(h, "reason");
  if (const auto d = h.find("rows_dropped"); d != h.end()) {
    if (!d->is_object()) malformed("field", "'rows_dropped' is " + printable(d->dump(), 40) + " (expected an object)");
    for (const char* k : {"hwm", "no_subscriber", "error"}) opt_u64(*d, k);
  }
}

// A measured part (docs/wire-format.md "measurement"): the record's fields a reader relies on.
void check_measurement(const json& h, std::size_t parts) {
  if (parts != 2) malformed("parts", "a measurement message has " + std::to_string(parts) + " parts (expected 2: topic, header)");
  const auto p = h.find("part");
  if (p == h.end() || !p->is_object()) malformed("field", "'part' is missing or not an object");
  need_u64(*p, "part");
  for (const char* k : {"decision", "units", "job"})
    if (const auto v = p->find(k); v == p->end() || !v->is_string()) malformed("field", std::string("'part.") + k + "' is missing or not a string");
  const auto tools = p->find("tools");
  if (tools == p->end() || !tools->is_array()) malformed("field", "'part.tools' is missing or not an array");
  for (const auto& t : *tools)
    if (!t.is_object() || !t.contains("name") || !t["name"].is_string() || !t.contains("decision") || !t["decision"].is_string())
      malformed("field", "'part.tools[]' holds " + printable(t.dump(), 40) + " (expected {name, type, decision, values, decisions})");
}

void check_stats(const json& h) {
  for (const char* k : {"series_rows_in", "series_rows_published"}) opt_u64(h, k);
  for (const char* k : {"series_rows_dropped", "total"})
    if (const auto o = h.find(k); o != h.end()) {
      if (!o->is_object()) malformed("field", std::string("'") + k + "' is not an object");
      for (const auto& [name, v] : o->items()) {  // counts, or counts by reason ({hwm, no_subscriber, error})
        const bool ok = v.is_number_unsigned() ||
                        (v.is_object() && std::all_of(v.begin(), v.end(), [](const json& e) { return e.is_number_unsigned(); }));
        if (!ok) malformed("field", std::string("'") + k + "." + printable(name, 30) + "' is not an unsigned integer or an object of them");
      }
    }
}

void check_part_descriptions(const json& h, std::size_t arrays, int rows, int slots, int width) {
  const auto it = h.find("parts");
  if (it == h.end()) return;  // the arrays' order and sizes are fixed by the format
  if (!it->is_array() || it->size() < arrays)
    malformed("shape", "'parts' does not describe the message's " + std::to_string(arrays) + " arrays");
  // Compared in place (no expected JSON built per message: this runs for every message a merge or subscriber decodes).
  const auto is = [](const json& o, const char* key, const char* want) {
    const auto f = o.find(key);
    return f != o.end() && f->is_string() && f->get_ref<const std::string&>() == want;
  };
  for (std::size_t i = 0; i < arrays; ++i) {
    const json& p = (*it)[i];
    const std::size_t k = i;
    const PartShape shape = part_shape(k, rows, slots, width);
    bool ok = p.is_object() && is(p, "name", kRowParts[k].name) && is(p, "dtype", kRowParts[k].dtype);
    const auto sh = ok ? p.find("shape") : p.end();
    ok = ok && sh != p.end() && sh->is_array() && sh->size() == shape.n;
    for (std::size_t d = 0; ok && d < shape.n; ++d) ok = (*sh)[d] == json(shape.dims[d]);  // JSON's number equality, as before
    if (!ok)
      malformed("shape", "'parts' entry " + std::to_string(i) + " is " + printable(p.dump(), 80) + " (expected name " + kRowParts[k].name +
                             ", dtype " + kRowParts[k].dtype + ", shape " + shape.json().dump() + ")");
  }
}

// The carried points (parts 6 and 7), checked against z: a point is three
// finite values or three NaN, there is none where z has no detection, and
// every motion_y is finite.
void decode_points(RowBlock& r, std::string_view points, std::string_view motion) {
  const std::size_t n = static_cast<std::size_t>(r.rows) * r.slots * r.width;
  vector_from(points, 3 * n, r.points, "points");
  vector_from(motion, static_cast<std::size_t>(r.rows), r.motion_y, "motion_y");
  for (std::size_t i = 0; i < n; ++i) {
    const float* p = r.points.data() + 3 * i;
    const int nans = std::isnan(p[0]) + std::isnan(p[1]) + std::isnan(p[2]);
    if (std::isinf(p[0]) || std::isinf(p[1]) || std::isinf(p[2]) || (nans != 0 && nans != 3))
      malformed("values", "points[" + std::to_string(i) + "] is (" + std::to_string(p[0]) + ", " + std::to_string(p[1]) + ", " +
                              std::to_string(p[2]) + ") (expected three finite values, or three NaN for no point)");
    if (nans == 0 && std::isnan(r.z[i]))
      malformed("values", "points[" + std::to_string(i) + "] is a point where z has no detection (expected NaN)");
  }
  for (int i = 0; i < r.rows; ++i)
    if (!std::isfinite(r.motion_y[i]))
      malformed("values", "motion_y[" + std::to_string(i) + "] is " + std::to_string(r.motion_y[i]) + " (expected a finite position in mm)");
}

RowBlock decode_rows(const json& h, const std::vector<std::string_view>& parts, const std::string& topic_text) {
  RowBlock r;
  r.rows = need_int(h, "rows", 0, kMaxRowsPerMessage);
  r.width = need_int(h, "width", 1, kMaxWidth);
  r.slots = need_int(h, "slots", 1, kMaxFrameHeight);
  r.series_row = need_u64(h, "series_row", kMaxSeriesRow);
  r.index = need_u64(h, "index");
  opt_u64(h, "frame");
  const int bits = opt_int(h, "height_bits", 0, 8).value_or(kDefaultHeightCodeBits);
  (void)bits;
  if (const auto u = h.find("unit"); u != h.end() && !(u->is_string() && (*u == "mm" || *u == "px")))
    malformed("field", "'unit' is " + printable(u->dump(), 20) + " (expected \"mm\" or \"px\")");
  const auto rows = static_cast<std::size_t>(r.rows);
  const json& ids = need_array(h, "frame_ids");
  const json& ts = need_array(h, "timestamps_ns");
  const json& enc = need_array(h, "encoder");
  if (ids.size() != rows || ts.size() != rows || enc.size() != rows)
    malformed("shape", "per-row lists have " + std::to_string(ids.size()) + "/" + std::to_string(ts.size()) + "/" + std::to_string(enc.size()) +
                           " entries (expected 'rows' = " + std::to_string(rows) + ")");
  r.frame_ids.reserve(rows);
  r.timestamps_ns.reserve(rows);
  r.encoder.reserve(rows);
  for (std::size_t i = 0; i < rows; ++i) {
    if (!ids[i].is_number_unsigned()) malformed("field", "'frame_ids[" + std::to_string(i) + "]' is not an unsigned integer");
    r.frame_ids.push_back(ids[i].get<std::uint64_t>());
    r.timestamps_ns.push_back(as_i64(ts[i], "'timestamps_ns[]'"));
    r.encoder.push_back(enc[i].is_null() ? std::nullopt : std::optional<std::int64_t>(as_i64(enc[i], "'encoder[]'")));
  }
  r.missing.assign(rows, 0);
  if (const auto mr = h.find("missing_rows"); mr != h.end()) {
    if (!mr->is_array()) malformed("field", "'missing_rows' is not an array");
    for (const auto& m : *mr) {
      if (!m.is_number_unsigned() || m.get<std::uint64_t>() >= rows)
        malformed("range", "'missing_rows' holds " + printable(m.dump(), 30) + " (expected a row 0.." + std::to_string(rows) + " - 1)");
      r.missing[m.get<std::size_t>()] = 1;
    }
  }
  // Merged rows (stripeline merge): per row the mask of the heads in it.
  if (const auto hd = h.find("heads"); hd != h.end()) {
    if (!hd->is_array() || hd->size() != rows)
      malformed("shape", "'heads' is not a list of 'rows' = " + std::to_string(rows) + " head masks");
    for (const auto& m : *hd)
      if (!m.is_number_unsigned()) malformed("field", "'heads' holds " + printable(m.dump(), 30) + " (expected an unsigned 64-bit head mask)");
  }
  // 1.0 senders have no quality part (5 parts); 1.1 adds it (6); 1.2 the
  // calibrated points and motion_y (8), when the publisher carries them.
  if (parts.size() != 5 && parts.size() != 6 && parts.size() != 8)
    malformed("parts", "a " + topic_text + " message has " + std::to_string(parts.size()) + " parts (expected 5, 6 or 8)");
  check_part_descriptions(h, parts.size() - 2, r.rows, r.slots, r.width);
  opt_string(h, "point_unit");
  const std::size_t n = rows * static_cast<std::size_t>(r.slots) * static_cast<std::size_t>(r.width);
  vector_from(parts[2], n, r.z, "z");
  vector_from(parts[3], n, r.intensity, "intensity");
  vector_from(parts[4], n, r.stripe_width, "width");
  if (parts.size() >= 6)
    vector_from(parts[5], n, r.quality, "quality");
  else
    r.quality.assign(n, 0);
  for (std::size_t i = 0; i < n; ++i)
    if (std::isinf(r.z[i])) malformed("values", "z[" + std::to_string(i) + "] is infinite (expected a finite value, or NaN for no detection)");
  if (parts.size() == 8) decode_points(r, parts[6], parts[7]);
  return r;
}

Decoded decode_parts(const std::vector<std::string_view>& parts) {
  if (parts.size() < 2) malformed("parts", "a message has " + std::to_string(parts.size()) + " parts (expected at least 2: topic, header)");
  Decoded d;
  const std::string topic_text = printable(parts[0], 40);
  const auto topic = parse_topic(std::string(parts[0]));
  if (!topic) malformed("topic", "unknown topic '" + topic_text + "'");
  d.topic = *topic;
  try {
    d.header = json::parse(parts[1]);
  } catch (const json::exception& e) {
    malformed("header", std::string("the header is not JSON (") + printable(e.what(), 160) + ")");
  }
  if (!d.header.is_object()) malformed("header", "the header is not a JSON object");
  const json& h = d.header;
  const auto ht_it = h.find("htype");
  if (ht_it == h.end() || !ht_it->is_string()) malformed("htype", "'htype' is missing or not a string");
  const std::string& ht = ht_it->get_ref<const std::string&>();
  const std::string prefix = std::string("stripeline-") + topic_name(d.topic) + "-";
  if (ht.rfind(prefix, 0) != 0) malformed("htype", "htype '" + printable(ht, 60) + "' does not match topic '" + topic_text + "'");
  const std::string version = ht.substr(prefix.size());
  if (version.substr(0, version.find('.')) != std::to_string(kFormatMajor))
    malformed("version", "htype '" + printable(ht, 60) + "' has an unsupported major version (expected " + std::to_string(kFormatMajor) + ".x)");
  try {
    check_series(h);
    d.series = h["series"].get<std::string>();
    d.seq = need_u64(h, "seq");
    if (const auto t = h.find("time_ns"); t != h.end()) as_i64(*t, "'time_ns'");
    switch (d.topic) {
      case Topic::SeriesStart: check_series_start(h); break;
      case Topic::SeriesEnd: check_series_end(h); break;
      case Topic::Stats: check_stats(h); break;
      case Topic::Measurement: check_measurement(h, parts.size()); break;
      case Topic::Profile:
      case Topic::Heightmap:
        d.rows = decode_rows(h, parts, topic_text);
        d.calibration = checked_calibration(h);
        break;
    }
  } catch (const json::exception& e) {  // not expected after the checks above; still one line
    malformed("field", std::string("header field of the wrong type (") + printable(e.what(), 160) + ")");
  }
  return d;
}
}  // namespace

MalformedMessage::MalformedMessage(std::string reason, const std::string& problem)
    : InputError("wire: " + problem), reason_(std::move(reason)) {}

std::string printable(std::string_view s, std::size_t max) {
  std::string out;
  out.reserve(std::min(s.size(), max) + 3);
  for (std::size_t i = 0; i < s.size() && i < max; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    out.push_back(c >= 0x20 && c < 0x7F ? static_cast<char>(c) : '?');
  }
  if (s.size() > max) out += "...";
  return out;
}

std::optional<Gap> GapTracker::observe(const std::string& series, std::uint64_t seq) {
  ++messages_;
  last_backwards_ = false;
  std::optional<Gap> gap;
  if (series != series_) {
    series_ = series;
    last_.reset();
  }
  if (last_) {
    if (seq > *last_ + 1) {
      gap = Gap{series, *last_ + 1, seq - *last_ - 1};
    } else if (seq <= *last_) {
      ++backwards_;
      last_backwards_ = true;
      return std::nullopt;
    }
  }
  if (gap) {
    missing_ += gap->count;
    gaps_.push_back(*gap);
  }
  last_ = seq;
  return gap;
}

}  // namespace stripeline::wire
