// `stripeline run` and `stripeline replay`: a source through the pipeline
// into file sinks, with a progress bar and a summary.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <memory>
#include <optional>

#include "app/calibration_setup.h"
#include "app/config.h"
#include "app/outputs.h"
#include "pipeline/scan_metadata.h"
#include "app/run_session.h"
#include "app/settings.h"
#include "core/errors.h"
#include "pipeline/coverage_check.h"
#include "tools/calibration_flags.h"
#include "tools/commands.h"
#include "tools/interrupt.h"
#include "tools/setting_flags.h"
#include "tools/report.h"

namespace stripeline::tools {

namespace {

struct CommonFlags {
  std::string config;
  bool quiet = false;
  double wait_subscriber = 0.0;  // --wait-subscriber: seconds to wait for a subscriber before starting
  std::string calibration;       // --calibration FILE
  double y_step = 0.0;           // --y-step MM
  std::string roi_offset;        // --roi-offset X,Y
};

// The summary (file and line), the acquisition and publisher lines and the list of files written.
void report_outputs(RunReport& report, const OutputConfig& out, std::vector<std::filesystem::path> outputs, bool quiet,
                    const Publisher* publisher) {
  if (!out.summary.empty()) {
    outputs.push_back(out.resolve(out.summary));
    report.outputs = outputs;
    write_summary_json(outputs.back(), report);
  }
  report.outputs = outputs;
  std::printf("%s\n", summary_line(report).c_str());
  if (report.acquisition) std::printf("%s\n", acquisition_line(*report.acquisition).c_str());
  if (report.stats.overflow > 0)
    std::fprintf(stderr, "stripeline: warning: %llu points beyond the output slots were counted but not written (raise max_peaks/max_points)\n",
                 static_cast<unsigned long long>(report.stats.overflow));
  if (publisher) {
    const PublisherCounters c = publisher->counters();
    std::printf("published %llu of %llu rows (%llu messages, %.1f MB) on %s; dropped %llu rows (hwm %llu, no_subscriber %llu, error %llu)\n",
                static_cast<unsigned long long>(c.rows_published), static_cast<unsigned long long>(c.rows_in),
                static_cast<unsigned long long>(c.messages_sent), c.bytes_sent / 1e6, publisher->endpoint().c_str(),
                static_cast<unsigned long long>(c.rows_dropped_total()), static_cast<unsigned long long>(c.rows_dropped[0]),
                static_cast<unsigned long long>(c.rows_dropped[1]), static_cast<unsigned long long>(c.rows_dropped[2]));
  }
  if (!quiet)
    for (const auto& p : outputs) std::printf("  wrote %s\n", p.string().c_str());
}

int process(const std::string& command, const Config& given, bool quiet, double wait_subscriber = 0.0,
            const RangeMapOptions* range_map = nullptr) {
  // SIGINT/SIGTERM from here on stop acquiring and finish the files (tools/interrupt.h).
  GracefulStop stop;
  RunSession session(given);
  std::vector<std::filesystem::path> range_files;
  std::vector<ExtraOutput> extra;
  if (range_map) range_files = RangeMapSink(*range_map).files();
  for (const auto& p : range_files) extra.emplace_back("range map", p);
  // Every output name checked before the source is opened and before any file is created.
  session.check_outputs(extra);
  FrameSource& source = session.open_source();
  session.apply_calibration();  // the calibration file: checked before any output is opened
  const Config& config = session.config();
  const auto& out = config.output;
  if (range_map && !config.pipeline.sheet)
    throw InputError("--range-map/--range-codes need a sheet-of-light calibration (expected --calibration FILE or [calibration] file)");
  {  // leftovers of a killed run with these names (our temporary pattern, its process gone)
    const auto swept = session.sweep_outputs(range_files);
    if (!swept.empty())
      std::fprintf(stderr, "stripeline: removed %zu temporar%s left by an interrupted run (its process is gone): %s%s\n", swept.size(),
                   swept.size() == 1 ? "y" : "ies", swept.front().string().c_str(), swept.size() > 1 ? ", ..." : "");
  }
  OutputSinks& sinks = session.open_outputs();
  std::vector<std::filesystem::path> outputs = sinks.files;
  std::vector<ProfileSink*> more_sinks;
  // A recording replayed with a wrong frame height: a warning after the first batch.
  std::unique_ptr<StripeCoverageCheck> coverage;
  if (config.source == SourceKind::File) {
    coverage = std::make_unique<StripeCoverageCheck>(config.file.path.string());
    more_sinks.push_back(coverage.get());
  }
  std::unique_ptr<RangeMapSink> range_sink;
  if (range_map) {
    range_sink = std::make_unique<RangeMapSink>(*range_map);
    more_sinks.push_back(range_sink.get());
    for (const auto& p : range_sink->files()) outputs.push_back(p);
  }
  // Streaming (--publish or [publisher] enabled): docs/wire-format.md.
  Publisher* publisher = sinks.publisher;
  if (publisher) {
    if (!quiet) std::fprintf(stderr, "publishing on %s\n", publisher->endpoint().c_str());
    if (wait_subscriber > 0 && !publisher->wait_for_subscribers(1, std::chrono::milliseconds(static_cast<long>(wait_subscriber * 1000))))
      std::fprintf(stderr, "stripeline: warning: no subscriber after %.1f s; publishing anyway (rows will count as dropped: no_subscriber)\n",
                   wait_subscriber);
  }

  const bool live = config.source == SourceKind::Camera;
  if (live && !quiet)
    std::fprintf(stderr, "acquiring from %s%s\n", source.describe().c_str(),
                 source.total_frames() ? "" : "; Ctrl-C stops and finishes the files");
  ProgressBar bar(source.total_frames(), !quiet);
  stop.attach(&source, &session.pipeline());
  RunReport report;
  report.command = command;
  report.source = source.describe();
  report.width = source.frame_layout().width;
  report.calibration = config.pipeline.sheet;
  report.linear = config.pipeline.calibration;
  report.frame_height = source.frame_layout().frame_height;
  report.height_bits = out.height_bits;
  report.method = to_string(config.pipeline.chain.column.method);
  report.neighbour_columns = config.pipeline.chain.neighbour_check.columns;
  report.neighbour_step = config.pipeline.chain.neighbour_check.step;
  report.line_model = line_model_metadata(config.pipeline.chain);
  report.stats = session.run(more_sinks, [&bar](const PipelineStats& s) { bar.update(s); });
  stop.detach();
  bar.done();
  const int stopped_by = stop.signal();
  report.interrupted = stopped_by != 0 ? signal_name(stopped_by) : "";
  // A finite source cut short: the files are complete but hold part of the input (exit 3).
  const bool cut_short = stopped_by != 0 && source.total_frames() && report.stats.frames < *source.total_frames();
  if (stopped_by != 0)
    std::fprintf(stderr, "stripeline: stopped by %s after %llu frames%s; the files hold what was acquired\n", signal_name(stopped_by),
                 static_cast<unsigned long long>(report.stats.frames),
                 cut_short ? (" of " + std::to_string(*source.total_frames())).c_str() : "");
  report.acquisition = source.acquisition_counters();
  if (session.device_lost())
    std::fprintf(stderr, "stripeline: warning: the camera was lost (%s); the files hold what arrived before (closing its connection takes a few seconds)\n",
                 session.loss_reason().c_str());
  report_outputs(report, out, outputs, quiet, publisher);
  if (session.device_lost()) return 1;  // a lost camera is a runtime failure, files kept
  return cut_short ? kExitInterrupted : 0;
}

}  // namespace

Subcommand add_run(CLI::App& app) {
  auto* sub = app.add_subcommand("run", "Process the configured source (default: a synthetic scan) into out/");
  auto flags = std::make_shared<CommonFlags>();
  auto settings = std::make_shared<SettingFlags>();
  sub->add_option("-c,--config", flags->config, "TOML configuration (see configs/demo.toml); default: built-in demo");
  sub->add_flag("-q,--quiet", flags->quiet, "No progress bar, no list of outputs");
  add_calibration_flags(sub, flags->calibration, flags->y_step, flags->roi_offset);
  settings->add(sub, {"processing", "output"});  // docs/settings.md: every [processing] and [output] flag overrides the file
  return {sub, [flags, settings] {
            Config c = flags->config.empty() ? default_config() : load_config(flags->config);
            apply_calibration_flags(c, flags->calibration, flags->y_step, flags->roi_offset);
            settings->apply(c);
            return process("run", c, flags->quiet);
          }};
}

Subcommand add_replay(CLI::App& app) {
  auto* sub = app.add_subcommand("replay", "Replay a recorded concatenated stripe image (TIFF, PNG, PGM, raw)");
  struct Flags : CommonFlags {
    std::string input, publish, frames;
    bool alternate = false, ascii = false, publish_no_points = false;
    int frame_height = 0;
    RangeMapFlags range;
    SettingFlags settings;
  };
  auto f = std::make_shared<Flags>();
  sub->add_option("input", f->input, "Recorded image: frames concatenated vertically")->required();
  sub->add_option("-H,--frame-height", f->frame_height, "Rows per frame (the image height must be a multiple)")->required();
  sub->add_option("--frames", f->frames,
                  "Only frames START:END of the recording (0-based, END exclusive: 0:300 = the first 300), numbered as in the whole "
                  "replay; the outputs join exactly (stripeline join, docs/scale-out.md)");
  sub->add_flag("--ascii", f->ascii, "ASCII PLY instead of binary little-endian (--ply-format ascii)");
  sub->add_flag("--alternate", f->alternate, "Frames alternate laser on/off: each pair becomes one frame, on minus off (--ambient alternate)");
  sub->add_option("-c,--config", f->config, "TOML configuration (see configs/replay.toml); flags override it");
  sub->add_option("--publish", f->publish, "Also stream the rows over ZeroMQ on this endpoint, e.g. tcp://127.0.0.1:5556 (docs/wire-format.md)");
  sub->add_flag("--publish-no-points", f->publish_no_points,
                "With --publish and a sheet-of-light calibration: leave the calibrated X/Y/Z out of the messages (publisher.points = false)");
  sub->add_option("--wait-subscriber", f->wait_subscriber, "With --publish: wait up to this many seconds for a subscriber before starting");
  sub->add_flag("-q,--quiet", f->quiet, "No progress bar, no list of outputs");
  add_calibration_flags(sub, f->calibration, f->y_step, f->roi_offset);
  f->range.add(sub);
  f->settings.add(sub, {"source", "processing", "output"});  // docs/settings.md
  return {sub, [f] {
            Config c = f->config.empty() ? default_config() : load_config(f->config);
            if (f->config.empty()) {  // without a config, write only what the flags ask for
              c.output = OutputConfig{};
              c.output.dir = "";
              c.output.ply = c.output.heightmap = c.output.preview = c.output.summary = c.output.xyz_tiff = "";
            }
            apply_calibration_flags(c, f->calibration, f->y_step, f->roi_offset);
            const bool dark_frame = f->settings.given("processing", "dark_frame");
            if (dark_frame && f->alternate) throw InputError("--dark-frame and --alternate exclude each other (pick one ambient suppression)");
            // The command's own flags, as the keys they stand for, read with the schema's flags.
            std::vector<GivenSetting> more = {{&setting_at("source", "kind"), "file"},
                                              {&setting_at("source", "path"), f->input},
                                              {&setting_at("source", "frame_height"), std::to_string(f->frame_height)}};
            if (!f->settings.given("source", "loops")) more.push_back({&setting_at("source", "loops"), "1"});  // one pass unless --loops
            if (f->ascii) more.push_back({&setting_at("output", "ply_format"), "ascii"});
            if (f->alternate) more.push_back({&setting_at("processing", "ambient"), "alternate"});
            if (!f->publish.empty()) {
              more.push_back({&setting_at("publisher", "enabled"), "true"});
              more.push_back({&setting_at("publisher", "endpoint"), f->publish});
            }
            if (f->publish_no_points) more.push_back({&setting_at("publisher", "points"), "false"});
            f->settings.apply(c, more);
            if (!f->frames.empty()) {
              FrameSpan span = parse_frame_span(f->frames);
              span.settings = settings_digest(c);  // join tells parts made otherwise apart (app/settings.h)
              c.file.frames = span;
              // What is made from the whole map cannot be joined from parts.
              if (!c.output.preview.empty())
                throw InputError("--frames " + f->frames + " with a preview (" + c.output.preview +
                                 "): its grey range is the whole scan's, a part's would differ (expected output.preview = \"\" with --frames)");
              if (!c.output.heightmap_filters.empty())
                throw InputError("--frames " + f->frames + " with height-map filters: they see rows across the parts' edges (expected none; " +
                                 "filter the joined map: stripeline filter)");
            }
            const std::unique_ptr<RangeMapOptions> range = f->range.options();
            return process("replay", c, f->quiet, f->wait_subscriber, range.get());
          }};
}

}  // namespace stripeline::tools
