#pragma once
// ViewerHub: the live viewer's pushed updates (GET /events, server-sent
// events; docs/daemon.md "Live viewer"). The HTTP server hands it the
// connection after the request (HttpServer's stream routes); from then on
// the hub's own thread writes to it, so viewers never hold the thread that
// answers /healthz and /metrics.
//
// About `rate` times a second the hub takes the newest decimated row from
// its ViewerFeed and encodes it once ("row" event); once a second it sends
// "health" (the daemon's callback, plus the viewers' own counts), and
// "info" when a new pipeline began and to each new viewer. Each viewer has a
// queue of at most `queue_messages` messages: a viewer that does not keep up
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

#include "daemon/http_server.h"
#include "daemon/metrics.h"
#include "daemon/viewer_feed.h"

namespace stripeline::daemon {

struct ViewerLimits {
  int max_viewers = 32;
  int queue_messages = 16;
  double rate = 25.0;  // row events per second, at most
};

class ViewerHub {
 public:
  // health(): a JSON object (text) describing the daemon; called once a
  // second from the hub's thread, so it must not wait long.
  ViewerHub(ViewerFeed& feed, Registry& registry, ViewerLimits limits, std::function<std::string()> health);
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
