#include "daemon/viewer_assets.h"

#include <viewer_assets_embedded.h>  // generated at build time from web/viewer/*

#include <fmt/format.h>

#include <string_view>

#include "io/colour_map.h"

namespace stripeline::daemon {

namespace {

std::string embedded(std::string_view name) {
  for (const auto& f : viewer_embedded::files)
    if (name == f.name) return std::string(reinterpret_cast<const char*>(f.bytes), f.size);
  return {};  // not reached: the names below are the files of web/viewer (a missing one fails the viewer's test)
}

HttpServer::Handler file(std::string name, std::string type) {
  auto body = std::make_shared<const std::string>(embedded(name));
  return [body, type] { return HttpResponse{200, *body, type}; };
}

}  // namespace

std::map<std::string, HttpServer::Handler> viewer_routes() {
  const io::Rgb8 no = io::kNoDataColour;
  auto map = std::make_shared<const std::string>(
      fmt::format("// io/colour_map.h: the one colour map of heights, low to high, and the no-data colour.\n"
                  "window.STRIPELINE_COLOUR_MAP = {};\nwindow.STRIPELINE_NO_DATA_COLOUR = [{}, {}, {}];\n",
                  io::height_colour_map_json(), no.r, no.g, no.b));
  return {
      {"/", file("index.html", "text/html; charset=utf-8")},
      {"/viewer.js", file("viewer.js", "text/javascript; charset=utf-8")},
      {"/viewer.css", file("viewer.css", "text/css; charset=utf-8")},
      {"/favicon.svg", file("favicon.svg", "image/svg+xml")},
      {"/colour-map.js", [map] { return HttpResponse{200, *map, "text/javascript; charset=utf-8"}; }},
  };
}

}  // namespace stripeline::daemon
