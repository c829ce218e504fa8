#pragma once
// The daemon of several heads (docs/daemon.md "Several heads"): a
// configuration with [[head]] sections (app/heads_config.h) runs each head on
// threads of its own, through the run session every command uses
// (app/run_session.h), beside the others:
//   - each head has its own source, calibration, pipeline (its own pinned
//     pool, on its CUDA device), per-scan files and publisher; a head's loss
//     (its camera gone, its file unreadable, its pipeline throwing) is logged
//     and counted and leaves the others running; a camera is retried every
//     camera.reconnect_interval (daemon/camera_supervisor.h);
//   - SIGTERM/SIGINT drain every head (each finishes its open scan);
//     SIGHUP reloads the file and restarts only the heads whose
//     configuration changed (the set of heads and [merge] change at the next start);
//   - /metrics: every per-pipeline family with the label head="<name>";
//     /healthz, /livez and /readyz: one line per head;
//   - [merge] enabled: the merge stage (streaming/merge.h) subscribed to the
//     heads' own endpoints on loopback (CURVE clients with merge.client_key
//     where the heads serve CURVE), publishing the merged series and writing
//     each series' range map and PLY (merge.range_map, merge.ply); each
//     head waits (merge.subscribe_timeout) for its subscription before it publishes.
// Threads: the main thread (waits for signals' effects), one per head (its
// generations; the pipeline's own threads under it), the signal thread,
// housekeeping (scan idle ends, publisher ticks, watchdog, stop deadline),
// HTTP, and the merge's thread.
#include <filesystem>
#include <functional>

#include "app/config.h"

namespace stripeline::daemon {

// Runs the heads of `first` (loaded from `config_path`, with `overrides`
// applied to each head after every load) until stopped. Returns the exit code.
int run_heads(const std::filesystem::path& config_path, std::function<void(Config&)> overrides, Config first);

}  // namespace stripeline::daemon
