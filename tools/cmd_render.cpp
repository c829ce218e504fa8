// stripeline render FILE --out PICTURE.png: a picture of a scan file (height
// map, range map, XYZ TIFF, PLY) with the colour map, axes in the file's unit
// and a colour scale bar, or of a recording's frames (grey, optionally with
// the line a height map records); stripeline report FILE... --out
// report.html: one self-contained page about the scans (app/report_html.h).
// docs/render.md.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "app/report_html.h"
#include "core/errors.h"
#include "io/render.h"
#include "tools/commands.h"

namespace stripeline::tools {
namespace {

void check_extension(const std::string& out, const char* ext, const char* what) {
  if (std::filesystem::path(out).extension() != ext)
    throw InputError(out + ": " + what + " is written as " + ext + " (expected a name ending in " + ext + ")");
}

void parse_range(const std::string& text, double& lo, double& hi) {
  char* end = nullptr;
  lo = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != ':') throw InputError("--range " + text + " (expected LO:HI in the file's unit, e.g. 10:30)");
  const char* rest = end + 1;
  hi = std::strtod(rest, &end);
  if (end == rest || *end != '\0' || !std::isfinite(lo) || !std::isfinite(hi) || !(hi > lo))
    throw InputError("--range " + text + " (expected LO:HI with HI > LO, in the file's unit)");
}

}  // namespace

Subcommand add_render(CLI::App& app) {
  auto* cmd = app.add_subcommand("render", "Draw a scan file (height map, range map, XYZ TIFF, PLY) or a recording's frames as a PNG "
                                           "with a colour map, axes in the file's unit and a scale bar (docs/render.md)");
  struct Flags {
    std::string file, out, range, line;
    bool intensity = false, quiet = false;
    std::int64_t frame = -1;
    int frames = 4, max_size = 2048;
  };
  auto f = std::make_shared<Flags>();
  cmd->add_option("file", f->file, "A file stripeline wrote: height map (.png/.tif), range map, XYZ TIFF, PLY, or a recording")->required();
  cmd->add_option("-o,--out", f->out, "The picture (.png), written atomically")->required();
  cmd->add_option("--range", f->range, "LO:HI: the values at the colour map's ends, in the file's unit (default: the 0.5th and 99.5th percentiles)");
  cmd->add_flag("--intensity", f->intensity, "PLY: draw the points' intensity (grey) instead of their height");
  cmd->add_option("--frame", f->frame, "Recording: draw this frame alone (0-based)");
  cmd->add_option("--frames", f->frames, "Recording: how many frames, spread evenly (default 4)")->check(CLI::Range(1, 64));
  cmd->add_option("--line", f->line, "Recording: a 16-bit height map made from it; its line is drawn over the frames in red");
  cmd->add_option("--max-size", f->max_size, "Largest plot side in pixels; larger grids are averaged in blocks (default 2048)")
      ->check(CLI::Range(64, 16384));
  cmd->add_flag("-q,--quiet", f->quiet, "No summary line");
  return {cmd, [f] {
            check_extension(f->out, ".png", "the picture");
            const auto t0 = std::chrono::steady_clock::now();
            std::string description, what;
            io::Canvas canvas;
            if (io::file_kind(f->file) == "recording") {
              io::RecordingRenderOptions o;
              o.frame = f->frame, o.count = f->frames, o.line = f->line, o.max_width = f->max_size;
              canvas = io::render_recording(f->file, o, &description);
              what = "recording frames, px";
            } else {
              const io::ScanFields scan = io::load_scan(f->file);
              if (f->intensity && !scan.intensity) throw InputError(f->file + ": records no intensity (expected a PLY for --intensity)");
              const io::Field& field = f->intensity ? *scan.intensity : scan.height;
              io::RenderOptions o;
              if (!f->range.empty()) parse_range(f->range, o.lo, o.hi);
              o.palette = f->intensity ? io::Palette::Grey : io::Palette::Height;
              o.max_width = o.max_height = f->max_size;
              o.title = std::filesystem::path(f->file).filename().string() + ": " + field.value_name + " [" + field.value_unit + "]";
              io::RenderLayout layout;
              canvas = io::render_field(field, o, &layout);
              description = io::render_description(f->file, scan.kind, field, layout);
              what = scan.kind + ", " + scan.unit_note;
            }
            io::write_png(f->out, canvas, description);
            const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
            if (!f->quiet) std::printf("%s: %dx%d picture of %s (%s), %.0f ms\n", f->out.c_str(), canvas.width, canvas.height, f->file.c_str(), what.c_str(), ms);
            return 0;
          }};
}

Subcommand add_report(CLI::App& app) {
  auto* cmd = app.add_subcommand("report", "One self-contained HTML page about scan files: height map, intensity, profiles, histogram, "
                                           "where no point was found, every setting recorded (docs/render.md)");
  struct Flags {
    std::vector<std::string> files;
    std::string out = "report.html";
    bool quiet = false;
  };
  auto f = std::make_shared<Flags>();
  cmd->add_option("files", f->files, "Scan files stripeline wrote (PLY, height map, range map, XYZ TIFF): one section each")->required();
  cmd->add_option("-o,--out", f->out, "The page (.html, default report.html), written atomically");
  cmd->add_flag("-q,--quiet", f->quiet, "Only the page's path");
  return {cmd, [f] {
            check_extension(f->out, ".html", "the report");
            const auto t0 = std::chrono::steady_clock::now();
            const std::vector<std::filesystem::path> files(f->files.begin(), f->files.end());
            write_report(files, f->out);
            const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
            const std::string abs = std::filesystem::absolute(f->out).lexically_normal().string();
            if (f->quiet) {
              std::printf("%s\n", abs.c_str());
            } else {
              std::printf("%s: report of %zu file%s (%.0f ms); open it with: xdg-open %s\n", abs.c_str(), files.size(),
                          files.size() == 1 ? "" : "s", ms, abs.c_str());
            }
            return 0;
          }};
}

}  // namespace stripeline::tools
