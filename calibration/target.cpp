#include "calibration/toml_text.h"
#include "calibration/target.h"

#include <toml++/toml.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "core/errors.h"

namespace stripeline {

namespace {

constexpr double kPi = 3.14159265358979323846;

std::string num(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

[[noreturn]] void fail(const std::string& origin, const std::string& key, const std::string& problem) {
  throw InputError(origin + ": " + key + ": " + problem);
}

double cross(const PlanePoint& a, const PlanePoint& b, const PlanePoint& c) {
  return (b.x - a.x) * (c.z - b.z) - (b.z - a.z) * (c.x - b.x);
}

}  // namespace

double CalibrationTarget::height() const {
  double lo = profile.front().z, hi = lo;
  for (const auto& v : profile) {
    lo = std::min(lo, v.z);
    hi = std::max(hi, v.z);
  }
  return hi - lo;
}

int CalibrationTarget::turn(int i) const {
  return cross(profile[i - 1], profile[i], profile[i + 1]) < 0 ? +1 : -1;
}

void validate_target(const CalibrationTarget& t) {
  const std::string& o = t.origin;
  if (t.profile.size() < 3)
    fail(o, "target.profile", std::to_string(t.profile.size()) + " vertices (expected at least 3: two ends and one corner)");
  for (std::size_t i = 0; i < t.profile.size(); ++i) {
    const auto& v = t.profile[i];
    if (!std::isfinite(v.x) || !std::isfinite(v.z) || std::abs(v.x) > 1e4 || std::abs(v.z) > 1e4)
      fail(o, "target.profile[" + std::to_string(i) + "]", std::string("[") + num(v.x) + ", " + num(v.z) + "] (expected finite millimetres, |value| <= 10000)");
    if (i == 0) continue;
    const auto& p = t.profile[i - 1];
    if (!(v.x > p.x))
      fail(o, "target.profile[" + std::to_string(i) + "]",
           "x = " + num(v.x) + " after x = " + num(p.x) + " (expected x strictly increasing: one height per column, no vertical face)");
    const double len = std::hypot(v.x - p.x, v.z - p.z);
    if (len < kMinTargetSegmentMm)
      fail(o, "target.profile[" + std::to_string(i) + "]",
           "segment of " + num(len) + " mm (expected segments of at least " + num(kMinTargetSegmentMm) + " mm)");
  }
  for (std::size_t i = 1; i + 1 < t.profile.size(); ++i) {
    const auto &a = t.profile[i - 1], &b = t.profile[i], &c = t.profile[i + 1];
    const double a1 = std::atan2(b.z - a.z, b.x - a.x), a2 = std::atan2(c.z - b.z, c.x - b.x);
    const double turn_deg = std::abs(a2 - a1) * 180.0 / kPi;
    if (turn_deg < kMinTargetTurnDeg)
      fail(o, "target.profile[" + std::to_string(i) + "]",
           "turns by " + num(turn_deg) + " degrees (expected a corner of at least " + num(kMinTargetTurnDeg) +
               " degrees at every interior vertex: merge collinear segments)");
  }
}

CalibrationTarget parse_target(const std::string& text, const std::string& origin) {
  const toml::table root = parse_toml<InputError>(text, origin);
  for (const auto& [k, v] : root)
    if (k.str() != "target") fail(origin, std::string(k.str()), "unknown section or key (expected [target])");
  const toml::table* t = root["target"].as_table();
  if (!t) fail(origin, "target", "missing (expected a [target] table with unit and profile)");
  for (const auto& [k, v] : *t) {
    const std::string key(k.str());
    if (key != "unit" && key != "profile" && key != "name" && key != "description")
      fail(origin, "target." + key, "unknown key (expected unit, profile, name or description)");
  }

  CalibrationTarget target;
  target.origin = origin;
  target.name = std::filesystem::path(origin).stem().string();
  if (const toml::node* n = t->get("name")) {
    auto s = n->value<std::string>();
    if (!s) fail(origin, "target.name", "expected a string");
    target.name = *s;
  }
  if (const toml::node* n = t->get("description"); n && !n->is_string()) fail(origin, "target.description", "expected a string");

  const toml::node* unit = t->get("unit");
  if (!unit) fail(origin, "target.unit", "missing (expected unit = \"mm\")");
  auto u = unit->value<std::string>();
  if (!u) fail(origin, "target.unit", "expected a string (\"mm\")");
  if (*u != "mm") fail(origin, "target.unit", "\"" + *u + "\" is not supported (expected \"mm\")");

  const toml::node* prof = t->get("profile");
  if (!prof) fail(origin, "target.profile", "missing (expected [[x, z], ...] in mm)");
  const toml::array* arr = prof->as_array();
  if (!arr) fail(origin, "target.profile", "expected an array of [x, z] pairs");
  for (std::size_t i = 0; i < arr->size(); ++i) {
    const toml::array* pair = (*arr)[i].as_array();
    const std::string key = "target.profile[" + std::to_string(i) + "]";
    if (!pair || pair->size() != 2) fail(origin, key, "expected a pair [x, z] of numbers");
    auto x = (*pair)[0].value<double>();
    auto z = (*pair)[1].value<double>();
    if (!x || !z) fail(origin, key, "expected a pair [x, z] of numbers");
    target.profile.push_back({*x, *z});
  }
  validate_target(target);
  return target;
}

CalibrationTarget load_target(const std::filesystem::path& path) {
  return parse_target(read_toml_file(path, "target file"), path.string());
}

}  // namespace stripeline
