#include "streaming/wire_format.h"

#include <bit>
#include <chrono>
#include <cstring>
#include <limits>
#include <random>
#include <string_view>

#include "core/errors.h"
#include "core/fixed_point.h"

namespace stripeline::wire {

static_assert(std::endian::native == std::endian::little,
              "the wire format is little-endian; a big-endian host needs byte swaps in encode_rows/decode");

namespace {
constexpr const char* kTopicNames[] = {"series-start", "profile", "heightmap", "series-end", "stats"};

template <class T>
zmq::message_t message_of(const std::vector<T>& v) {
  return zmq::message_t(v.data(), v.size() * sizeof(T));
}

template <class T>
void vector_from(std::string_view part, std::size_t expected, std::vector<T>& out, const char* name) {
  if (part.size() != expected * sizeof(T))
    throw InputError(std::string("wire: array '") + name + "' has " + std::to_string(part.size()) + " bytes (expected " +
                     std::to_string(expected * sizeof(T)) + ")");
  out.resize(expected);
  if (expected) std::memcpy(out.data(), part.data(), part.size());
}

// The row fields of a profile/heightmap header: `meta(i)` gives row i's
// frame id, timestamp, encoder and missing flag.
template <class Meta>
void add_row_fields(nlohmann::json& h, std::uint64_t series_row, std::uint64_t index, int rows, int width, int slots, const Meta& meta) {
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
  const nlohmann::json shape = {rows, slots, width};
  h["parts"] = nlohmann::json::array({{{"name", "z"}, {"dtype", "<f4"}, {"shape", shape}},
                                      {{"name", "intensity"}, {"dtype", "<u2"}, {"shape", shape}},
                                      {{"name", "width"}, {"dtype", "<u2"}, {"shape", shape}},
                                      {{"name", "quality"}, {"dtype", "<u2"}, {"shape", shape}}});
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
  for (int i = 0; i < 5; ++i)
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
}

void RowBlock::append(const ProfileSpan& p, int first, int count, const ProfileMapping& mapping, std::uint64_t series_row_of_first) {
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

nlohmann::json calibration_json(const LinearCalibration& c) {
  return {{"enabled", c.enabled}, {"unit", c.unit()},         {"x_scale", c.x_scale}, {"x_offset", c.x_offset},
          {"y_scale", c.y_scale}, {"y_offset", c.y_offset},   {"z_scale", c.z_scale}, {"z_offset", c.z_offset},
          {"y_from_encoder", c.y_from_encoder}};
}

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

nlohmann::json sheet_calibration_json(const AppliedCalibration& c) {
  const SheetOfLightModel& m = c.model;
  return {{"model", m.kind == SheetOfLightModel::Kind::Linear ? "linear" : "sheet-of-light"},
          {"id", c.id},
          {"file", c.file},
          {"file_fnv1a", c.file_sha},
          {"unit", m.unit},
          {"roi_offset", {c.roi_x, c.roi_y}},
          {"y_source", m.y_from_encoder ? "encoder" : "frame"},
          {"y_step_mm", m.y_step},
          {"y_offset_mm", m.y_offset},
          {"centre", {m.cu, m.cv}},
          {"scale", m.scale},
          {"distortion", std::vector<double>(m.distortion, m.distortion + sol::kDistortionCount)},
          {"homography", std::vector<double>(m.homography, m.homography + 9)},
          {"skew_about_x_deg", m.skew_about_x_deg},
          {"skew_about_z_deg", m.skew_about_z_deg}};
}

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
    c->roi_x = j.at("roi_offset").at(0).get<int>();
    c->roi_y = j.at("roi_offset").at(1).get<int>();
    m.y_from_encoder = j.value("y_source", std::string("frame")) == "encoder";
    m.y_step = j.at("y_step_mm").get<double>();
    m.y_offset = j.value("y_offset_mm", 0.0);
    m.cu = j.at("centre").at(0).get<double>();
    m.cv = j.at("centre").at(1).get<double>();
    m.scale = j.at("scale").get<double>();
    const auto d = j.at("distortion").get<std::vector<double>>();
    const auto h = j.at("homography").get<std::vector<double>>();
    if (d.size() != sol::kDistortionCount || h.size() != 9 || !(m.scale > 0)) return nullptr;
    for (int i = 0; i < sol::kDistortionCount; ++i) m.distortion[i] = d[i];
    for (int i = 0; i < 9; ++i) m.homography[i] = h[i];
    m.skew_about_x_deg = j.value("skew_about_x_deg", 0.0);
    m.skew_about_z_deg = j.value("skew_about_z_deg", 0.0);
    return c;
  } catch (const nlohmann::json::exception&) {
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
                    std::uint64_t series_row_of_first) {
  add_row_fields(h, series_row_of_first, p.index(first), count, p.width, p.slots, [&](int i) {
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
  m.parts.reserve(6);
  m.parts.push_back(text_message(topic_name(t)));
  m.parts.push_back(text_message(h.dump()));
  m.parts.push_back(std::move(z));
  m.parts.push_back(std::move(intensity));
  m.parts.push_back(std::move(width));
  m.parts.push_back(std::move(quality));
  return m;
}

Message encode_rows(Topic t, nlohmann::json h, const RowBlock& r) {
  add_row_fields(h, r.series_row, r.index, r.rows, r.width, r.slots,
                 [&](int i) { return RowMeta{r.frame_ids[i], r.timestamps_ns[i], r.encoder[i], r.missing[i] != 0}; });
  Message m;
  m.parts.reserve(6);
  m.parts.push_back(text_message(topic_name(t)));
  m.parts.push_back(text_message(h.dump()));
  m.parts.push_back(message_of(r.z));
  m.parts.push_back(message_of(r.intensity));
  m.parts.push_back(message_of(r.stripe_width));
  m.parts.push_back(message_of(r.quality));
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
Decoded decode_parts(const std::vector<std::string_view>& parts) {
  if (parts.size() < 2) throw InputError("wire: a message has " + std::to_string(parts.size()) + " parts (expected at least 2: topic, header)");
  Decoded d;
  const std::string topic_text(parts[0].substr(0, 40));
  const auto topic = parse_topic(std::string(parts[0]));
  if (!topic) throw InputError("wire: unknown topic '" + topic_text + "'");
  d.topic = *topic;
  try {
    d.header = nlohmann::json::parse(parts[1]);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(std::string("wire: the header is not JSON (") + e.what() + ")");
  }
  if (!d.header.is_object()) throw InputError("wire: the header is not a JSON object");
  const std::string ht = d.header.value("htype", "");
  const std::string prefix = std::string("stripeline-") + topic_name(d.topic) + "-";
  if (ht.rfind(prefix, 0) != 0) throw InputError("wire: htype '" + ht + "' does not match topic '" + topic_text + "'");
  const std::string version = ht.substr(prefix.size());
  if (version.substr(0, version.find('.')) != std::to_string(kFormatMajor))
    throw InputError("wire: htype '" + ht + "' has an unsupported major version (expected " + std::to_string(kFormatMajor) + ".x)");
  try {
    d.series = d.header.at("series").get<std::string>();
    d.seq = d.header.at("seq").get<std::uint64_t>();
    if (d.topic != Topic::Profile && d.topic != Topic::Heightmap) return d;
    RowBlock r;
    r.rows = d.header.at("rows").get<int>();
    r.width = d.header.at("width").get<int>();
    r.slots = d.header.at("slots").get<int>();
    r.series_row = d.header.at("series_row").get<std::uint64_t>();
    r.index = d.header.at("index").get<std::uint64_t>();
    if (r.rows < 0 || r.width < 0 || r.slots < 1 || r.width > kMaxWidth || r.slots > kMaxFrameHeight)
      throw InputError("wire: rows/width/slots out of range");
    r.frame_ids = d.header.at("frame_ids").get<std::vector<std::uint64_t>>();
    r.timestamps_ns = d.header.at("timestamps_ns").get<std::vector<std::int64_t>>();
    for (const auto& e : d.header.at("encoder")) r.encoder.push_back(e.is_null() ? std::nullopt : std::optional<std::int64_t>(e.get<std::int64_t>()));
    if (r.frame_ids.size() != static_cast<std::size_t>(r.rows) || r.timestamps_ns.size() != r.frame_ids.size() ||
        r.encoder.size() != r.frame_ids.size())
      throw InputError("wire: per-row lists do not have 'rows' entries");
    r.missing.assign(r.rows, 0);
    for (const auto& m : d.header.value("missing_rows", nlohmann::json::array())) {
      const int i = m.get<int>();
      if (i >= 0 && i < r.rows) r.missing[i] = 1;
    }
    // 1.0 senders have no quality part (5 parts); 1.1 adds it (6).
    if (parts.size() != 5 && parts.size() != 6)
      throw InputError("wire: a " + topic_text + " message has " + std::to_string(parts.size()) + " parts (expected 5 or 6)");
    const std::size_t n = static_cast<std::size_t>(r.rows) * r.slots * r.width;
    vector_from(parts[2], n, r.z, "z");
    vector_from(parts[3], n, r.intensity, "intensity");
    vector_from(parts[4], n, r.stripe_width, "width");
    if (parts.size() == 6)
      vector_from(parts[5], n, r.quality, "quality");
    else
      r.quality.assign(n, 0);
    d.calibration = calibration_from_json(d.header.value("calibration", nlohmann::json::object()));
    d.rows = std::move(r);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(std::string("wire: header field missing or of the wrong type (") + e.what() + ")");
  }
  return d;
}
}  // namespace

std::optional<Gap> GapTracker::observe(const std::string& series, std::uint64_t seq) {
  ++messages_;
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
