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
#include "app/run_session.h"
#include "core/errors.h"
#include "pipeline/coverage_check.h"
#include "tools/calibration_flags.h"
#include "tools/commands.h"
#include "tools/interrupt.h"
#include "tools/report.h"

namespace stripeline::tools {

namespace {

struct CommonFlags {
  std::string config;
  std::string backend;
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
  auto out_dir = std::make_shared<std::string>();
  auto xyz_tiff = std::make_shared<std::string>();
  sub->add_option("-c,--config", flags->config, "TOML configuration (see configs/demo.toml); default: built-in demo");
  sub->add_option("-o,--out", *out_dir, "Output directory (overrides output.dir)");
  sub->add_option("--xyz-tiff", *xyz_tiff, "Also write the organised X/Y/Z export (float32 TIFF, 3 planes; overrides output.xyz_tiff)");
  sub->add_option("--backend", flags->backend, "auto, cpu or cuda (overrides processing.backend)");
  sub->add_flag("-q,--quiet", flags->quiet, "No progress bar, no list of outputs");
  add_calibration_flags(sub, flags->calibration, flags->y_step, flags->roi_offset);
  return {sub, [flags, out_dir, xyz_tiff] {
            Config c = flags->config.empty() ? default_config() : load_config(flags->config);
            apply_calibration_flags(c, flags->calibration, flags->y_step, flags->roi_offset);
            if (!out_dir->empty()) c.output.dir = *out_dir;
            if (!xyz_tiff->empty()) c.output.xyz_tiff = *xyz_tiff;
            if (!flags->backend.empty()) c.pipeline.backend = parse_backend(flags->backend);
            return process("run", c, flags->quiet);
          }};
}

Subcommand add_replay(CLI::App& app) {
  auto* sub = app.add_subcommand("replay", "Replay a recorded concatenated stripe image (TIFF, PNG, PGM, raw)");
  struct Flags : CommonFlags {
    std::string input, ply, heightmap, preview, summary, xyz_tiff, method, format, selection, publish, channel, estimator, dark_frame;
    bool alternate = false, off_first = false;
    int frame_height = 0, blur = -1, batch_frames = 0, raw_width = 0, raw_depth = 8, height_bits = -1, neighbour_columns = -1;
    std::int64_t threshold = -1;
    double rate = -1;
    std::uint64_t loops = 1;
    bool ascii = false;
    RangeMapFlags range;
  };
  auto f = std::make_shared<Flags>();
  sub->add_option("input", f->input, "Recorded image: frames concatenated vertically")->required();
  sub->add_option("-H,--frame-height", f->frame_height, "Rows per frame (the image height must be a multiple)")->required();
  sub->add_option("--ply", f->ply, "Write the point cloud here");
  sub->add_flag("--ascii", f->ascii, "ASCII PLY instead of binary little-endian");
  sub->add_option("--heightmap", f->heightmap, "Write the 16-bit height map here (.png or .tif)");
  sub->add_option("--preview", f->preview, "Write an 8-bit preview PNG here");
  sub->add_option("--summary", f->summary, "Write a JSON summary here");
  sub->add_option("--xyz-tiff", f->xyz_tiff, "Write the organised X/Y/Z export here: float32 TIFF, 3 planes (frames x width, NaN = no point)");
  sub->add_option("--height-bits", f->height_bits, "Fractional bits of the 16-bit height code (default 6 = 1/64 px)");
  sub->add_option("-m,--method", f->method, "adaptive (default), cog, max, window, local-max or all");
  sub->add_option("--estimator", f->estimator, "adaptive: sub-pixel centre: centroid (default), gauss, parabola or steger");
  sub->add_option("--neighbour-columns", f->neighbour_columns,
                  "Remove detections that none of this many columns on each side continues (0 = off; [processing] neighbour_step sets the reach)");
  sub->add_option("--dark-frame", f->dark_frame, "Subtract this laser-off image (one frame) from every frame");
  sub->add_flag("--alternate", f->alternate, "Frames alternate laser on/off: each pair becomes one frame, on minus off");
  sub->add_flag("--off-first", f->off_first, "With --alternate: each pair starts with the laser-off frame");
  sub->add_option("--channel", f->channel, "Colour recordings: red, green, blue, luma (default) or weights \"R,G,B\"");
  sub->add_option("--selection", f->selection, "local-max spot selection: strongest, top, bottom or all");
  sub->add_option("-t,--threshold", f->threshold, "Stripe threshold (pixel value)");
  sub->add_option("-b,--blur", f->blur, "Gaussian blur size (odd 3..15, 0 = off)");
  sub->add_option("--batch-frames", f->batch_frames, "Frames per batch");
  sub->add_option("--format", f->format, "auto, tiff, png, pgm or raw");
  sub->add_option("--raw-width", f->raw_width, "Raw files: image width");
  sub->add_option("--raw-depth", f->raw_depth, "Raw files: 8 or 16 bits");
  sub->add_option("--rate", f->rate, "Pace the replay at this many frames per second (emulates a camera)");
  sub->add_option("--loops", f->loops, "Passes over the file (0 = forever)");
  sub->add_option("-c,--config", f->config, "TOML configuration (see configs/replay.toml); flags override it");
  sub->add_option("--publish", f->publish, "Also stream the rows over ZeroMQ on this endpoint, e.g. tcp://127.0.0.1:5556 (docs/wire-format.md)");
  sub->add_option("--wait-subscriber", f->wait_subscriber, "With --publish: wait up to this many seconds for a subscriber before starting");
  sub->add_option("--backend", f->backend, "auto, cpu or cuda");
  sub->add_flag("-q,--quiet", f->quiet, "No progress bar, no list of outputs");
  add_calibration_flags(sub, f->calibration, f->y_step, f->roi_offset);
  f->range.add(sub);
  return {sub, [f] {
            Config c = f->config.empty() ? default_config() : load_config(f->config);
            if (f->config.empty()) {  // without a config, write only what the flags ask for
              c.output = OutputConfig{};
              c.output.dir = "";
              c.output.ply = c.output.heightmap = c.output.preview = c.output.summary = c.output.xyz_tiff = "";
            }
            apply_calibration_flags(c, f->calibration, f->y_step, f->roi_offset);
            c.source = SourceKind::File;
            c.file.path = f->input;
            c.file.frame_height = f->frame_height;
            c.file.loops = f->loops;
            if (f->rate >= 0) c.file.rate = f->rate;
            if (!f->format.empty()) {
              Config probe = parse_config("[source]\nformat = \"" + f->format + "\"\n", "--format");
              c.file.format = probe.file.format;
            }
            if (f->raw_width > 0 || c.file.format == io::ImageFileFormat::Raw) {
              if (f->raw_depth != 8 && f->raw_depth != 16)
                throw InputError("--raw-depth " + std::to_string(f->raw_depth) + " is not supported (expected 8 or 16)");
              c.file.raw = io::RawGeometry{f->raw_width, 0, f->raw_depth == 8 ? PixelFormat::Mono8 : PixelFormat::Mono16};
            }
            if (!f->ply.empty()) c.output.ply = f->ply;
            if (f->ascii) c.output.ply_encoding = io::PlyEncoding::Ascii;
            if (!f->heightmap.empty()) c.output.heightmap = f->heightmap;
            if (!f->preview.empty()) c.output.preview = f->preview;
            if (!f->summary.empty()) c.output.summary = f->summary;
            if (!f->xyz_tiff.empty()) c.output.xyz_tiff = f->xyz_tiff;
            if (f->height_bits >= 0) c.output.height_bits = f->height_bits;
            if (!f->method.empty()) c.pipeline.chain.column.method = parse_method(f->method);
            if (!f->estimator.empty()) c.pipeline.chain.adaptive.estimator = parse_estimator(f->estimator);
            if (f->neighbour_columns >= 0) c.pipeline.chain.neighbour_check.columns = f->neighbour_columns;
            if (!f->channel.empty()) c.file.channel = io::parse_channel_mix(f->channel, "--channel");
            if (!f->dark_frame.empty() && f->alternate) throw InputError("--dark-frame and --alternate exclude each other (pick one ambient suppression)");
            if (!f->dark_frame.empty()) {
              c.pipeline.ambient.mode = AmbientMode::DarkFrame;
              c.pipeline.ambient.dark_frame_path = f->dark_frame;
            }
            if (f->alternate) c.pipeline.ambient.mode = AmbientMode::Alternate;
            if (f->off_first) c.pipeline.ambient.off_first = true;
            if (!f->selection.empty()) c.pipeline.chain.column.selection = parse_selection(f->selection);
            if (f->threshold >= 0) {
              if (f->threshold > 65535) throw InputError("--threshold " + std::to_string(f->threshold) + " is out of range (expected 1..65535)");
              c.pipeline.chain.column.threshold = static_cast<std::uint32_t>(f->threshold);
            }
            if (f->blur >= 0) c.pipeline.chain.blur_size = f->blur;
            if (f->batch_frames > 0) c.pipeline.batch_frames = f->batch_frames;
            if (!f->backend.empty()) c.pipeline.backend = parse_backend(f->backend);
            if (!f->publish.empty()) {
              c.publish = true;
              c.publisher.endpoint = f->publish;
              c.publisher.validate();
            }
            if (f->height_bits >= 0) c.output.validate();
            const std::unique_ptr<RangeMapOptions> range = f->range.options();
            return process("replay", c, f->quiet, f->wait_subscriber, range.get());
          }};
}

}  // namespace stripeline::tools
