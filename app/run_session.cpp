#include "app/run_session.h"

#include <algorithm>

#include "app/calibration_setup.h"
#include "app/sources.h"
#include "core/errors.h"

namespace stripeline {

RunSession::~RunSession() {
  // The sinks refer to nothing of the source; the wrapper refers to the opened source.
  pipeline_.reset();
  sinks_.reset();
  wrapper_.reset();
}

void RunSession::check_outputs(const std::vector<ExtraOutput>& extra) const {
  check_output_files(config_.output);
  for (const auto& [what, path] : extra) check_output_path(what, path, OutputKind::Other);
}

FrameSource& RunSession::open_source(const SourceDecorator& decorate) {
  if (opened_ || attached_) throw RuntimeFailure("RunSession::open_source: the source is already open");
  opened_ = make_source(config_);
  if (decorate) wrapper_ = decorate(*opened_);
  return source();
}

FrameSource& RunSession::attach_source(FrameSource& source) {
  if (opened_ || attached_) throw RuntimeFailure("RunSession::attach_source: a source is already open");
  attached_ = &source;
  return source;
}

std::shared_ptr<const AppliedCalibration> RunSession::apply_calibration() {
  const FrameSource& s = opened_source();
  const BatchLayout layout = s.frame_layout();
  config_.pipeline.sheet = load_applied_calibration(config_.calibration, layout.width, layout.frame_height, s.camera_settings());
  return config_.pipeline.sheet;
}

std::vector<std::filesystem::path> RunSession::sweep_outputs(const std::vector<std::filesystem::path>& extra, bool create_dir) {
  if (create_dir && config_.output.any_file()) create_output_dir(config_.output.dir);
  return sweep_stale_outputs(config_.output, extra);
}

OutputSinks& RunSession::open_outputs(OutputOptions options) {
  if (sinks_) throw RuntimeFailure("RunSession::open_outputs: the outputs are already open");
  options.filter_backend = config_.pipeline.backend;
  if (opened_ || attached_) {  // rows to reserve for up front: what the source says, at most 256 MiB of height codes (more grows as it comes)
    const std::uint64_t width = static_cast<std::uint64_t>(std::max(1, source().frame_layout().width));
    const std::uint64_t cap = (std::uint64_t{256} << 20) / (2 * width);
    options.expected_rows = std::min<std::uint64_t>(source().total_frames().value_or(0), cap);
  }
  options.publisher = config_.publish ? &config_.publisher : nullptr;
  sinks_ = make_output_sinks(config_.output, options);
  return *sinks_;
}

OutputSinks RunSession::open_scan_outputs(const std::string& prefix) const {
  OutputOptions options;
  options.prefix = prefix;
  options.filter_backend = config_.pipeline.backend;
  return make_output_sinks(config_.output, options);
}

Pipeline& RunSession::pipeline() {
  if (!pipeline_) pipeline_ = std::make_unique<Pipeline>(config_.pipeline);
  return *pipeline_;
}

PipelineStats RunSession::run(const std::vector<ProfileSink*>& more, const ProgressCallback& progress) {
  std::vector<ProfileSink*> sinks;
  if (sinks_) sinks = sinks_->all();
  sinks.insert(sinks.end(), more.begin(), more.end());
  return pipeline().run(source(), sinks, progress);
}

void RunSession::stop() noexcept {
  if (pipeline_) pipeline_->stop();
  if (wrapper_) wrapper_->request_stop();
  if (opened_) opened_->request_stop();
  if (attached_) attached_->request_stop();
}

FrameSource& RunSession::source() {
  if (wrapper_) return *wrapper_;
  return opened_source();
}

FrameSource& RunSession::opened_source() {
  if (attached_) return *attached_;
  if (!opened_) throw RuntimeFailure("RunSession: no source is open (open_source() first)");
  return *opened_;
}

bool RunSession::device_lost() const { return opened_ && opened_->end_reason() == SourceEnd::DeviceLost; }

std::string RunSession::loss_reason() const {
  const std::string why = opened_ ? opened_->loss_reason() : std::string();
  return why.empty() ? "no answer" : why;
}

const std::vector<std::filesystem::path>& RunSession::output_files() const {
  static const std::vector<std::filesystem::path> none;
  return sinks_ ? sinks_->files : none;
}

std::unique_ptr<FrameSource> RunSession::release_source() {
  pipeline_.reset();
  wrapper_.reset();
  return std::move(opened_);
}

PipelineStats run_engine(const PipelineOptions& options, FrameSource& source, const std::vector<ProfileSink*>& sinks) {
  Config config;
  config.pipeline = options;
  RunSession session(std::move(config));
  session.attach_source(source);
  return session.run(sinks);
}

}  // namespace stripeline
