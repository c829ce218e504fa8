#pragma once
// ViewerHub: the live viewer's pushed updates (GET /events, server-sent
// events; docs/daemon.md "Live viewer"). The HTTP server hands it the
// connection after the request (HttpServer's stream routes); from then on
// the hub's own thread writes to it, so viewers never hold the thread that
// answers /healthz and /metrics.
//
// The hub serves one or more channels, each a named ViewerFeed: the one head
// of a single-head daemon ("head"), or each head of a daemon of several and
// their merged series (kMergedChannel). About `rate` times a second it takes the
// next decimated row of each channel and encodes it once ("row" event, with
// the channel's name in "head"); once a second it sends "health" (the
// daemon's callback, each head's entry completed with its channel's rows/s,
// latency and calibration, plus the viewers' own counts), and "info" (per
// channel) when a new run began and to each new viewer. Each viewer has a
// queue of at most `queue_messages` messages per channel: a viewer that does not keep up
// loses its oldest unsent messages (counted in
// stripeline_viewer_messages_dropped_total), never the pipeline's time.
// Beyond `max_viewers` a new viewer is refused (503, counted).
//
// Thread-safety: adopt() from the HTTP thread; the rest is the hub's thread.
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "daemon/http_server.h"
#include "daemon/metrics.h"
#include "daemon/viewer_feed.h"

namespace stripeline::daemon {

// The merged series' channel: no head's name can be it (head names are
// letters, digits, - _ .).
inline constexpr const char* kMergedChannel = ":merged";

struct ViewerChannel {
  std::string name;  // "head" for the single head; a head's name; kMergedChannel
  ViewerFeed* feed = nullptr;
};

struct ViewerLimits {
  int max_viewers = 32;
  int queue_messages = 16;
  double rate = 25.0;  // row events per second, at most
};

class ViewerHub {
 public:
  // health(): a JSON object (text) describing the daemon: "state" and
  // "heads" (an array of objects with "name"; viewer_status.h); called once
  // a second from the hub's thread, so it must not wait long.
  ViewerHub(std::vector<ViewerChannel> channels, Registry& registry, ViewerLimits limits, std::function<std::string()> health);
  ~ViewerHub();
  ViewerHub(const ViewerHub&) = delete;
  ViewerHub& operator=(const ViewerHub&) = delete;

  // Takes the connection `fd` (non-blocking, after a GET /events): nullopt
  // when taken (the hub owns and closes it), else the refusal to answer.
  std::optional<HttpResponse> adopt(int fd);
  int viewers() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace stripeline::daemon
