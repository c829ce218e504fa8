#pragma once
// What a run tells its user: a progress bar on a terminal, a one-line
// summary at the end, and a JSON summary file.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/calibration.h"
#include "core/metadata.h"
#include "pipeline/pipeline.h"

namespace stripeline::tools {

class ProgressBar {
 public:
  // Draws only when stderr is a terminal and `enabled`.
  ProgressBar(std::optional<std::uint64_t> total_frames, bool enabled);
  void update(const PipelineStats& stats);
  void done();

 private:
  std::optional<std::uint64_t> total_;
  bool active_;
  double last_draw_ = -1.0;
};

struct RunReport {
  std::string command;
  std::string source;
  int width = 0;
  PipelineStats stats;
  std::vector<std::filesystem::path> outputs;
  std::optional<AcquisitionCounters> acquisition;  // live sources: what was lost, by cause
  std::shared_ptr<const AppliedCalibration> calibration;  // sheet-of-light calibration applied, or none
  LinearCalibration linear;                         // [calibration] linear keys
  // How to read the outputs (docs/data-model.md "Self-describing outputs").
  int height_bits = 6;
  int frame_height = 0;
  std::string method;
  int neighbour_columns = 0;    // the neighbour check (0 = off) and its step, as the outputs record them
  double neighbour_step = 0.0;
  metadata::Scan::LineModel line_model;  // the line model, as the outputs record it (candidates 0 = off)
  std::string interrupted;  // "SIGINT"/"SIGTERM" when a signal stopped the run, else empty
};

// "camera: 1000 frames received whole, 12 lost (gap 3, incomplete 9, timeout 0, failed 0; 0 beyond gap_fill_limit); 0 underruns; batches 3 full, 1 flushed"
std::string acquisition_line(const AcquisitionCounters& a);

// "live path: batches of 1, up to 64 reached (bound 64); 3 switches to batching, 3 back; 0 frames dropped; ..."
std::string live_line(const LiveStats& l);

// "frames 600, profiles 600, points 1190423, 412.5 MB/s, 1250000 profiles/s (cpu)"
std::string summary_line(const RunReport& r);
// The summary's metadata document (core/metadata.h) common fields.
metadata::Scan scan_metadata(const RunReport& r);
// Written atomically: the "summary" metadata document (docs/data-model.md).
void write_summary_json(const std::filesystem::path& path, const RunReport& r);

}  // namespace stripeline::tools
