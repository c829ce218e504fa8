#pragma once
// The live viewer of a daemon of several heads (daemon/heads.h; docs/daemon.md
// "Live viewer", "Several heads"): one ViewerFeed per head (a sink of that
// head's pipeline, beside its scans), with [merge] one more for the merged
// series (fed by a subscriber of the merge's own published stream on
// loopback, so the viewer sees the rows the merged stream carries), and the
// one ViewerHub that serves them all, one channel each ("row" and "info"
// events name the head; the page makes a panel per head, and one for
// the merged series, kMergedChannel).
//
// Thread-safety: feed() before start(); start() once, from the thread that
// makes the HTTP server; the destructor stops the hub and the merged tap
// (before anything the health callback reads goes).
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "app/service_config.h"
#include "daemon/http_server.h"
#include "daemon/metrics.h"
#include "daemon/viewer_feed.h"
#include "daemon/viewer_hub.h"

namespace stripeline::daemon {

class HeadsViewer {
 public:
  HeadsViewer(const std::vector<std::string>& heads, bool merged);
  ~HeadsViewer();
  HeadsViewer(const HeadsViewer&) = delete;
  HeadsViewer& operator=(const HeadsViewer&) = delete;

  // Head i's feed (stable while the viewer lives).
  ViewerFeed& feed(std::size_t head) { return *feeds_.at(head); }

  // Starts the hub (health(): "state" and "heads", viewer_status.h) and,
  // with [merge], the merged tap that follows merged_endpoint() ("" while no
  // merged series runs); adds the viewer's routes and /events to the server's.
  void start(Registry& registry, const HttpConfig& http, std::function<std::string()> health, std::function<std::string()> merged_endpoint,
             std::map<std::string, HttpServer::Handler>& routes, std::map<std::string, HttpServer::StreamHandler>& streams);

 private:
  class MergedTap;
  std::vector<std::string> names_;
  std::vector<std::unique_ptr<ViewerFeed>> feeds_;  // the heads', then the merged series'
  bool merged_;
  std::unique_ptr<ViewerHub> hub_;
  std::unique_ptr<MergedTap> tap_;
};

}  // namespace stripeline::daemon
