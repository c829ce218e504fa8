#pragma once
// The configuration of a run, as read from TOML (configs/*.toml documents
// every key). One file, one section per concern; each section is a struct
// defined (and validated) beside what it configures:
//   [source]      kind, and the file source (acquisition/file_source.h)
//   [synthetic]   acquisition/synthetic_scanner.h      [camera]     acquisition/camera_source.h
//   [processing]  pipeline/pipeline.h, stages/chain.h  [calibration] core/calibration.h
//   [output]      app/outputs.h                        [publisher], [security]  streaming/publisher.h, streaming/curve.h
//   [daemon], [http], [measure], [modbus]  app/service_config.h
//   [[head]], [merge] app/heads_config.h (several heads in one daemon)
// Unknown keys and out-of-range values are ConfigErrors naming the file and
// the key: a typo never silently falls back to a default.
#include <filesystem>
#include <memory>
#include <string>

#include "acquisition/camera_source.h"
#include "acquisition/file_source.h"
#include "acquisition/gentl/gentl_camera.h"
#include "acquisition/synthetic_scanner.h"
#include "app/calibration_setup.h"
#include "app/heads_config.h"
#include "app/outputs.h"
#include "app/service_config.h"
#include "pipeline/pipeline.h"
#include "streaming/publisher.h"

namespace stripeline {

enum class SourceKind { Synthetic, File, Camera };

struct Config {
  SourceKind source = SourceKind::Synthetic;
  SyntheticConfig synthetic;
  FileSourceConfig file;
  CameraConfig camera;               // [camera]: a live GenICam camera (docs/cameras.md)
  GenTLConfig gentl;                 // [camera.gentl]: the frame grabber's side, with camera.transport = "gentl"
  PipelineOptions pipeline;
  CalibrationFileSettings calibration;  // [calibration] file, y_step_mm, roi_offset (sheet-of-light)
  OutputConfig output;
  bool publish = false;              // [publisher] enabled: run/replay/daemon stream rows over ZeroMQ
  PublisherConfig publisher;         // [publisher] and [security]
  DaemonConfig daemon;
  HttpConfig http;
  MeasureConfig measure;             // [measure]: a job applied live (docs/measure.md)
  ModbusConfig modbus;               // [modbus]: the latest part to PLCs
  // [[head]]: several heads in one daemon, each its own whole configuration
  // (empty: this configuration is the one head). In a head's own: its name.
  std::vector<HeadEntry> heads;
  std::string head_name;
  DaemonMergeConfig merge;           // [merge]: the heads' streams merged in the daemon
  std::filesystem::path origin;  // the file it came from ("" = built-in defaults)
};

// Built-in defaults: the demo scan of `stripeline run`.
Config default_config();
// Parse a TOML file over the defaults. Throws ConfigError("<file>: <key> ...").
Config load_config(const std::filesystem::path& path);
// Same, from text (tests); `origin` names it in messages.
Config parse_config(const std::string& toml_text, const std::string& origin);

}  // namespace stripeline
