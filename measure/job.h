#pragma once
// A measurement job (docs/measure.md, "Job files"): part detection settings
// and the tools, their regions and limits, read from TOML. Every key is
// checked: a bad key or value is one InputError line naming the file and the
// key ("job.toml: tool[2].limits.gap: expected [min, max]"); an unknown key
// is an error too. Immutable once loaded; shared read-only.
#include <filesystem>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace stripeline::measure {

enum class DetectionMode { Continuous, FixedLength, Encoder };
enum class ReferenceKind { Fixed, Belt };

struct DetectionSettings {
  DetectionMode mode = DetectionMode::Continuous;
  ReferenceKind reference = ReferenceKind::Fixed;
  double reference_z = 0.0;   // fixed reference, and the belt's starting guess
  double threshold = 0.5;     // height above the reference that is a part
  int min_points = 5;         // points above the threshold for a row to be a part's
  double min_length = 2.0;    // shorter runs of part rows are noise
  double gap_length = 2.0;    // this much without part rows ends a part
  double max_length = 1000.0; // a part this long is cut (bounds memory)
  double length = 0.0;        // fixed-length and encoder modes: the part's length
  double pitch = 0.0;         // encoder mode: a part starts every pitch along the motion axis ...
  double start = 0.0;         // ... from this position
  double x_min = -std::numeric_limits<double>::infinity(), x_max = std::numeric_limits<double>::infinity();  // where parts are looked for
};

// A rectangle of the part: X in [x0, x1], Y in [y0, y1], relative to its
// anchor: "part" (X from the part's box x_min, Y from its first row),
// "scan" (the scan's coordinates), or the name of an earlier edge or groove
// tool (X from the position it found, Y from the part's first row).
struct Region {
  std::string anchor = "part";
  double x0 = 0, x1 = 0;
  double y0 = -std::numeric_limits<double>::infinity(), y1 = std::numeric_limits<double>::infinity();
  bool given = false;
};

enum class ToolKind { Height, Step, GapFlush, Edge, Groove, Volume, Flatness, RowStep, RowWidth };
const char* to_string(ToolKind k);

struct ToolSpec {
  std::string name;
  ToolKind kind = ToolKind::Height;
  Region region, a, b;         // which are used: per kind (docs/measure.md)
  double level = 0.0;          // edge, groove, row_width: height above the reference; volume: the area's (default: the detection threshold)
  bool rising = true;          // edge: rising or falling, scanning toward +X
  double edge_depth = 0.5;     // gap_flush: edges where a surface drops by this much
  bool below = false;          // volume: below the reference instead of above
  double max_spacing = 2.0;    // points farther apart in X are not joined (measure/geometry.h Joining); volume: infinity unless given
  std::map<std::string, std::pair<double, double>> limits;  // value -> [min, max]
};

struct Job {
  std::string name;
  std::string file;             // where it came from
  std::string units = "mm";     // what the job's numbers are in: "mm" (a calibrated scan) or "px"
  DetectionSettings detection;
  std::vector<ToolSpec> tools;
};

// InputError (one line, file and key) for anything wrong.
Job load_job(const std::filesystem::path& path);
Job parse_job(const std::string& text, const std::string& origin);

// The values a tool kind gives, in order (docs/measure.md).
const std::vector<std::string>& tool_values(ToolKind k);

}  // namespace stripeline::measure
