#pragma once
// One run of the engine, wired once for every command and the daemon:
// configuration -> source -> calibration for the source's real ROI ->
// checked outputs -> sinks -> pipeline -> run -> what happened. `run`,
// `replay`, the camera runs and each daemon generation go through it; the
// callers add only what is theirs (a progress bar and a summary; the
// daemon's pacing, metrics, per-scan series, reloads and reconnects).
//
// The steps, in the order a command takes them (the daemon takes the same
// ones, its own sinks in place of open_outputs):
//   check_outputs()     every output name, before anything opens or is created
//   open_source()       make_source, optionally wrapped by a decorator
//                       (or attach_source(): a source the caller made)
//   apply_calibration() the [calibration] file at the source's ROI
//   sweep_outputs()     temporaries of killed runs with these names
//   open_outputs()      the [output] files and the publisher
//   run()               the pipeline over the source into the sinks
// Thread-safety: one thread drives the steps; stop() may be called from any
// thread (a signal handler's thread, the daemon's signal thread).
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "app/config.h"
#include "app/outputs.h"
#include "pipeline/pipeline.h"

namespace stripeline {

// Wraps the opened source (the daemon paces and counts through one); returns
// what the pipeline reads. The wrapper refers to `opened`, which the session
// keeps alive until release_source().
using SourceDecorator = std::function<std::unique_ptr<FrameSource>(FrameSource& opened)>;

// A file the run writes besides [output]'s: (what, path) for messages.
using ExtraOutput = std::pair<std::string, std::filesystem::path>;

class RunSession {
 public:
  explicit RunSession(Config config) : config_(std::move(config)) {}
  RunSession(const RunSession&) = delete;
  RunSession& operator=(const RunSession&) = delete;
  ~RunSession();

  // The configuration, with pipeline.sheet set once apply_calibration() ran.
  const Config& config() const { return config_; }

  // Every [output] name and `extra` checked (check_output_files,
  // check_output_path): InputError naming the file. Creates nothing.
  void check_outputs(const std::vector<ExtraOutput>& extra = {}) const;
  // Opens the configured source (DeviceUnavailable, ConfigError, InputError
  // as make_source throws them), wrapped by `decorate` when given.
  FrameSource& open_source(const SourceDecorator& decorate = {});
  // Runs over a source the caller made and keeps alive instead (benchmarks'
  // in-memory and paced sources); in place of open_source().
  FrameSource& attach_source(FrameSource& source);
  // Loads [calibration] file for the source's frames at its ROI (a camera's
  // read-back through FrameSource::camera_settings()); InputError naming the
  // file. Null when none is configured.
  std::shared_ptr<const AppliedCalibration> apply_calibration();
  // Removes what killed runs left under these output names (their process
  // gone); creates the output directory when a file goes there (`create_dir`).
  std::vector<std::filesystem::path> sweep_outputs(const std::vector<std::filesystem::path>& extra = {}, bool create_dir = false);
  // The [output] file sinks and, with [publisher] enabled, the publisher
  // (make_output_sinks). The session fills options' filter backend, the rows
  // to reserve (from the source's length, when one is open) and the publisher.
  // Without a source, outputs fed from elsewhere (a subscription).
  OutputSinks& open_outputs(OutputOptions options = {});
  // The [output] files of one scan of a series (the daemon writes a set per
  // scan): the sinks open_outputs() makes, every name prefixed with
  // `prefix`, without the publisher (it lives across scans). The caller owns them.
  OutputSinks open_scan_outputs(const std::string& prefix) const;
  // The pipeline of this configuration (built on first use; ConfigError for
  // out-of-range options).
  Pipeline& pipeline();
  // Runs the pipeline over the source into the opened outputs followed by
  // `more`; returns its statistics.
  PipelineStats run(const std::vector<ProfileSink*>& more = {}, const ProgressCallback& progress = {});
  // Stops acquiring; the batches in flight go through the sinks. Any thread.
  void stop() noexcept;

  // What the pipeline reads (the decorator's wrapper, if any) and the source
  // that was opened. Valid after open_source().
  FrameSource& source();
  FrameSource& opened_source();
  // Why the run ended: the opened source's end reason and, for a lost camera, why.
  bool device_lost() const;
  std::string loss_reason() const;
  // Every file the opened outputs write, in order ([output] files).
  const std::vector<std::filesystem::path>& output_files() const;
  // Hands the opened source over (the daemon closes a camera off its main
  // thread); the wrapper goes first. The session must not run again.
  std::unique_ptr<FrameSource> release_source();

 private:
  Config config_;
  std::unique_ptr<FrameSource> opened_;
  FrameSource* attached_ = nullptr;  // attach_source(): the caller's
  std::unique_ptr<FrameSource> wrapper_;
  std::optional<OutputSinks> sinks_;
  std::unique_ptr<Pipeline> pipeline_;
};

// The engine alone over a source the caller made, into `sinks` (no files):
// what the benchmarks measure, through the same session every run uses.
PipelineStats run_engine(const PipelineOptions& options, FrameSource& source, const std::vector<ProfileSink*>& sinks);

}  // namespace stripeline
