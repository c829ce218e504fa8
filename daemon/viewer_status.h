#pragma once
// One head's entry in the live viewer's "health" event (docs/daemon.md
// "Live viewer"), the same for the single-head daemon and each head of a
// daemon of several: frames, lost, profiles, dropped (stream), series,
// source kind and camera state. The hub adds the head's rows/s, latency and
// calibration from its ViewerFeed (viewer_hub.h). Kinds only: a file
// source's path or a camera's address is never served.
//
// Thread-safety: the caller holds whatever guards `source` and `publisher`.
#include <nlohmann/json.hpp>

#include <string>

#include "app/config.h"
#include "daemon/camera_supervisor.h"
#include "daemon/daemon_metrics.h"
#include "daemon/instrumented_source.h"
#include "streaming/publisher.h"

namespace stripeline::daemon {

// `source`, `publisher`: nullptr while none runs.
nlohmann::json viewer_head_status(const std::string& name, const Config& cfg, const InstrumentedSource* source, const DaemonMetrics& metrics,
                                  const Publisher* publisher, const CameraSupervisor& camera);

}  // namespace stripeline::daemon
