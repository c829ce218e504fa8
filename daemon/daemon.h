#pragma once
// The long-running acquisition service behind `stripeline daemon`
// (docs/daemon.md). It runs the configured source through the pipeline into
// a ScanWriter (per-scan files + one publisher series per scan) until it is
// stopped:
//   SIGTERM/SIGINT  stop acquiring, drain the batches in flight, finish the
//                   open scan (files renamed into place, series-end sent),
//                   exit 0 -- or exit 1 after daemon.stop_timeout seconds.
//   SIGHUP          reload the config file; an invalid one is logged and the
//                   running configuration kept. A valid one ends the open
//                   scan (reason "reload") and restarts the pipeline with it.
// systemd (Type=notify): READY=1 once the source, the processors and the
// sockets are up; WATCHDOG=1 while batches move (or the source is waiting
// with nothing stuck in flight); RELOADING=1 and STOPPING=1.
// HTTP: /healthz and /metrics (Prometheus).
#include <filesystem>
#include <functional>

#include "app/config.h"

namespace stripeline::daemon {

// Loads the configuration (ConfigError: exit 2 before anything starts), then
// runs until stopped. Returns the exit code.
// `overrides` (command-line flags such as --calibration) are applied after
// every load of the file, SIGHUP reloads included.
int run_daemon(const std::filesystem::path& config_path, std::function<void(Config&)> overrides = {});

}  // namespace stripeline::daemon
