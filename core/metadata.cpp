#include "core/metadata.h"

#include <cstdio>
#include <vector>

#include "core/errors.h"

namespace stripeline::metadata {

Json document(std::string_view kind) {
  return Json{{"stripeline", kind}, {"schema", kSchema}, {"software", "stripeline " STRIPELINE_VERSION}};
}

Json scan_document(std::string_view kind, const Scan& s) {
  Json d = document(kind);
  d["source"] = s.source;
  d["method"] = s.method;
  d["width"] = s.width;
  d["frame_height"] = s.frame_height;
  if (s.neighbour_columns > 0) d["neighbour_check"] = {{"columns", s.neighbour_columns}, {"step", s.neighbour_step}};
  if (const auto& m = s.line_model; m.candidates > 0)
    d["line_model"] = {{"candidates", m.candidates}, {"step", m.step}, {"jump_cost", m.jump_cost}, {"width_cost", m.width_cost},
                       {"intensity_cost", m.intensity_cost}, {"segment_cost", m.segment_cost}, {"min_length", m.min_length}, {"line_width", m.line_width}};
  if (s.pixel_bits > 0) {
    d["pixel_bits"] = s.pixel_bits;
    d["pixel_bits_origin"] = s.pixel_bits_origin;
  }
  d["unit"] = s.linear.unit();                           // rows and codes: the linear keys' unit
  d["point_unit"] = s.sheet ? "mm" : s.linear.unit();    // x, y, z of points
  d["calibration"] = calibration(s.linear, s.sheet.get());
  if (s.frames) d[kFrameRangeKey] = frame_range(*s.frames);
  return d;
}

std::string fnv1a_hex(std::string_view bytes) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (const unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

Json frame_range(const FrameRange& r) {
  Json j = {{"start", r.start}, {"end", r.end}, {"of", r.of}};
  if (!r.settings.empty()) j["settings"] = r.settings;
  return j;
}

std::optional<FrameRange> frame_range_of(const Json& d, const std::string& where) {
  const auto it = d.find(kFrameRangeKey);
  if (it == d.end()) return std::nullopt;
  const auto number = [&](const char* key) {
    const auto v = it->find(key);
    if (!it->is_object() || v == it->end() || !v->is_number_unsigned())
      throw InputError(where + ": malformed frame_range " + text(*it) + " (expected {\"start\", \"end\", \"of\"} frame numbers)");
    return v->get<std::uint64_t>();
  };
  FrameRange r{number("start"), number("end"), number("of"), {}};
  if (const auto v = it->find("settings"); v != it->end()) {
    if (!v->is_string()) throw InputError(where + ": malformed frame_range " + text(*it) + " (expected \"settings\": a digest string)");
    r.settings = v->get<std::string>();
  }
  if (r.start >= r.end || r.end > r.of)
    throw InputError(where + ": frame_range " + text(*it) + " is empty or beyond the recording (expected start < end <= of)");
  return r;
}

Json calibration(const LinearCalibration& linear, const AppliedCalibration* sheet) {
  return sheet != nullptr ? sheet_calibration(*sheet) : linear_calibration(linear);
}

Json linear_calibration(const LinearCalibration& c) {
  return {{"model", c.enabled ? "linear-keys" : "none"}, {"enabled", c.enabled}, {"unit", c.unit()},
          {"x_scale", c.x_scale}, {"x_offset", c.x_offset}, {"y_scale", c.y_scale}, {"y_offset", c.y_offset},
          {"z_scale", c.z_scale}, {"z_offset", c.z_offset}, {"y_from_encoder", c.y_from_encoder}};
}

Json sheet_calibration(const AppliedCalibration& c) {
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

std::string text(const Json& j) { return j.dump(-1, ' ', /*ensure_ascii=*/true, Json::error_handler_t::replace); }

std::string pretty(const Json& j) { return j.dump(2, ' ', /*ensure_ascii=*/false, Json::error_handler_t::replace) + "\n"; }

std::string ply_comment(const Json& j) { return std::string(kPlyCommentKey) + text(j); }

Json parse(std::string_view text, const std::string& where) {
  Json j = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw InputError(where + ": the metadata is not JSON (expected a stripeline metadata document, docs/data-model.md)");
  if (!j.is_object()) throw InputError(where + ": the metadata is not a JSON object (expected one with a stripeline key, docs/data-model.md)");
  return j;
}

Json find_document(std::string_view text) {
  if (text.substr(0, kPlyCommentKey.size()) == kPlyCommentKey) text.remove_prefix(kPlyCommentKey.size());
  if (text.empty() || text.front() != '{') return Json();
  Json j = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Json();
  const auto s = j.find("stripeline");
  if (s == j.end()) return Json();
  if (s->is_object()) {  // a recording written before schema 1: {"stripeline": {"frame_height", "frames"}}
    Json d = {{"stripeline", "recording"}, {"schema", 0}};
    for (const auto& [key, value] : s->items()) d[key] = value;
    return d;
  }
  return s->is_string() ? j : Json();
}

}  // namespace stripeline::metadata
