#include "daemon/viewer_status.h"

namespace stripeline::daemon {

nlohmann::json viewer_head_status(const std::string& name, const Config& cfg, const InstrumentedSource* source, const DaemonMetrics& metrics,
                                  const Publisher* publisher, const CameraSupervisor& camera) {
  const auto t = metrics.totals();
  nlohmann::json head = {{"name", name},
                         {"frames", source ? source->frames() : 0},
                         {"lost", source ? source->missing() : 0},
                         {"profiles", t.profiles},
                         {"dropped", t.dropped[0] + t.dropped[1] + t.dropped[2]},
                         {"series", publisher ? publisher->series() : std::string("(not streaming)")}};
  const char* kinds[] = {"synthetic", "file (recording)", "camera"};
  head["source"] = kinds[static_cast<int>(cfg.source)];
  if (cfg.source != SourceKind::Camera)
    head["camera"] = "none";
  else if (auto degraded = camera.degraded(cfg.camera.reconnect_interval))
    head["camera"] = *degraded;
  else
    head["camera"] = camera.connected() ? "connected" : "opening";
  return head;
}

}  // namespace stripeline::daemon
