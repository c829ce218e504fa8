#pragma once
// --calibration FILE, --y-step MM, --roi-offset X,Y: the same flags on run,
// replay, daemon and subscribe, over the config's [calibration] section.
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "app/calibration_setup.h"
#include "app/config.h"
#include "core/errors.h"
#include "pipeline/range_map_sink.h"

namespace stripeline::tools {

inline void add_calibration_flags(CLI::App* sub, std::string& calibration, double& y_step, std::string& roi_offset) {
  sub->add_option("--calibration", calibration, "Sheet-of-light calibration file (stripeline calibrate): points in mm (docs/calibration.md)");
  sub->add_option("--y-step", y_step, "With a calibration: mm per frame along the motion (overrides the file's y_step_mm)");
  sub->add_option("--roi-offset", roi_offset, "With a calibration: X,Y offset of these frames on the sensor, pixels (default 0,0; cameras: read back)");
}

// The calibration flags over the config's [calibration] section.
inline void apply_calibration_flags(Config& c, const std::string& calibration, double y_step, const std::string& roi_offset) {
  if (!calibration.empty()) {
    c.calibration.file = calibration;
    c.pipeline.calibration.enabled = false;  // the file replaces the linear keys
  }
  if (y_step != 0.0) {
    if (!(y_step > 0) || !std::isfinite(y_step))
      throw InputError("--y-step " + std::to_string(y_step) + " is out of range (expected a step > 0 in mm)");
    c.calibration.y_step_mm = y_step;
  }
  if (!roi_offset.empty()) parse_roi_offset(roi_offset, "--roi-offset", c.calibration);
}

// --range-map FILE.tif, --range-codes FILE.png|tif, --range-grid XMIN:XMAX:DX,
// --range-rule, --range-fill N, --range-code OFFSET:SCALE (docs/calibration.md).
struct RangeMapFlags {
  std::string float_tiff, codes, grid, rule = "max", code = "0:0.001";
  int fill = 0;

  void add(CLI::App* sub) {
    sub->add_option("--range-map", float_tiff, "With a calibration: rectified range map, float32 TIFF of Z mm on a uniform X grid (NaN = none)");
    sub->add_option("--range-codes", codes, "With a calibration: the same as 16-bit codes (.png or .tif), Z = OFFSET + code * SCALE");
    sub->add_option("--range-grid", grid, "X_MIN:X_MAX:DX in mm: the range map's columns (required with --range-map/--range-codes)");
    sub->add_option("--range-rule", rule, "Per bin: max, min, mean or nearest (default max)");
    sub->add_option("--range-fill", fill, "Fill gaps of up to N empty bins by linear interpolation (default 0)");
    sub->add_option("--range-code", code, "OFFSET:SCALE of the 16-bit codes in mm (default 0:0.001)");
  }
  // Null when no range map is asked for; InputError naming the flag otherwise.
  std::unique_ptr<RangeMapOptions> options() const {
    if (float_tiff.empty() && codes.empty()) return nullptr;
    auto o = std::make_unique<RangeMapOptions>();
    o->float_tiff = float_tiff;
    o->codes = codes;
    char c1 = 0, c2 = 0, extra = 0;
    if (grid.empty() || std::sscanf(grid.c_str(), "%lf %c %lf %c %lf %c", &o->grid.x_min, &c1, &o->grid.x_max, &c2, &o->grid.dx, &extra) != 5 ||
        c1 != ':' || c2 != ':')
      throw InputError("--range-grid '" + grid + "' is not understood (expected X_MIN:X_MAX:DX in mm, e.g. -50:50:0.05)");
    if (std::sscanf(code.c_str(), "%lf %c %lf %c", &o->z_offset, &c1, &o->z_scale, &extra) != 3 || c1 != ':')
      throw InputError("--range-code '" + code + "' is not understood (expected OFFSET:SCALE in mm, e.g. -5:0.001)");
    o->grid.rule = kernels::parse_rectify_rule(rule);
    o->grid.fill = fill;
    o->validate();
    return o;
  }
};

}  // namespace stripeline::tools
