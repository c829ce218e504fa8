#include <limits>
#include "measure/job.h"

#include <fstream>
#include <set>
#include <sstream>

#include "calibration/toml_table.h"
#include "core/errors.h"

namespace stripeline::measure {

namespace {

using toml_table::Table;

struct KindName {
  ToolKind kind;
  const char* name;
};
constexpr KindName kKinds[] = {{ToolKind::Height, "height"},     {ToolKind::Step, "step"},         {ToolKind::GapFlush, "gap_flush"},
                               {ToolKind::Edge, "edge"},         {ToolKind::Groove, "groove"},     {ToolKind::Volume, "volume"},
                               {ToolKind::Flatness, "flatness"}, {ToolKind::RowStep, "row_step"}, {ToolKind::RowWidth, "row_width"}};

// The nested table `key` of t (marked read in `parent`), or null when absent.
const toml::table* sub_table(Table& parent, const toml::table* t, const char* key) {
  const toml::node* n = parent.node(key, false);
  if (!n) return nullptr;
  if (!n->is_table()) parent.fail(key, "expected a table");
  (void)t;
  return n->as_table();
}

Region read_region(Table& parent, const toml::table* t, const char* key, const std::string& name, const std::string& origin, bool required) {
  const toml::table* r = sub_table(parent, t, key);
  Region out;
  if (!r) {
    if (required) parent.fail(key, "missing (expected a region { anchor = \"part\", x = [x0, x1], y = [y0, y1] })");
    return out;
  }
  Table rt(r, name + "." + key, origin);
  out.given = true;
  out.anchor = rt.string("anchor", false, "part");
  if (out.anchor.empty()) rt.fail("anchor", "empty (expected \"part\", \"scan\" or an earlier edge or groove tool's name)");
  const std::vector<double> x = rt.numbers("x", true, 2);
  out.x0 = x[0], out.x1 = x[1];
  if (!(out.x1 > out.x0)) rt.fail("x", "[" + toml_table::shown(x[0]) + ", " + toml_table::shown(x[1]) + "] (expected x0 < x1)");
  if (rt.has("y")) {
    const std::vector<double> y = rt.numbers("y", true, 2);
    out.y0 = y[0], out.y1 = y[1];
    if (!(out.y1 > out.y0)) rt.fail("y", "[" + toml_table::shown(y[0]) + ", " + toml_table::shown(y[1]) + "] (expected y0 < y1)");
  }
  rt.finish();
  return out;
}

DetectionSettings read_detection(const toml::table* t, const std::string& origin) {
  Table d(t, "detection", origin);
  DetectionSettings s;
  const std::string mode = d.string("mode", false, "continuous");
  if (mode == "continuous") s.mode = DetectionMode::Continuous;
  else if (mode == "fixed-length") s.mode = DetectionMode::FixedLength;
  else if (mode == "encoder") s.mode = DetectionMode::Encoder;
  else d.fail("mode", "'" + mode + "' (expected continuous, fixed-length or encoder)");
  const std::string ref = d.string("reference", false, "fixed");
  if (ref == "fixed") s.reference = ReferenceKind::Fixed;
  else if (ref == "belt") s.reference = ReferenceKind::Belt;
  else d.fail("reference", "'" + ref + "' (expected fixed or belt)");
  s.reference_z = d.number("reference_z", false, s.reference_z);
  auto positive = [&](const char* key, double fallback) {
    const double v = d.number(key, false, fallback);
    if (!(v > 0)) d.fail(key, toml_table::shown(v) + " (expected a number > 0)");
    return v;
  };
  s.threshold = positive("threshold", s.threshold);
  const std::int64_t mp = d.integer("min_points", false, s.min_points);
  if (mp < 1 || mp > 1000000) d.fail("min_points", std::to_string(mp) + " (expected 1..1000000)");
  s.min_points = static_cast<int>(mp);
  s.min_length = d.number("min_length", false, s.min_length);
  if (!(s.min_length >= 0)) d.fail("min_length", toml_table::shown(s.min_length) + " (expected >= 0)");
  s.gap_length = positive("gap_length", s.gap_length);
  s.max_length = positive("max_length", s.max_length);
  if (s.mode != DetectionMode::Continuous) {
    if (!d.has("length")) d.fail("length", "missing (mode " + mode + " needs the part's length)");
    s.length = positive("length", 0.0);
  }
  if (s.mode == DetectionMode::Continuous && d.has("length")) d.fail("length", "only for mode fixed-length or encoder");
  if (s.mode == DetectionMode::Encoder) {
    if (!d.has("pitch")) d.fail("pitch", "missing (mode encoder needs the pitch between parts)");
    s.pitch = positive("pitch", 0.0);
    s.start = d.number("start", false, 0.0);
    if (s.length > s.pitch) d.fail("length", toml_table::shown(s.length) + " (expected at most pitch, " + toml_table::shown(s.pitch) + ")");
  } else {
    if (d.has("pitch")) d.fail("pitch", "only for mode encoder");
    if (d.has("start")) d.fail("start", "only for mode encoder");
  }
  if (s.length > s.max_length) d.fail("length", toml_table::shown(s.length) + " (expected at most max_length)");
  if (d.has("x")) {
    const std::vector<double> x = d.numbers("x", true, 2);
    if (!(x[1] > x[0])) d.fail("x", "expected [x_min, x_max] with x_min < x_max");
    s.x_min = x[0], s.x_max = x[1];
  }
  d.finish();
  return s;
}

ToolKind kind_of(Table& t, const std::string& type) {
  for (const auto& k : kKinds)
    if (type == k.name) return k.kind;
  std::string all;
  for (const auto& k : kKinds) all += std::string(all.empty() ? "" : ", ") + k.name;
  t.fail("type", "'" + type + "' (expected one of " + all + ")");
}

void read_limits(Table& parent, const toml::table* t, ToolSpec& spec, const std::string& name, const std::string& origin) {
  const toml::table* l = sub_table(parent, t, "limits");
  if (!l) return;
  Table lt(l, name + ".limits", origin);
  const auto& values = tool_values(spec.kind);
  for (const auto& [k, v] : *l) {
    const std::string key(k.str());
    bool known = false;
    std::string all;
    for (const auto& name_ : values) known = known || name_ == key, all += (all.empty() ? "" : ", ") + name_;
    if (!known) lt.fail(key, std::string("not a value of a ") + to_string(spec.kind) + " tool (expected " + all + ")");
    const std::vector<double> mm = lt.numbers(key.c_str(), true, 2);
    if (!(mm[1] >= mm[0])) lt.fail(key, "[" + toml_table::shown(mm[0]) + ", " + toml_table::shown(mm[1]) + "] (expected [min, max], min <= max)");
    spec.limits[key] = {mm[0], mm[1]};
  }
  lt.finish();
}

ToolSpec read_tool(const toml::table* t, std::size_t index, const std::vector<ToolSpec>& earlier, double threshold, const std::string& origin) {
  const std::string name = "tool[" + std::to_string(index) + "]";
  Table tt(t, name, origin);
  ToolSpec s;
  s.name = tt.string("name", true);
  if (s.name.empty() || s.name == "part" || s.name == "scan" || s.name.find_first_of(" ,\"\n") != std::string::npos)
    tt.fail("name", "'" + s.name + "' (expected a word without spaces or commas, not \"part\" or \"scan\")");
  for (const auto& e : earlier)
    if (e.name == s.name) tt.fail("name", "'" + s.name + "' is used by an earlier tool (expected unique names)");
  s.kind = kind_of(tt, tt.string("type", true));
  const ToolKind k = s.kind;
  const bool two = k == ToolKind::Step || k == ToolKind::GapFlush || k == ToolKind::RowStep;
  s.region = read_region(tt, t, "region", name, origin, !two && k != ToolKind::Volume);
  if (two) {
    s.a = read_region(tt, t, "a", name, origin, true);
    s.b = read_region(tt, t, "b", name, origin, true);
  }
  for (const Region* r : {&s.region, &s.a, &s.b}) {
    if (!r->given || r->anchor == "part" || r->anchor == "scan") continue;
    bool found = false;
    for (const auto& e : earlier) found = found || (e.name == r->anchor && (e.kind == ToolKind::Edge || e.kind == ToolKind::Groove));
    if (!found) tt.fail("region", "anchor '" + r->anchor + "' (expected \"part\", \"scan\" or the name of an earlier edge or groove tool)");
  }
  if (k == ToolKind::Edge || k == ToolKind::Groove || k == ToolKind::RowWidth) s.level = tt.number("level", true);
  if (k == ToolKind::Volume) s.level = tt.number("level", false, threshold);  // the area's level
  if (k == ToolKind::Edge) {
    const std::string dir = tt.string("direction", false, "rising");
    if (dir != "rising" && dir != "falling") tt.fail("direction", "'" + dir + "' (expected rising or falling)");
    s.rising = dir == "rising";
  }
  if (k == ToolKind::GapFlush) {
    s.edge_depth = tt.number("edge_depth", false, s.edge_depth);
    if (!(s.edge_depth > 0)) tt.fail("edge_depth", toml_table::shown(s.edge_depth) + " (expected > 0)");
  }
  if (k == ToolKind::Volume) {
    const std::string side = tt.string("side", false, "above");
    if (side != "above" && side != "below") tt.fail("side", "'" + side + "' (expected above or below)");
    s.below = side == "below";
  }
  // A volume joins every hole in its region unless told (docs/measure.md,
  // "Holes in a row"): a hole left out counts as no material at all.
  if (k == ToolKind::Volume) s.max_spacing = std::numeric_limits<double>::infinity();
  s.max_spacing = tt.number("max_spacing", false, s.max_spacing);
  if (!(s.max_spacing > 0)) tt.fail("max_spacing", toml_table::shown(s.max_spacing) + " (expected > 0)");
  read_limits(tt, t, s, name, origin);
  tt.finish();
  return s;
}

}  // namespace

const char* to_string(ToolKind k) {
  for (const auto& n : kKinds)
    if (n.kind == k) return n.name;
  return "?";
}

const std::vector<std::string>& tool_values(ToolKind k) {
  static const std::map<ToolKind, std::vector<std::string>> v = {
      {ToolKind::Height, {"mean", "min", "max"}},       {ToolKind::Step, {"step"}},
      {ToolKind::GapFlush, {"gap", "flush"}},           {ToolKind::Edge, {"x"}},
      {ToolKind::Groove, {"width", "x", "depth"}},      {ToolKind::Volume, {"volume", "area"}},
      {ToolKind::Flatness, {"rms", "max"}},             {ToolKind::RowStep, {"mean", "min", "max"}},
      {ToolKind::RowWidth, {"mean", "min", "max"}}};
  return v.at(k);
}

Job parse_job(const std::string& text, const std::string& origin) {
  toml::table root;
  try {
    root = toml::parse(text, origin);
  } catch (const toml::parse_error& e) {
    std::ostringstream s;
    s << origin << ":" << e.source().begin.line << ": " << e.description();
    throw InputError(s.str());
  }
  Table top(&root, "(file)", origin);
  Job job;
  job.file = origin;
  const toml::table* jt = sub_table(top, &root, "job");
  Table j(jt, "job", origin);
  job.name = j.string("name", false, "");
  job.units = j.string("units", false, "mm");
  if (job.units != "mm" && job.units != "px") j.fail("units", "'" + job.units + "' (expected mm or px)");
  j.finish();
  job.detection = read_detection(sub_table(top, &root, "detection"), origin);
  const toml::node* tools = top.node("tool", false);
  if (tools) {
    const toml::array* a = tools->as_array();
    if (!a || !a->is_array_of_tables()) top.fail("tool", "expected [[tool]] tables");
    for (std::size_t i = 0; i < a->size(); ++i) job.tools.push_back(read_tool((*a)[i].as_table(), i, job.tools, job.detection.threshold, origin));
  }
  if (job.tools.empty()) top.fail("tool", "missing (expected at least one [[tool]])");
  top.finish();
  return job;
}

Job load_job(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path.string() + ": cannot read the job file (expected a TOML job, docs/measure.md)");
  std::ostringstream s;
  s << in.rdbuf();
  return parse_job(s.str(), path.string());
}

}  // namespace stripeline::measure
