// A hostile publisher (issue 14): `stripeline subscribe` is fed a good series
// with one crafted message in the middle, for each case below, over ipc.
// Every case: no crash, exit 0, the bad message skipped and counted under its
// reason in one line, and the good rows around it decoded: the height map is
// pixel for pixel the one a clean run of the same good messages writes.
// Loopback/ipc only; the publisher waits for the subscription (XPUB) instead
// of sleeping, and every wait has a deadline.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "io/image_reader.h"
#include "streaming/wire_format.h"
#include "test_helpers.h"

using namespace stripeline;
using namespace std::chrono_literals;
using test::TempDir;
using Json = nlohmann::json;
using Parts = std::vector<std::string>;

namespace {

constexpr int kWidth = 6;
const std::string kSeries = "6f1c2a8e-1b2c-4d3e-8f40-0123456789ab";

wire::RowBlock block(std::uint64_t series_row, int rows, int width = kWidth, int slots = 1) {
  wire::RowBlock b;
  b.clear(width, slots);
  b.series_row = series_row;
  b.index = 50 + series_row;
  b.rows = rows;
  for (int r = 0; r < rows; ++r) {
    b.frame_ids.push_back(700 + series_row + r);
    b.timestamps_ns.push_back(1000 * static_cast<std::int64_t>((series_row + r) % 1000000));  // no overflow for series_row 2^60
    b.encoder.push_back(std::nullopt);
    b.missing.push_back(0);
    for (int s = 0; s < slots; ++s)
      for (int x = 0; x < width; ++x) {
        b.z.push_back(x == 2 ? std::numeric_limits<float>::quiet_NaN() : 3.5f + static_cast<float>(series_row + r) + 0.25f * x);
        b.intensity.push_back(100);
        b.stripe_width.push_back(2);
        b.quality.push_back(9);
      }
  }
  return b;
}

// The block with carried points (format 1.2): X = column, dY = 0, Z = z
// where z has a detection, NaN elsewhere; motion_y = 0.1 mm per row.
wire::RowBlock with_points(wire::RowBlock b) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (std::size_t i = 0; i < b.z.size(); ++i) {
    const bool point = !std::isnan(b.z[i]);
    b.points.insert(b.points.end(), {point ? static_cast<float>(i % b.width) : nan, point ? 0.0f : nan, point ? b.z[i] : nan});
  }
  for (int r = 0; r < b.rows; ++r) b.motion_y.push_back(0.1 * static_cast<double>(b.series_row + r));
  return b;
}

Parts profile(std::uint64_t seq, const wire::RowBlock& b) {
  Json h = wire::base_header(wire::Topic::Profile, kSeries, seq);
  h["calibration"] = wire::calibration_json(LinearCalibration{});
  h["unit"] = "px";
  h["height_bits"] = 6;
  return wire::encode_rows(wire::Topic::Profile, h, b).strings();
}

Json start_header() {
  Json h = wire::base_header(wire::Topic::SeriesStart, kSeries, 0);
  h["source"] = "hostile";
  h["backend"] = "cpu";
  h["method"] = "cog";
  h["width"] = kWidth;
  h["frame_height"] = 32;
  h["pixel_format"] = "Mono8";
  h["slots"] = 1;
  h["rows_per_message"] = 2;
  h["heightmap_rows"] = 0;
  h["calibration"] = wire::calibration_json(LinearCalibration{});
  h["unit"] = "px";
  h["height_bits"] = 6;
  h["format"] = wire::kFormatVersion;
  return h;
}

Json end_header(std::uint64_t seq) {
  Json h = wire::base_header(wire::Topic::SeriesEnd, kSeries, seq);
  h["profile_rows"] = 4;
  h["profile_messages"] = 2;
  h["rows_in"] = 4;
  h["rows_dropped"] = {{"hwm", 0}, {"no_subscriber", 0}, {"error", 0}};
  h["messages"] = seq + 1;
  h["reason"] = "complete";
  return h;
}

Parts control(wire::Topic t, const Json& h) { return wire::encode_control(t, h).strings(); }

// A profile message at seq 2 with its header edited.
Parts bad_profile(const std::function<void(Json&)>& edit, std::uint64_t series_row = 2, int rows = 2) {
  Parts p = profile(2, block(series_row, rows));
  Json h = Json::parse(p[1]);
  edit(h);
  p[1] = h.dump();
  return p;
}
Parts with_header(const std::string& topic, const std::function<void(Json&)>& edit) {
  const wire::Topic t = *wire::parse_topic(topic);
  Json h = t == wire::Topic::SeriesEnd ? end_header(2) : t == wire::Topic::SeriesStart ? start_header() : wire::base_header(t, kSeries, 2);
  h["seq"] = 2;
  edit(h);
  return control(t, h);
}

struct Case {
  std::string name;
  Parts bad;            // sent at seq 2, between the good rows 0-1 (seq 1) and 2-3 (seq 3)
  std::string reason;   // the reason it is counted under
  bool replaces_start = false;  // sent instead of the series-start (a bad series-start)
};

std::vector<Case> cases() {
  std::vector<Case> c;
  const auto prof = [&](std::string name, std::function<void(Json&)> edit, std::string reason) {
    c.push_back({std::move(name), bad_profile(edit), std::move(reason)});
  };
  // Rows that do not fit the series (the heap overflows and allocation).
  c.push_back({"block overlapping rows already received", profile(2, block(0, 2)), "overlap"});
  c.push_back({"long block overlapping by one row", profile(2, block(1, 2)), "overlap"});
  c.push_back({"block far beyond the rows so far", profile(2, block(1000, 2)), "series-row"});
  c.push_back({"series_row 2^40", profile(2, block(std::uint64_t{1} << 40, 2)), "series-row"});
  c.push_back({"series_row 2^60", profile(2, block(std::uint64_t{1} << 60, 2)), "range"});
  c.push_back({"wider block", profile(2, block(2, 2, kWidth + 1)), "geometry"});
  c.push_back({"narrower block", profile(2, block(2, 2, kWidth - 1)), "geometry"});
  c.push_back({"more slots", profile(2, block(2, 2, kWidth, 2)), "geometry"});
  c.push_back({"more rows than rows_per_message", profile(2, block(2, 3)), "shape"});
  prof("width 0", [](Json& h) { h["width"] = 0; }, "range");
  prof("rows 2^31", [](Json& h) { h["rows"] = std::uint64_t{1} << 31; }, "range");
  prof("rows -1", [](Json& h) { h["rows"] = -1; }, "range");
  prof("height_bits 100", [](Json& h) { h["height_bits"] = 100; }, "range");
  prof("height_bits -92", [](Json& h) { h["height_bits"] = -92; }, "range");
  prof("height_bits a string", [](Json& h) { h["height_bits"] = "6"; }, "field");
  prof("rows a float", [](Json& h) { h["rows"] = 2.0; }, "field");
  prof("frame_ids one short", [](Json& h) { h["frame_ids"].erase(1); }, "shape");
  prof("frame_ids strings", [](Json& h) { h["frame_ids"] = {"a", "b"}; }, "field");
  prof("frame_ids negative", [](Json& h) { h["frame_ids"] = {-1, 2}; }, "field");
  prof("timestamps_ns above int64", [](Json& h) { h["timestamps_ns"] = {std::numeric_limits<std::uint64_t>::max(), 1}; }, "range");
  prof("encoder a string", [](Json& h) { h["encoder"] = {"x", nullptr}; }, "field");
  prof("encoder not a list", [](Json& h) { h["encoder"] = 5; }, "field");
  prof("missing_rows out of range", [](Json& h) { h["missing_rows"] = {99}; }, "range");
  prof("missing_rows an object", [](Json& h) { h["missing_rows"] = Json::object(); }, "field");
  prof("calibration z_scale 0", [](Json& h) { h["calibration"]["enabled"] = true, h["calibration"]["z_scale"] = 0.0; }, "range");
  prof("calibration x_scale a string", [](Json& h) { h["calibration"]["x_scale"] = "a"; }, "field");
  prof("calibration enabled a number", [](Json& h) { h["calibration"]["enabled"] = 1; }, "field");
  prof("parts with a wrong dtype", [](Json& h) { h["parts"][0]["dtype"] = "<f8"; }, "shape");
  prof("parts with a wrong shape", [](Json& h) { h["parts"][1]["shape"] = {2, 1, 99}; }, "shape");
  prof("series_row negative", [](Json& h) { h["series_row"] = -1; }, "range");
  prof("unit furlongs", [](Json& h) { h["unit"] = "furlongs"; }, "field");
  {
    Parts p = profile(2, block(2, 2));
    p[2].pop_back();
    c.push_back({"z one byte short", p, "size"});
    p = profile(2, block(2, 2));
    p[5] += "xx";
    c.push_back({"quality too long", p, "size"});
    p = profile(2, block(2, 2));
    p.resize(4);
    c.push_back({"4 parts", p, "parts"});
    p = profile(2, block(2, 2));
    const float inf = std::numeric_limits<float>::infinity();
    std::memcpy(p[2].data() + 4, &inf, 4);
    c.push_back({"z infinite", p, "values"});
    p = profile(2, block(2, 2));
    p.push_back("extra");
    c.push_back({"7 parts", p, "parts"});
  }
  {  // The carried points (format 1.2): sizes, values, descriptions.
    const auto pts = [] { return profile(2, with_points(block(2, 2))); };
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    Parts p = pts();
    p[6].pop_back();
    c.push_back({"points one byte short", p, "size"});
    p = pts();
    p[7] += std::string(8, '\0');
    c.push_back({"motion_y one row too long", p, "size"});
    p = pts();
    std::memcpy(p[6].data() + 4, &nan, 4);  // point 0's dY only
    c.push_back({"a point partly NaN", p, "values"});
    p = pts();
    std::memcpy(p[6].data() + 8, &inf, 4);
    c.push_back({"a point with an infinite Z", p, "values"});
    p = pts();
    const float one = 1.0f;
    for (int k = 0; k < 3; ++k) std::memcpy(p[6].data() + (3 * 2 + k) * 4, &one, 4);  // column 2 has no detection
    c.push_back({"a point where z has no detection", p, "values"});
    p = pts();
    const double dnan = std::numeric_limits<double>::quiet_NaN();
    std::memcpy(p[7].data() + 8, &dnan, 8);
    c.push_back({"motion_y NaN", p, "values"});
    p = pts();
    Json h = Json::parse(p[1]);
    h["parts"][4]["shape"] = {2, 1, kWidth};
    p[1] = h.dump();
    c.push_back({"points described without their 3 coordinates", p, "shape"});
    p = pts();
    h = Json::parse(p[1]);
    h["parts"][5]["dtype"] = "<f4";
    p[1] = h.dump();
    c.push_back({"motion_y described as float32", p, "shape"});
    p = pts();
    h = Json::parse(p[1]);
    h["parts"].erase(5);
    p[1] = h.dump();
    c.push_back({"8 parts, 5 described", p, "shape"});
    p = pts();
    h = Json::parse(p[1]);
    h["point_unit"] = 1;
    p[1] = h.dump();
    c.push_back({"point_unit a number", p, "field"});
  }
  // Headers: seq, series, htype, JSON.
  prof("seq -1", [](Json& h) { h["seq"] = -1; }, "range");
  prof("seq 1.5", [](Json& h) { h["seq"] = 1.5; }, "field");
  prof("seq missing", [](Json& h) { h.erase("seq"); }, "field");
  prof("seq backwards (1 again)", [](Json& h) { h["seq"] = 1; }, "seq");
  prof("series with a newline", [](Json& h) { h["series"] = "abc\ndef"; }, "field");
  prof("series 200 characters", [](Json& h) { h["series"] = std::string(200, 'a'); }, "field");
  prof("series a number", [](Json& h) { h["series"] = 7; }, "field");
  prof("htype major 2", [](Json& h) { h["htype"] = "stripeline-profile-2.0"; }, "version");
  prof("htype major -2", [](Json& h) { h["htype"] = "stripeline-profile--2.0"; }, "version");
  prof("htype of another topic", [](Json& h) { h["htype"] = "stripeline-heightmap-1.1"; }, "htype");
  prof("htype a number", [](Json& h) { h["htype"] = 1; }, "htype");
  prof("time_ns a string", [](Json& h) { h["time_ns"] = "now"; }, "field");
  {
    Parts p = profile(2, block(2, 2));
    p[1] = "{\"htype\": \"stripeline-profile-1.1\", \"seq\": 2,";
    c.push_back({"header not JSON", p, "header"});
    p[1] = "[1, 2]";
    c.push_back({"header an array", p, "header"});
    p[1] = std::string(20000, '[') + std::string(20000, ']');
    c.push_back({"header nested 20000 deep", p, "header"});
    p[1] = "{\"htype\": NaN}";
    c.push_back({"header with NaN", p, "header"});
    p[1] = std::string("\xff\xfe\x00\x01", 4);
    c.push_back({"header binary", p, "header"});
    c.push_back({"unknown topic", Parts{"profiles", profile(2, block(2, 2))[1]}, "topic"});
    c.push_back({"topic with control bytes", Parts{std::string("\x1b[2Jprofile"), "{}"}, "topic"});
    c.push_back({"one part", Parts{"profile"}, "parts"});
  }
  // series-end and stats of the wrong types (the uncaught JSON errors).
  c.push_back({"series-end profile_rows a string", with_header("series-end", [](Json& h) { h["profile_rows"] = "4"; }), "field"});
  c.push_back({"series-end rows_dropped an array", with_header("series-end", [](Json& h) { h["rows_dropped"] = {1, 2}; }), "field"});
  c.push_back({"series-end reason a number", with_header("series-end", [](Json& h) { h["reason"] = 7; }), "field"});
  c.push_back({"series-end rows_dropped.hwm -1", with_header("series-end", [](Json& h) { h["rows_dropped"]["hwm"] = -1; }), "range"});
  c.push_back({"stats with a string count", with_header("stats", [](Json& h) { h["series_rows_in"] = "x"; }), "field"});
  c.push_back({"a second series-start", with_header("series-start", [](Json&) {}), "repeated"});
  // Bad series-starts (sent instead of the good one): the rows still arrive.
  const auto start = [&](std::string name, std::function<void(Json&)> edit, std::string reason) {
    Json h = start_header();
    edit(h);
    c.push_back({std::move(name), control(wire::Topic::SeriesStart, h), std::move(reason), true});
  };
  start("series-start height_bits 9", [](Json& h) { h["height_bits"] = 9; }, "range");
  start("series-start frame_height 5000", [](Json& h) { h["frame_height"] = 5000; }, "range");
  start("series-start frame_height beyond the code", [](Json& h) { h["frame_height"] = 2000; }, "range");
  start("series-start width a string", [](Json& h) { h["width"] = "6"; }, "field");
  start("series-start calibration a string", [](Json& h) { h["calibration"] = "yes"; }, "field");
  start("series-start sheet_calibration incomplete", [](Json& h) { h["sheet_calibration"] = {{"model", 1}}; }, "field");
  start("series-start rows_per_message negative", [](Json& h) { h["rows_per_message"] = -2; }, "range");
  start("series-start points a string", [](Json& h) { h["points"] = "yes"; }, "field");
  return c;
}

// Publishes `messages` on an XPUB bound to `endpoint` once a subscriber has subscribed.
void publish(const std::string& endpoint, const std::vector<Parts>& messages) {
  zmq::context_t ctx(1);
  zmq::socket_t pub(ctx, zmq::socket_type::xpub);
  pub.set(zmq::sockopt::linger, 5000);
  pub.bind(endpoint);
  zmq::pollitem_t item{pub.handle(), 0, ZMQ_POLLIN, 0};
  ASSERT_GT(zmq::poll(&item, 1, 30s), 0) << "no subscriber within 30 s";
  zmq::message_t sub;
  ASSERT_TRUE(pub.recv(sub, zmq::recv_flags::dontwait));
  for (const auto& m : messages) {
    for (std::size_t i = 0; i < m.size(); ++i)
      pub.send(zmq::buffer(m[i]), i + 1 < m.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
  }
}

struct SubscribeRun {
  int rc = -1;
  std::string out;
  std::vector<std::byte> pixels;
};

SubscribeRun subscribe_to(const TempDir& dir, const std::string& tag, const std::vector<Parts>& messages) {
  const auto sock = std::filesystem::temp_directory_path() / ("stripeline-hostile-" + std::to_string(::getpid()) + ".sock");
  std::filesystem::remove(sock);
  const std::string endpoint = "ipc://" + sock.string();
  const auto png = dir / (tag + ".png");
  SubscribeRun r;
  std::thread child([&] { r.rc = test::run_cli("subscribe " + endpoint + " --heightmap " + png.string() + " --timeout 30", &r.out); });
  publish(endpoint, messages);
  child.join();
  std::filesystem::remove(sock);
  if (std::filesystem::exists(png)) {
    auto reader = io::open_image(png);
    r.pixels.resize(static_cast<std::size_t>(reader->info().width) * reader->info().height * 2);
    reader->read_rows(r.pixels.data(), reader->info().height);
  }
  return r;
}

std::vector<Parts> series_with(const Parts* bad, bool replaces_start) {
  std::vector<Parts> m;
  if (bad && replaces_start)
    m.push_back(*bad);
  else
    m.push_back(control(wire::Topic::SeriesStart, start_header()));
  m.push_back(profile(1, block(0, 2)));
  if (bad && !replaces_start) m.push_back(*bad);
  m.push_back(profile(3, block(2, 2)));
  m.push_back(control(wire::Topic::SeriesEnd, end_header(4)));
  return m;
}

}  // namespace

TEST(HostileStream, EveryCraftedMessageIsSkippedCountedAndNamedAndTheGoodRowsStillArrive) {
  TempDir dir;
  const SubscribeRun clean = subscribe_to(dir, "clean", series_with(nullptr, false));
  ASSERT_EQ(clean.rc, 0) << clean.out;
  ASSERT_NE(clean.out.find("received 4 rows"), std::string::npos) << clean.out;
  ASSERT_EQ(clean.out.find("malformed"), std::string::npos) << clean.out;
  ASSERT_EQ(clean.pixels.size(), kWidth * 4 * 2u);

  const auto all = cases();
  ASSERT_GE(all.size(), 30u);
  int n = 0;
  for (const Case& c : all) {
    SCOPED_TRACE(c.name);
    const SubscribeRun r = subscribe_to(dir, "case" + std::to_string(n++), series_with(&c.bad, c.replaces_start));
    EXPECT_EQ(r.rc, 0) << r.out;  // no crash, no exit on a message
    const std::string line = "skipped a malformed message (" + c.reason + "): wire: ";
    const auto at = r.out.find(line);
    EXPECT_NE(at, std::string::npos) << r.out;
    if (at != std::string::npos) {  // one printable line
      const std::string rest = r.out.substr(at, r.out.find('\n', at) - at);
      for (char ch : rest) EXPECT_TRUE(ch >= 0x20 && ch < 0x7F) << "unprintable byte in: " << rest;
    }
    EXPECT_NE(r.out.find("malformed messages skipped: 1 (" + c.reason + " 1)"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("received 4 rows"), std::string::npos) << r.out;
    EXPECT_EQ(r.pixels, clean.pixels) << "the good rows around the bad message were not all decoded";
  }
}

// All the crafted messages in one series, between good rows: each counted once.
TEST(HostileStream, OneSeriesWithEveryCraftedMessage) {
  TempDir dir;
  const auto all = cases();
  std::vector<Parts> m{control(wire::Topic::SeriesStart, start_header())};
  std::uint64_t seq = 1, row = 0, bad = 0;
  for (const Case& c : all) {
    if (c.replaces_start) continue;
    m.push_back(profile(seq++, block(row, 2)));
    row += 2;
    // The crafted message at the next seq (its own seq field as crafted for seq 2 is rewritten
    // where it is a number and the case is not about seq).
    Parts p = c.bad;
    if (p.size() >= 2 && c.reason != "seq" && c.name.rfind("seq", 0) != 0) {
      try {
        Json h = Json::parse(p[1]);
        if (h.is_object() && h.contains("seq") && h["seq"] == 2) h["seq"] = seq, p[1] = h.dump();
        if (h.is_object() && h.contains("series_row") && h["series_row"] == 2) h["series_row"] = row, p[1] = h.dump();
      } catch (const Json::exception&) {
      }
    }
    if (c.reason == "seq") {
      Json h = Json::parse(p[1]);
      h["seq"] = seq - 1;
      p[1] = h.dump();
    }
    m.push_back(p);
    ++seq;
    ++bad;
  }
  m.push_back(profile(seq++, block(row, 2)));
  row += 2;
  Json e = end_header(seq);
  e["profile_rows"] = row;
  m.push_back(control(wire::Topic::SeriesEnd, e));
  const SubscribeRun r = subscribe_to(dir, "all", m);
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("received " + std::to_string(row) + " rows"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("malformed messages skipped: " + std::to_string(bad) + " ("), std::string::npos) << r.out;
  EXPECT_EQ(r.pixels.size(), kWidth * row * 2) << r.out;
}
