#include "pipeline/wire_format.h"

#include <bit>
#include <chrono>
#include <cstring>
#include <random>

#include "core/errors.h"
#include "core/fixed_point.h"

namespace stripeline::wire {

static_assert(std::endian::native == std::endian::little,
              "the wire format is little-endian; a big-endian host needs byte swaps in encode_rows/decode");

namespace {
constexpr const char* kTopicNames[] = {"series-start", "profile", "heightmap", "series-end", "stats"};

template <class T>
std::string bytes_of(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

template <class T>
void vector_from(const std::string& part, std::size_t expected, std::vector<T>& out, const char* name) {
  if (part.size() != expected * sizeof(T))
    throw InputError(std::string("wire: array '") + name + "' has " + std::to_string(part.size()) + " bytes (expected " +
                     std::to_string(expected * sizeof(T)) + ")");
  out.resize(expected);
  if (expected) std::memcpy(out.data(), part.data(), part.size());
}
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
  primary.clear();
}

void RowBlock::append(const Batch& batch, const ProfileBatch& p, int first, int count, const LinearCalibration& cal,
                      std::uint64_t series_row_of_first) {
  if (rows == 0) {
    series_row = series_row_of_first;
    index = p.first_index + static_cast<std::uint64_t>(first);
    width = p.width;
    slots = p.slots;
  }
  const std::size_t per_row = static_cast<std::size_t>(p.slots) * p.width;
  for (int f = first; f < first + count; ++f) {
    const FrameMeta& m = batch.meta[f];
    frame_ids.push_back(m.frame_id);
    timestamps_ns.push_back(m.timestamp_ns);
    encoder.push_back(m.has_encoder ? std::optional<std::int64_t>(m.encoder) : std::nullopt);
    missing.push_back(m.missing ? 1 : 0);
    const std::size_t base = p.slot_index(f, 0, 0);
    z.resize(z.size() + per_row);
    float* zo = z.data() + z.size() - per_row;
    for (int s = 0; s < p.slots; ++s)
      for (int x = 0; x < p.width; ++x) {
        const std::size_t i = base + static_cast<std::size_t>(s) * p.width + x;
        const bool filled = s < p.peaks(f, x);
        const float row = filled ? position_to_row(p.position[i]) : std::numeric_limits<float>::quiet_NaN();
        zo[static_cast<std::size_t>(s) * p.width + x] = cal.enabled && filled ? static_cast<float>(cal.z(row)) : row;
      }
    if (keep_primary)
      for (int x = 0; x < p.width; ++x) primary.push_back(p.peaks(f, x) > 0 ? p.position[base + x] : kNoPeak);
    intensity.insert(intensity.end(), p.intensity + base, p.intensity + base + per_row);
    stripe_width.insert(stripe_width.end(), p.stripe_width + base, p.stripe_width + base + per_row);
    // Slots beyond the peaks found carry whatever the processor left: zero them.
    for (int s = 0; s < p.slots; ++s)
      for (int x = 0; x < p.width; ++x)
        if (s >= p.peaks(f, x)) {
          const std::size_t o = intensity.size() - per_row + static_cast<std::size_t>(s) * p.width + x;
          intensity[o] = 0;
          stripe_width[o] = 0;
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

std::size_t Encoded::bytes() const {
  std::size_t n = 0;
  for (const auto& p : parts) n += p.size();
  return n;
}

nlohmann::json base_header(Topic t, const std::string& series, std::uint64_t seq) {
  return {{"htype", htype(t)}, {"series", series}, {"seq", seq}, {"time_ns", unix_time_ns()}};
}

Encoded encode_control(Topic t, const nlohmann::json& header) {
  Encoded e;
  e.parts.emplace_back(topic_name(t));
  e.parts.push_back(header.dump());
  return e;
}

Encoded encode_rows(Topic t, nlohmann::json h, const RowBlock& r) {
  h["series_row"] = r.series_row;
  h["index"] = r.index;
  h["frame"] = r.frame_ids.empty() ? 0 : r.frame_ids.front();
  h["rows"] = r.rows;
  h["width"] = r.width;
  h["slots"] = r.slots;
  h["frame_ids"] = r.frame_ids;
  h["timestamps_ns"] = r.timestamps_ns;
  nlohmann::json enc = nlohmann::json::array();
  for (const auto& e : r.encoder) enc.push_back(e ? nlohmann::json(*e) : nlohmann::json(nullptr));
  h["encoder"] = std::move(enc);
  nlohmann::json missing = nlohmann::json::array();
  for (int i = 0; i < r.rows; ++i)
    if (r.missing[i]) missing.push_back(i);
  h["missing_rows"] = std::move(missing);
  const nlohmann::json shape = {r.rows, r.slots, r.width};
  h["parts"] = nlohmann::json::array({{{"name", "z"}, {"dtype", "<f4"}, {"shape", shape}},
                                      {{"name", "intensity"}, {"dtype", "<u2"}, {"shape", shape}},
                                      {{"name", "width"}, {"dtype", "<u2"}, {"shape", shape}}});
  Encoded e;
  e.parts.reserve(5);
  e.parts.emplace_back(topic_name(t));
  e.parts.push_back(h.dump());
  e.parts.push_back(bytes_of(r.z));
  e.parts.push_back(bytes_of(r.intensity));
  e.parts.push_back(bytes_of(r.stripe_width));
  return e;
}

Decoded decode(const std::vector<std::string>& parts) {
  if (parts.size() < 2) throw InputError("wire: a message has " + std::to_string(parts.size()) + " parts (expected at least 2: topic, header)");
  Decoded d;
  const auto topic = parse_topic(parts[0]);
  if (!topic) throw InputError("wire: unknown topic '" + parts[0].substr(0, 40) + "'");
  d.topic = *topic;
  try {
    d.header = nlohmann::json::parse(parts[1]);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(std::string("wire: the header is not JSON (") + e.what() + ")");
  }
  if (!d.header.is_object()) throw InputError("wire: the header is not a JSON object");
  const std::string ht = d.header.value("htype", "");
  const std::string prefix = std::string("stripeline-") + topic_name(d.topic) + "-";
  if (ht.rfind(prefix, 0) != 0) throw InputError("wire: htype '" + ht + "' does not match topic '" + parts[0] + "'");
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
    if (parts.size() != 5) throw InputError("wire: a " + parts[0] + " message has " + std::to_string(parts.size()) + " parts (expected 5)");
    const std::size_t n = static_cast<std::size_t>(r.rows) * r.slots * r.width;
    vector_from(parts[2], n, r.z, "z");
    vector_from(parts[3], n, r.intensity, "intensity");
    vector_from(parts[4], n, r.stripe_width, "width");
    d.calibration = calibration_from_json(d.header.value("calibration", nlohmann::json::object()));
    d.rows = std::move(r);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(std::string("wire: header field missing or of the wrong type (") + e.what() + ")");
  }
  return d;
}

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
