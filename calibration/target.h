#pragma once
// A calibration target: its cross-section in the laser plane as a polyline in
// millimetres (configs/targets/*.toml, docs/calibration.md):
//
//   [target]
//   unit = "mm"
//   profile = [[0.0, 0.0], [5.0, 5.0], [10.0, 0.0], [15.0, 5.0]]   # (x, z), x increasing
//
// z is height (toward the sensor). The first vertex is the target's origin;
// the two end vertices are where the target stops (not corners to match);
// every interior vertex is a corner. The target lies in the laser plane with
// its x axis running the way the columns grow.
#include <filesystem>
#include <string>
#include <vector>

#include "core/sheet_of_light.h"

namespace stripeline {

struct CalibrationTarget {
  std::string name;                  // optional [target] name, else the file's stem
  std::string origin;                // where it came from (file name), for messages
  std::vector<PlanePoint> profile; // >= 3 vertices, x strictly increasing

  int segments() const { return static_cast<int>(profile.size()) - 1; }
  int corners() const { return static_cast<int>(profile.size()) - 2; }
  double length() const { return profile.back().x - profile.front().x; }
  double height() const;  // max z - min z
  // Turn at interior vertex i (1..size-2): +1 for a peak (the path turns
  // clockwise, z up), -1 for a valley.
  int turn(int i) const;
};

// Smallest turn at an interior vertex, and shortest segment, that a target may have.
inline constexpr double kMinTargetTurnDeg = 10.0;
inline constexpr double kMinTargetSegmentMm = 0.5;

// Parse and validate a target. Errors are InputError with one line:
// "<origin>: <key>: <problem> (expected ...)".
CalibrationTarget parse_target(const std::string& text, const std::string& origin);
CalibrationTarget load_target(const std::filesystem::path& path);
// Checks a target built in code (same rules and messages as the file).
void validate_target(const CalibrationTarget& target);

}  // namespace stripeline
