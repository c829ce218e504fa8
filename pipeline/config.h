#pragma once
// The configuration of a run, as read from TOML (configs/*.toml documents
// every key). Unknown keys and out-of-range values are ConfigErrors naming
// the file and the key: a typo never silently falls back to a default.
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "acquisition/camera_source.h"
#include "acquisition/file_source.h"
#include "acquisition/synthetic_scanner.h"
#include "core/calibration.h"
#include "io/ply_writer.h"
#include "pipeline/pipeline.h"
#include "pipeline/publisher.h"

namespace stripeline {

enum class SourceKind { Synthetic, File, Camera };

struct OutputConfig {
  std::filesystem::path dir = "out";
  std::string ply = "scan.ply";            // "" = no PLY
  io::PlyEncoding ply_encoding = io::PlyEncoding::BinaryLittleEndian;
  std::string heightmap = "heightmap.png"; // 16-bit PNG or TIFF; "" = none
  std::string preview = "preview.png";     // 8-bit PNG; "" = none
  std::string summary = "summary.json";    // "" = none
  int height_bits = kDefaultHeightCodeBits;
  // Filters applied to the assembled height map before it is written, in
  // order ("median 3", "erode-h 32", ...; docs/heightmap-filters.md). A final
  // "to8 MIN:MAX" makes the preview from that range instead of the automatic one.
  std::vector<std::string> heightmap_filters;

  // Path of an output file: absolute names stay, relative ones go under dir.
  std::filesystem::path resolve(const std::string& name) const;
};

// [daemon]: the long-running acquisition service (docs/daemon.md).
struct DaemonConfig {
  std::uint64_t scan_rows = 10000;   // a scan ends after this many rows (1..10000000)
  double pause = 0.5;                // ... or at a gap of this many seconds between frame timestamps (0 = off)
  double idle_close = 2.0;           // ... or when no frame arrived for this many seconds, wall clock (0 = off)
  double rate = 0.0;                 // pace the source at this many frames per second (0 = as fast as it delivers)
  double stop_timeout = 10.0;        // SIGTERM: seconds allowed to drain and finish files before exiting 1
  double stall_timeout = 10.0;       // a batch in flight longer than this is a stall: /healthz 503, no WATCHDOG=1
  std::string log_level = "info";    // trace, debug, info, warn, error
};

// [http]: /healthz and /metrics (Prometheus).
struct HttpConfig {
  bool enabled = true;
  std::string address = "127.0.0.1";  // listen address (loopback by default)
  int port = 9560;                    // 0 = an ephemeral port (logged at start)
};

struct Config {
  SourceKind source = SourceKind::Synthetic;
  SyntheticConfig synthetic;
  FileSourceConfig file;
  CameraConfig camera;               // [camera]: a live GenICam camera (docs/cameras.md)
  PipelineOptions pipeline;
  OutputConfig output;
  bool publish = false;              // [publisher] enabled: run/replay/daemon stream rows over ZeroMQ
  PublisherConfig publisher;         // [publisher] and [security]
  DaemonConfig daemon;
  HttpConfig http;
  std::filesystem::path origin;  // the file it came from ("" = built-in defaults)
};

// The configured source, opened (a camera is opened and configured here:
// DeviceUnavailable or ConfigError).
std::unique_ptr<FrameSource> make_source(const Config& c);

// Built-in defaults: the demo scan of `stripeline run`.
Config default_config();
// Parse a TOML file over the defaults. Throws ConfigError("<file>: <key> ...").
Config load_config(const std::filesystem::path& path);
// Same, from text (tests); `origin` names it in messages.
Config parse_config(const std::string& toml_text, const std::string& origin);

}  // namespace stripeline
