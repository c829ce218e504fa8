// `stripeline calibrate RECORDING -H FRAME_HEIGHT --target TARGET.toml --out calibration.toml`:
// fit the sheet-of-light model to a recording of a known target
// (docs/calibration.md) and write the calibration file and, optionally, the
// JSON report. Exit 2 when the target cannot be fitted.
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>

#include "acquisition/file_source.h"
#include "calibration/calibrate.h"
#include "core/errors.h"
#include "io/atomic_file.h"
#include "tools/commands.h"
#include "tools/setting_flags.h"

namespace stripeline::tools {

namespace {

// "X,Y" (or "WxH" with sep 'x') -> two non-negative integers, else InputError naming the flag.
void parse_pair(const std::string& text, char sep, const char* flag, const char* expected, int& a, int& b) {
  const auto at = text.find(sep);
  std::size_t used_a = 0, used_b = 0;
  try {
    if (at == std::string::npos) throw std::invalid_argument("no separator");
    const std::string sa = text.substr(0, at), sb = text.substr(at + 1);
    a = std::stoi(sa, &used_a);
    b = std::stoi(sb, &used_b);
    if (used_a != sa.size() || used_b != sb.size() || a < 0 || b < 0) throw std::invalid_argument("junk");
  } catch (const std::exception&) {
    throw InputError(std::string(flag) + " '" + text + "' is not understood (expected " + expected + ")");
  }
}

}  // namespace

Subcommand add_calibrate(CLI::App& app) {
  auto* sub = app.add_subcommand("calibrate", "Fit the sheet-of-light calibration (pixels -> millimetres) to a recording of a known target");
  struct Flags {
    std::string input, target, out, report, roi_offset = "0,0", sensor;
    int frame_height = 0, raw_width = 0, raw_depth = 8, column_step = 1;
    double y_step = 1.0, y_per_tick = 0.0;
    bool quiet = false;
    SettingFlags processing;  // --pixel-bits
  };
  auto f = std::make_shared<Flags>();
  sub->add_option("recording", f->input, "Recorded frames of the target, concatenated vertically (any format replay reads)")->required();
  sub->add_option("-H,--frame-height", f->frame_height, "Rows per frame")->required();
  sub->add_option("--target", f->target, "The target's cross-section (TOML, see configs/targets/)")->required();
  sub->add_option("-o,--out", f->out, "Calibration file to write (TOML)")->required();
  sub->add_option("--report", f->report, "Also write the fit's report here (JSON)");
  sub->add_option("--roi-offset", f->roi_offset, "The recording's ROI offset on the sensor, X,Y pixels (default 0,0)");
  sub->add_option("--sensor", f->sensor, "The full sensor's size WxH; the distortion centre is its centre (default: the ROI's)");
  sub->add_option("--y-step", f->y_step, "Motion per frame in mm, written into the file (Y = frame x step)")->capture_default_str();
  sub->add_option("--y-per-tick", f->y_per_tick, "Motion per encoder count in mm: Y from the encoder instead of the frame index");
  sub->add_option("--column-step", f->column_step, "Fit every n-th column's point (faster, a little less precise)")->capture_default_str();
  sub->add_option("--raw-width", f->raw_width, "Raw files: image width");
  sub->add_option("--raw-depth", f->raw_depth, "Raw files: 8 or 16 bits");
  f->processing.add(sub, "processing", {"pixel_bits"});
  sub->add_flag("-q,--quiet", f->quiet, "No summary line");
  return {sub, [f] {
            CalibrateOptions o;
            parse_pair(f->roi_offset, ',', "--roi-offset", "X,Y in whole pixels, e.g. 0,412", o.roi_x, o.roi_y);
            if (!f->sensor.empty()) {
              parse_pair(f->sensor, 'x', "--sensor", "WxH in pixels, e.g. 2048x1088", o.fit.sensor_width, o.fit.sensor_height);
              if (o.fit.sensor_width < 1 || o.fit.sensor_height < 1) throw InputError("--sensor '" + f->sensor + "': the size must be at least 1x1");
            }
            if (!(f->y_step != 0.0 && std::isfinite(f->y_step))) throw InputError("--y-step " + std::to_string(f->y_step) + " (expected mm per frame, not 0)");
            if (!std::isfinite(f->y_per_tick)) throw InputError("--y-per-tick is not a number (expected mm per encoder count)");
            if (f->column_step < 1 || f->column_step > 16)
              throw InputError("--column-step " + std::to_string(f->column_step) + " (expected 1..16)");
            o.y_step_mm = f->y_step;
            o.y_per_tick_mm = f->y_per_tick;
            o.y_from_encoder = f->y_per_tick != 0.0;
            o.fit.origin = f->input;
            o.fit.column_step = f->column_step;
            o.chain = chain_with_flags(f->processing, o.chain);
            const CalibrationTarget target = load_target(f->target);

            FileSourceConfig fc;
            fc.path = f->input;
            fc.frame_height = f->frame_height;
            if (f->raw_width > 0 || io::format_from_path(fc.path) == io::ImageFileFormat::Raw) {
              if (f->raw_depth != 8 && f->raw_depth != 16)
                throw InputError("--raw-depth " + std::to_string(f->raw_depth) + " is not supported (expected 8 or 16)");
              fc.raw = io::RawGeometry{f->raw_width, 0, f->raw_depth == 8 ? PixelFormat::Mono8 : PixelFormat::Mono16};
            }
            FileSource source(fc);
            const BatchLayout layout = source.frame_layout();
            if (o.fit.sensor_width > 0 && (o.roi_x + layout.width > o.fit.sensor_width || o.roi_y + layout.frame_height > o.fit.sensor_height))
              throw InputError("--roi-offset " + f->roi_offset + ": frames of " + std::to_string(layout.width) + "x" +
                               std::to_string(layout.frame_height) + " there reach outside the " + f->sensor + " sensor (expected a ROI inside it)");

            CalibrationRun run = calibrate(source, target, o);
            // The report first: a failed calibration file write leaves neither half-done.
            if (!f->report.empty()) io::write_file_atomically(f->report, run.report.dump(2) + "\n");
            save_calibration(f->out, run.file);
            for (const auto& w : run.fit.warnings) std::fprintf(stderr, "stripeline: warning: %s\n", w.c_str());
            if (!f->quiet)
              std::printf("calibrated %s: residual RMS %.4f px (%.4f mm), max %.3f px; %zu of %llu frames used, %zu rejected%s; wrote %s%s%s\n",
                          f->input.c_str(), run.fit.residual_rms_px, run.fit.residual_rms_mm, run.fit.residual_max_px, run.fit.poses.size(),
                          static_cast<unsigned long long>(run.fit.frames_total), run.fit.rejected.size(),
                          run.fit.rejected.empty() ? "" : " (reasons in the report)", f->out.c_str(), f->report.empty() ? "" : " and ",
                          f->report.c_str());
            return 0;
          }};
}

}  // namespace stripeline::tools
