// The live viewer's parts without a browser (the browser tests: tests/browser/):
// the feed's decimation and hand-off, and the hub's server-sent events behind
// the HTTP server (hand-over, refusal beyond max_viewers, security headers,
// probes answered while a viewer streams).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "app/config.h"
#include "core/errors.h"
#include "core/fixed_point.h"
#include "daemon/http_server.h"
#include "daemon/metrics.h"
#include "daemon/viewer_assets.h"
#include "daemon/viewer_feed.h"
#include "daemon/viewer_hub.h"
#include "io/colour_map.h"

using namespace stripeline;
using namespace std::chrono_literals;

namespace {

// One frame of `width` columns: column c has a peak at row c + 0.5 (1/256 px),
// intensity 10 c, quality 100 - c, except the columns in `empty`.
struct OneProfile {
  std::vector<std::int32_t> position;
  std::vector<std::uint16_t> intensity, stripe_width, quality;
  std::vector<std::uint8_t> count;
  std::vector<FrameMeta> meta;
  ProfileSpan span;
  OneProfile(int width, std::vector<int> empty, std::uint64_t index, int frames = 1) {
    for (int f = 0; f < frames; ++f)
    for (int c = 0; c < width; ++c) {
      const bool none = std::find(empty.begin(), empty.end(), c) != empty.end();
      position.push_back(none ? kNoPeak : c * 256 + 128);
      intensity.push_back(static_cast<std::uint16_t>(10 * c));
      stripe_width.push_back(3);
      quality.push_back(static_cast<std::uint16_t>(100 - c));
      count.push_back(none ? 0 : 1);
    }
    for (int f = 0; f < frames; ++f) meta.push_back(FrameMeta{index + 1000 + static_cast<std::uint64_t>(f), 0, 0, false, false});
    span.first_index = index;
    span.frames = frames;
    span.width = width;
    span.meta = meta.data();
    span.position = position.data();
    span.intensity = intensity.data();
    span.stripe_width = stripe_width.data();
    span.quality = quality.data();
    span.count = count.data();
  }
};

ScanInfo info_of(int width, bool calibrated) {
  ScanInfo info;
  info.layout = BatchLayout{width, 16, 1};
  info.calibration.enabled = calibrated;
  info.calibration.z_scale = 0.5;
  info.calibration.z_offset = 10;
  info.calibration.x_scale = 0.1;
  return info;
}

int connect_to(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Sends a GET and reads until `until` appears in what came back, the peer closes, or 5 s pass.
std::string get_until(int fd, const std::string& path, const std::string& until) {
  const std::string req = "GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n";
  (void)!::send(fd, req.data(), req.size(), MSG_NOSIGNAL);
  std::string got;
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  char buf[8192];
  while (got.find(until) == std::string::npos && std::chrono::steady_clock::now() < deadline) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    got.append(buf, static_cast<std::size_t>(n));
  }
  return got;
}

}  // namespace

TEST(ViewerFeed, DecimatesTheLastProfileIntoBinsWithNoDataWhereNoPointWasFound) {
  daemon::ViewerFeed feed(4, 1000.0);
  feed.begin(info_of(8, false));
  const auto info = feed.info();
  EXPECT_EQ(info.bins, 4);
  EXPECT_EQ(info.unit, "px");
  EXPECT_EQ(info.calibration, "none");
  EXPECT_DOUBLE_EQ(info.x0, 0.5);  // bin 0 holds columns 0 and 1
  EXPECT_DOUBLE_EQ(info.dx, 2.0);
  OneProfile p(8, {2, 3, 5}, 77);
  feed.consume(p.span);
  daemon::ViewerRow row;
  const std::uint64_t seq = feed.take(0, row);
  ASSERT_NE(seq, 0u);
  EXPECT_EQ(row.index, 77u);
  EXPECT_EQ(row.frame_id, 1077u);
  ASSERT_EQ(row.heights.size(), 4u);
  EXPECT_FLOAT_EQ(row.heights[0], 1.0f);  // rows 0.5 and 1.5
  EXPECT_TRUE(std::isnan(row.heights[1]));  // columns 2, 3: no peak
  EXPECT_FLOAT_EQ(row.heights[2], 4.5f);  // column 4 only
  EXPECT_FLOAT_EQ(row.intensity[2], 40.0f);
  EXPECT_FLOAT_EQ(row.quality[3], 100.0f - 7);  // the lowest of columns 6, 7
  EXPECT_TRUE(row.x.empty());
  EXPECT_EQ(feed.take(seq, row), 0u) << "nothing newer";
  EXPECT_EQ(feed.rows_seen(), 1u);
}

TEST(ViewerFeed, CalibratedHeightsAreInMillimetresAndRowsAreTakenAtMostAtTheRate) {
  daemon::ViewerFeed feed(1024, 1.0);  // at most one row a second
  feed.begin(info_of(6, true));
  EXPECT_EQ(feed.info().unit, "mm");
  EXPECT_EQ(feed.info().bins, 6);
  EXPECT_NEAR(feed.info().dx, 0.1, 1e-12);
  OneProfile a(6, {}, 1), b(6, {}, 2);
  feed.consume(a.span);
  feed.consume(b.span);  // within the second: not taken
  daemon::ViewerRow row;
  ASSERT_NE(feed.take(0, row), 0u);
  EXPECT_EQ(row.index, 1u);
  EXPECT_FLOAT_EQ(row.heights[3], static_cast<float>(0.5 * 3.5 + 10));
  EXPECT_EQ(feed.rows_seen(), 2u);
}

TEST(ViewerFeed, ABatchGivesRowsSpreadOverItTakenInOrderItsLastProfileLast) {
  daemon::ViewerFeed feed(1024, 25.0);
  feed.begin(info_of(4, false));
  OneProfile batch(4, {}, 100, 200);  // the first span: as many rows as the ring holds
  feed.consume(batch.span);
  daemon::ViewerRow row;
  std::uint64_t seq = 0;
  std::vector<std::uint64_t> indices;
  while (const std::uint64_t next = feed.take(seq, row)) {
    EXPECT_EQ(next, seq + 1);
    seq = next;
    indices.push_back(row.index);
  }
  ASSERT_EQ(indices.size(), static_cast<std::size_t>(daemon::ViewerFeed::kRing));
  EXPECT_TRUE(std::is_sorted(indices.begin(), indices.end()));
  EXPECT_EQ(indices.back(), 299u) << "the span's last profile";
  EXPECT_LT(indices.front(), 110u) << "spread over the span";
  // A new run: nothing of the old one is taken again.
  feed.begin(info_of(4, false));
  EXPECT_EQ(feed.take(seq, row), 0u);
}

TEST(ViewerHub, StreamsEventsOnItsOwnThreadRefusesBeyondTheLimitAndProbesStillAnswer) {
  daemon::Registry registry;
  daemon::ViewerFeed feed(1024, 1000.0);
  daemon::ViewerLimits limits;
  limits.max_viewers = 1;
  daemon::ViewerHub hub({{"head", &feed}}, registry, limits, [] { return std::string(R"({"state":"ok"})"); });
  auto routes = daemon::viewer_routes();
  routes["/healthz"] = [] { return daemon::HttpResponse{200, "ok\n"}; };
  daemon::HttpServer server("127.0.0.1", 0, routes, {}, {{"/events", [&](int fd) { return hub.adopt(fd); }}});

  const int viewer = connect_to(server.port());
  ASSERT_GE(viewer, 0);
  // A new viewer gets the last health at once; the next (once a second) counts it.
  std::string got = get_until(viewer, "/events", R"("viewers":1)");
  EXPECT_NE(got.find("HTTP/1.1 200 OK"), std::string::npos) << got;
  EXPECT_NE(got.find("Content-Type: text/event-stream"), std::string::npos);
  EXPECT_NE(got.find("Content-Security-Policy: default-src 'self'"), std::string::npos);
  EXPECT_NE(got.find(R"("state":"ok")"), std::string::npos) << got;

  // Rows reach the viewer as "row" events.
  feed.begin(info_of(8, false));
  OneProfile p(8, {1}, 5);
  feed.consume(p.span);
  char buf[8192];
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (got.find("event: row") == std::string::npos && std::chrono::steady_clock::now() < deadline) {
    const ssize_t n = ::recv(viewer, buf, sizeof buf, 0);
    if (n <= 0) break;
    got.append(buf, static_cast<std::size_t>(n));
  }
  EXPECT_NE(got.find("event: info"), std::string::npos);
  const auto at = got.find("event: row\ndata: ");
  ASSERT_NE(at, std::string::npos) << got;
  const auto data = nlohmann::json::parse(got.substr(at + 17, got.find('\n', at + 17) - at - 17));
  EXPECT_EQ(data["index"], 5);
  ASSERT_EQ(data["h"].size(), 8u);
  EXPECT_TRUE(data["h"][1].is_null());
  EXPECT_DOUBLE_EQ(data["h"][2].get<double>(), 2.5);

  // A second viewer is refused; the probe and the page are answered meanwhile.
  const int second = connect_to(server.port());
  const std::string refused = get_until(second, "/events", "try again later");
  EXPECT_NE(refused.find("HTTP/1.1 503"), std::string::npos) << refused;
  EXPECT_NE(refused.find("max_viewers = 1"), std::string::npos) << refused;
  ::close(second);
  const int probe = connect_to(server.port());
  EXPECT_NE(get_until(probe, "/healthz", "ok\n").find("HTTP/1.1 200"), std::string::npos);
  ::close(probe);
  const int page = connect_to(server.port());
  const std::string html = get_until(page, "/", "</html>");
  EXPECT_NE(html.find("Content-Type: text/html"), std::string::npos);
  EXPECT_NE(html.find("X-Frame-Options: DENY"), std::string::npos);
  EXPECT_NE(html.find("/viewer.js"), std::string::npos);
  ::close(page);
  const int map = connect_to(server.port());
  EXPECT_NE(get_until(map, "/colour-map.js", "NO_DATA_COLOUR").find(io::height_colour_map_json()), std::string::npos)
      << "the page is sent io/colour_map's table";
  ::close(map);
  ::close(viewer);
  const std::string metrics = registry.render();
  EXPECT_NE(metrics.find("stripeline_viewer_refused_total 1"), std::string::npos) << metrics;
}

TEST(ViewerFeed, GridRowsOfTheMergedSeriesAreDecimatedOnTheirWorldGrid) {
  daemon::ViewerFeed feed(4, 1000.0);
  feed.begin_grid(8, -2.0, 0.5, "mm", "merged");
  const auto info = feed.info();
  EXPECT_EQ(info.bins, 4);
  EXPECT_EQ(info.width, 8);
  EXPECT_EQ(info.unit, "mm");
  EXPECT_EQ(info.calibration, "merged");
  EXPECT_DOUBLE_EQ(info.x0, -1.75);  // cells 0 and 1: -2.0 and -1.5
  EXPECT_DOUBLE_EQ(info.dx, 1.0);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float z[8] = {1, 3, nan, nan, 5, nan, 7, 8};
  const std::uint64_t ids[1] = {9}, other[1] = {10};
  feed.consume_grid(42, ids, z, 1, 8, nullptr);
  feed.consume_grid(43, other, z, 1, 7, nullptr);  // not the grid begin_grid() said: ignored
  daemon::ViewerRow row;
  ASSERT_NE(feed.take(0, row), 0u);
  EXPECT_EQ(row.index, 42u);
  EXPECT_EQ(row.frame_id, 9u);
  EXPECT_FLOAT_EQ(row.heights[0], 2.0f);
  EXPECT_TRUE(std::isnan(row.heights[1]));
  EXPECT_FLOAT_EQ(row.heights[2], 5.0f);
  EXPECT_FLOAT_EQ(row.heights[3], 7.5f);
  EXPECT_TRUE(std::isnan(row.intensity[0]) && std::isnan(row.quality[0]));
  EXPECT_EQ(feed.rows_seen(), 1u);
}

TEST(ViewerHub, SeveralChannelsEachNameTheirHeadAndHealthCompletesEachHeadsEntry) {
  daemon::Registry registry;
  daemon::ViewerFeed left(1024, 1000.0), right(1024, 1000.0), merged(1024, 1000.0);
  daemon::ViewerHub hub({{"left", &left}, {"right", &right}, {daemon::kMergedChannel, &merged}}, registry, {}, [] {
    return std::string(R"({"state":"ok","heads":[{"name":"left","frames":1},{"name":"right","frames":2}],"merge":{"state":"merge: running"}})");
  });
  daemon::HttpServer server("127.0.0.1", 0, daemon::viewer_routes(), {}, {{"/events", [&](int fd) { return hub.adopt(fd); }}});
  left.begin(info_of(8, false));
  right.begin(info_of(4, true));
  merged.begin_grid(6, 0.0, 1.0, "mm", "merged");
  const int viewer = connect_to(server.port());
  ASSERT_GE(viewer, 0);
  std::string got = get_until(viewer, "/events", R"("viewers":1)");
  OneProfile a(8, {}, 5), b(4, {}, 6);
  left.consume(a.span);
  right.consume(b.span);
  const float z[6] = {1, 2, 3, 4, 5, 6};
  const std::uint64_t ids[1] = {7};
  merged.consume_grid(7, ids, z, 1, 6, nullptr);
  char buf[8192];
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  // (head, event) of every event whose data names a head, and the last health.
  auto events = [&] {
    std::vector<std::pair<std::string, nlohmann::json>> out;
    for (std::size_t at = got.find("event: "); at != std::string::npos; at = got.find("event: ", at + 1)) {
      const auto data = got.find("\ndata: ", at), end = got.find("\n\n", at);
      if (data == std::string::npos || end == std::string::npos || data > end) break;
      out.emplace_back(got.substr(at + 7, data - at - 7), nlohmann::json::parse(got.substr(data + 7, end - data - 7)));
    }
    return out;
  };
  auto has = [&](const char* kind, const std::string& head, int index) {
    for (const auto& [k, j] : events())
      if (k == kind && j.value("head", "") == head && (index < 0 || j.value("index", -1) == index)) return true;
    return false;
  };
  auto all_came = [&] {
    return has("row", "left", 5) && has("row", "right", 6) && has("row", daemon::kMergedChannel, 7) && got.find(R"("rows_per_s")") != std::string::npos;
  };
  while (!all_came() && std::chrono::steady_clock::now() < deadline) {
    const ssize_t n = ::recv(viewer, buf, sizeof buf, 0);
    if (n <= 0) break;
    got.append(buf, static_cast<std::size_t>(n));
  }
  ::close(viewer);
  for (const std::string head : {"left", "right", daemon::kMergedChannel}) {
    EXPECT_TRUE(has("info", head, -1)) << "the info of " << head << ": " << got;
    EXPECT_TRUE(has("row", head, -1)) << "a row of " << head << ": " << got;
  }
  EXPECT_TRUE(has("row", "left", 5) && has("row", "right", 6) && has("row", daemon::kMergedChannel, 7)) << got;
  // The last health event: each head's entry with its channel's figures, the merged series' under "merge".
  const auto at = got.rfind("event: health\ndata: ");
  ASSERT_NE(at, std::string::npos) << got;
  const auto h = nlohmann::json::parse(got.substr(at + 20, got.find('\n', at + 20) - at - 20));
  ASSERT_EQ(h["heads"].size(), 2u) << h.dump();
  EXPECT_EQ(h["heads"][0]["name"], "left");
  EXPECT_EQ(h["heads"][0]["frames"], 1);
  EXPECT_EQ(h["heads"][0]["calibration"], "none");
  EXPECT_EQ(h["heads"][1]["calibration"], "linear");
  EXPECT_TRUE(h["heads"][1].contains("rows_per_s"));
  EXPECT_EQ(h["merge"]["state"], "merge: running");
  EXPECT_EQ(h["merge"]["calibration"], "merged");
  EXPECT_TRUE(h["merge"].contains("rows_per_s"));
}

TEST(ViewerConfig, ViewerKeysParseAndAnOutOfRangeLimitIsRejectedNamingTheKey) {
  const Config c = parse_config("[http]\nviewer = false\nmax_viewers = 4\n", "t.toml");
  EXPECT_FALSE(c.http.viewer);
  EXPECT_EQ(c.http.max_viewers, 4);
  EXPECT_TRUE(parse_config("", "t.toml").http.viewer) << "on by default";
  for (const char* text : {"max_viewers = 0", "max_viewers = 1025"}) {
    try {
      parse_config(std::string("[http]\n") + text + "\n", "t.toml");
      ADD_FAILURE() << text << " accepted";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("http.max_viewers"), std::string::npos) << e.what();
    }
  }
}
