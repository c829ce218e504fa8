#pragma once
// [daemon] and [http] of a configuration: the settings of the long-running
// service (daemon/, docs/daemon.md). Defined here, below the daemon, because
// the configuration file is one and the composition root reads all of it.
#include <cstdint>
#include <filesystem>
#include <string>

namespace stripeline {

// [daemon]
struct DaemonConfig {
  std::uint64_t scan_rows = 10000;   // a scan ends after this many rows (1..10000000)
  double pause = 0.5;                // ... or at a gap of this many seconds between frame timestamps (0 = off)
  double idle_close = 2.0;           // ... or when no frame arrived for this many seconds, wall clock (0 = off)
  double rate = 0.0;                 // pace the source at this many frames per second (0 = as fast as it delivers)
  double stop_timeout = 10.0;        // SIGTERM: seconds allowed to drain and finish files before exiting 1
  double stall_timeout = 10.0;       // a batch in flight longer than this is a stall: /healthz 503, no WATCHDOG=1
  std::string log_level = "info";    // trace, debug, info, warn, error

  // Throws ConfigError naming the key.
  void validate() const;
};

// [http]: /healthz and /metrics (Prometheus).
struct HttpConfig {
  bool enabled = true;
  std::string address = "127.0.0.1";  // listen address (loopback by default)
  int port = 9560;                    // 0 = an ephemeral port (logged at start)
  int max_connections = 256;          // open at once; beyond, the longest-idle one is closed (1..65536)
  double request_timeout = 2.0;       // seconds from a request's first byte to its last header line (0.05..60)
  double idle_timeout = 5.0;          // seconds a connection may stay open with no request (keep-alive; 0.1..3600)
  bool viewer = true;                 // the live viewer: the page at / and its updates at /events (docs/daemon.md)
  int max_viewers = 32;               // live viewers connected at once; beyond, refused with 503 (1..1024)

  // Throws ConfigError naming the key.
  void validate() const;
  bool operator==(const HttpConfig&) const = default;
};

// [measure]: a measurement job applied live to the rows (daemon/live_measure.h,
// docs/measure.md "Live"). In a [[head]], [head.measure] is that head's.
struct MeasureConfig {
  std::string job;                    // the job file (TOML, docs/measure.md "Job files"); "" = no measuring
  int queue_parts = 8;                // parts waiting for the tools at most; a part beyond is dropped (counted), never waited for (1..1024)

  // Throws ConfigError naming the key.
  void validate() const;
  bool operator==(const MeasureConfig&) const = default;
};

// [modbus]: the latest part's results for PLCs over Modbus TCP (daemon/modbus_server.h,
// docs/measure.md "Modbus TCP"), fed by the live job ([measure], or the first head's).
struct ModbusConfig {
  bool enabled = false;
  std::string address = "127.0.0.1";  // listen address (loopback by default)
  int port = 1502;                    // 0 = an ephemeral port (logged at start); 502 needs privileges

  // Throws ConfigError naming the key.
  void validate() const;
  bool operator==(const ModbusConfig&) const = default;
};

// Throws ConfigError naming `path` when the file sets nothing: 0 bytes, or
// only whitespace, comments and empty tables. Such a file parses as the
// built-in defaults (outputs, publisher off), which a reload of a file being
// rewritten or truncated must not switch a running service to.
void require_settings(const std::filesystem::path& path);

}  // namespace stripeline
