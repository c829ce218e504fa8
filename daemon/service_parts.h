#pragma once
// What the single-head daemon (daemon.cpp) and the daemon of several heads
// (heads.cpp) take alike from a configuration.
#include <memory>
#include <optional>
#include <string>

#include "app/config.h"
#include "daemon/daemon_metrics.h"
#include "daemon/http_server.h"
#include "daemon/instrumented_source.h"
#include "streaming/publisher.h"

namespace stripeline::daemon {

// The process's start, UTC ("20261126T093000Z"): every scan file name starts with it.
std::string utc_stamp();

// [http]'s limits for the server.
HttpLimits http_limits(const HttpConfig& h);

// The publisher a configuration streams with: its section, with the
// output's height code and filters, the filters on the processing backend.
std::optional<PublisherConfig> stream_of(const Config& c);

// A publisher for `config`, bound again where its endpoint was just
// released: the old socket closes asynchronously, so a busy endpoint is
// retried for up to 3 s (InputError after that; ConfigError at once).
std::unique_ptr<Publisher> bind_publisher(const PublisherConfig& config);

// One head's counters for the metrics: its source (null between scans), its
// publisher (null when it streams nothing), its health and camera, and the
// server's counters where this head reports them.
DaemonSnapshot snapshot_of(const InstrumentedSource* source, Publisher* publisher, bool healthy, bool camera_connected,
                           std::optional<HttpServer::Stats> http);

}  // namespace stripeline::daemon
