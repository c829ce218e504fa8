#pragma once
// The live viewer's page (web/viewer/*), built into the binary
// (cmake/embed_files.cmake), and the colour map it draws with
// (io/colour_map.h, served as /colour-map.js): the routes the daemon's HTTP
// server answers for it. Nothing is read from disk or fetched at run time.
#include <map>
#include <string>

#include "daemon/http_server.h"

namespace stripeline::daemon {

// "/" (index.html), "/viewer.js", "/viewer.css", "/favicon.svg", "/colour-map.js".
std::map<std::string, HttpServer::Handler> viewer_routes();

}  // namespace stripeline::daemon
