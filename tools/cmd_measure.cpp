// `stripeline measure INPUT --job JOB.toml`: a recording replayed (with its
// calibration: the tools in mm), parts cut out of it and measured by the
// job's tools, per-part records to JSON and CSV (docs/measure.md).
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "app/run_session.h"
#include "app/settings.h"
#include "core/errors.h"
#include "measure/job.h"
#include "measure/measure_sink.h"
#include "measure/part_files.h"
#include "measure/records.h"
#include "measure/scan_files.h"
#include "tools/calibration_flags.h"
#include "tools/setting_flags.h"
#include "tools/commands.h"

namespace stripeline::tools {

namespace {

struct MeasureFlags {
  std::string input, job, json, csv, calibration, roi_offset, parts_dir;
  double part_dx = 0.1;
  double y_step = 0.0;
  int frame_height = 0, queue = 0;
  bool quiet = false;
};

// The per-part line on standard output.
void print_part(const measure::PartResult& r) {
  std::printf("part %llu: %s, y %.3f..%.3f %s", static_cast<unsigned long long>(r.part), measure::to_string(r.decision), r.y_first, r.y_last,
              r.units.c_str());
  for (const auto& t : r.tools)
    for (const auto& [k, v] : t.values) std::printf(", %s.%s %.6g", t.name.c_str(), k.c_str(), v);
  std::printf("\n");
}

// Checks --parts-dir and --part-dx; their options.
measure::PartFileOptions part_file_options(const MeasureFlags& f) {
  if (!f.parts_dir.empty() && !std::filesystem::is_directory(f.parts_dir))
    throw InputError("--parts-dir " + f.parts_dir + ": not a directory (expected an existing directory for the parts' files)");
  if (!(f.part_dx > 0) || !std::isfinite(f.part_dx)) throw InputError("--part-dx " + std::to_string(f.part_dx) + " (expected a bin width > 0)");
  return {f.parts_dir, f.part_dx};
}

// A range map or a calibrated PLY (no -H): read, cut, measured on this thread.
int measure_file(const MeasureFlags& f, const measure::Job& job) {
  if (!f.calibration.empty() || !f.roi_offset.empty() || f.y_step != 0.0 || f.queue != 0)
    throw InputError("--calibration, --roi-offset, --y-step and --queue are for recordings (with -H); a range map or a calibrated PLY is already in mm");
  const measure::PartFileOptions part_files = part_file_options(f);
  measure::ResultFiles files(job, f.json, f.csv);
  std::uint64_t passed = 0, failed = 0;
  const auto on_part = [&](const measure::PartResult& r, const measure::Part& part) {
    files.add(r);
    measure::write_part_files(part, part_files);
    passed += r.decision == measure::Decision::Pass;
    failed += r.decision == measure::Decision::Fail;
    if (!f.quiet) print_part(r);
  };
  const std::string ext = std::filesystem::path(f.input).extension().string();
  const std::uint64_t rows =
      ext == ".ply" || ext == ".PLY" ? measure::measure_ply(f.input, job, on_part) : measure::measure_range_map(f.input, job, on_part);
  files.finish("mm");
  std::printf("%zu parts (%llu passed, %llu failed) in %llu rows, units mm\n", files.results().size(), static_cast<unsigned long long>(passed),
              static_cast<unsigned long long>(failed), static_cast<unsigned long long>(rows));
  return 0;
}

}  // namespace

Subcommand add_measure(CLI::App& app) {
  auto* sub = app.add_subcommand("measure", "Cut parts out of a replayed scan and measure them with a job's tools (docs/measure.md)");
  auto f = std::make_shared<MeasureFlags>();
  sub->add_option("input", f->input, "Recorded image: frames concatenated vertically (as replay reads it, with -H), or, without -H, a range "
                                     "map (replay --range-map) or a calibrated PLY (replay --calibration --ply)")->required();
  sub->add_option("--job", f->job, "Measurement job (TOML): detection, tools, regions, limits")->required();
  sub->add_option("-H,--frame-height", f->frame_height, "Rows per frame of a recording");
  sub->add_option("--json", f->json, "Per-part records as one JSON document (written when the scan ends)");
  sub->add_option("--csv", f->csv, "Per-part records as CSV, one line per part");
  sub->add_option("--parts-dir", f->parts_dir, "Also each part's points (part-NNNNNN.ply) and range map (part-NNNNNN.tif) in this directory");
  sub->add_option("--part-dx", f->part_dx, "With --parts-dir: the range maps' bin width (default 0.1)");
  sub->add_flag("-q,--quiet", f->quiet, "No line per part on standard output");
  sub->add_option("--queue", f->queue,
                  "Measure on a worker thread fed by a queue of N parts, as live (a part finding it full is dropped and counted); 0: on the "
                  "sink thread, every part");
  add_calibration_flags(sub, f->calibration, f->y_step, f->roi_offset);
  return {sub, [f] {
            const auto job = std::make_shared<const measure::Job>(measure::load_job(f->job));
            if (f->frame_height == 0) return measure_file(*f, *job);
            Config c = default_config();
            c.output = OutputConfig{};
            c.output.dir = "";
            c.output.ply = c.output.heightmap = c.output.preview = c.output.summary = c.output.xyz_tiff = "";
            apply_calibration_flags(c, f->calibration, f->y_step, f->roi_offset);
            apply_setting_flags(c, {{&setting_at("source", "kind"), "file"},
                                     {&setting_at("source", "path"), f->input},
                                     {&setting_at("source", "frame_height"), std::to_string(f->frame_height)},
                                     {&setting_at("source", "loops"), "1"}});
            RunSession session(c);
            std::vector<ExtraOutput> extra;
            if (!f->json.empty()) extra.emplace_back("results", f->json);
            if (!f->csv.empty()) extra.emplace_back("results", f->csv);
            session.check_outputs(extra);
            session.open_source();
            session.apply_calibration();
            const measure::PartFileOptions part_files = part_file_options(*f);
            measure::ResultFiles files(*job, f->json, f->csv);
            std::uint64_t passed = 0, failed = 0;
            measure::MeasureSink sink(job, [&](const measure::PartResult& r, const measure::Part& part) {
              files.add(r);
              measure::write_part_files(part, part_files);
              passed += r.decision == measure::Decision::Pass;
              failed += r.decision == measure::Decision::Fail;
              if (!f->quiet) print_part(r);
            }, f->queue);
            if (f->queue < 0) throw InputError("--queue " + std::to_string(f->queue) + " (expected 0 or a number of parts)");
            session.run({&sink});
            files.finish(sink.units());
            std::printf("%zu parts (%llu passed, %llu failed) in %llu rows, units %s%s\n", files.results().size(), static_cast<unsigned long long>(passed),
                        static_cast<unsigned long long>(failed), static_cast<unsigned long long>(sink.rows()), sink.units().c_str(),
                        sink.dropped() ? (", " + std::to_string(sink.dropped()) + " parts dropped (queue full)").c_str() : "");
            return 0;
          }};
}

}  // namespace stripeline::tools
