// `stripeline subscribe ENDPOINT`: receive a stripeline stream (docs/wire-format.md),
// report every gap in seq, and assemble the rows of one series into a PLY
// point cloud and/or a 16-bit height map.
//
// It follows the first series it sees and stops at its series-end, or after
// --rows rows; --timeout bounds the whole wait (exit 3 when it passes).
// Exit codes: 0 ok; 2 bad usage; 3 timeout; 4 gaps with --fail-on-gap.
#include <spdlog/spdlog.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "core/errors.h"
#include "core/fixed_point.h"
#include "io/image_writer.h"
#include "io/ply_writer.h"
#include "pipeline/publisher.h"
#include "pipeline/wire_format.h"
#include "tools/commands.h"

namespace stripeline::tools {

namespace {

struct Flags {
  std::string endpoint, ply, heightmap, server_key, client_key;
  std::uint64_t rows = 0;
  double timeout = 30.0;
  int rcv_hwm = 1000;
  bool ascii = false, fail_on_gap = false, quiet = false;
};

void write_outputs(const Flags& f, const std::map<std::uint64_t, wire::RowBlock>& blocks, const LinearCalibration& cal, int height_bits) {
  if (blocks.empty()) return;
  if (!f.ply.empty()) {
    io::PlyWriter writer(f.ply, f.ascii ? io::PlyEncoding::Ascii : io::PlyEncoding::BinaryLittleEndian,
                         {"stripeline subscribe", std::string("units ") + cal.unit()});
    std::vector<io::PlyVertex> row;
    for (const auto& [start, b] : blocks)
      for (int r = 0; r < b.rows; ++r) {
        row.clear();
        const double frame = cal.enabled && cal.y_from_encoder && b.encoder[r] ? static_cast<double>(*b.encoder[r])
                                                                                  : static_cast<double>(b.index + static_cast<std::uint64_t>(r));
        const float y = static_cast<float>(cal.y(frame));
        for (int x = 0; x < b.width; ++x)
          for (int s = 0; s < b.slots; ++s) {
            const std::size_t i = (static_cast<std::size_t>(r) * b.slots + s) * b.width + x;
            if (std::isnan(b.z[i])) continue;
            row.push_back({static_cast<float>(cal.x(x)), y, b.z[i], static_cast<float>(b.intensity[i])});
          }
        writer.write(row.data(), row.size());
      }
    writer.finish();
  }
  if (!f.heightmap.empty()) {
    const std::uint64_t first = blocks.begin()->first;
    const auto& last = *blocks.rbegin();
    const std::uint64_t rows = last.first + static_cast<std::uint64_t>(last.second.rows) - first;
    const int width = blocks.begin()->second.width;
    std::vector<std::uint16_t> codes(rows * static_cast<std::size_t>(width), 0);  // rows never received stay 0 = no detection
    for (const auto& [start, b] : blocks)
      for (int r = 0; r < b.rows; ++r)
        for (int x = 0; x < b.width && x < width; ++x) {
          const float z = b.z[static_cast<std::size_t>(r) * b.slots * b.width + x];  // slot 0: the primary peak
          if (std::isnan(z)) continue;
          const double row_px = cal.enabled ? (z - cal.z_offset) / cal.z_scale : z;
          const auto pos = static_cast<std::int32_t>(std::lround(row_px * kPositionOne));
          codes[(start - first + static_cast<std::uint64_t>(r)) * width + x] = encode_height(pos, height_bits);
        }
    io::write_image(f.heightmap, codes.data(), width, static_cast<std::int64_t>(rows), PixelFormat::Mono16);
  }
}

int subscribe(const Flags& f) {
  zmq::context_t ctx(1);
  zmq::socket_t sock(ctx, zmq::socket_type::sub);
  sock.set(zmq::sockopt::rcvhwm, f.rcv_hwm);
  sock.set(zmq::sockopt::linger, 0);
  if (!f.server_key.empty() || !f.client_key.empty()) {
    if (f.server_key.empty() || f.client_key.empty()) throw InputError("--server-key and --client-key go together (CURVE)");
    if (!curve_available()) throw InputError("this libzmq was built without CURVE");
    const std::string server = read_curve_key(f.server_key, false);
    const std::string secret = read_curve_key(f.client_key, true);
    char pub[41];
    if (zmq_curve_public(pub, secret.c_str()) != 0) throw InputError(f.client_key + ": not a valid CURVE secret key");
    sock.set(zmq::sockopt::curve_serverkey, server);
    sock.set(zmq::sockopt::curve_publickey, std::string(pub));
    sock.set(zmq::sockopt::curve_secretkey, secret);
  }
  try {
    sock.connect(f.endpoint);
  } catch (const zmq::error_t& e) {
    throw InputError(f.endpoint + ": cannot connect (" + e.what() + ")");
  }
  sock.set(zmq::sockopt::subscribe, "");

  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  const auto deadline = f.timeout > 0 ? start + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(f.timeout))
                                      : clock::time_point::max();
  wire::GapTracker gaps;
  std::string series;  // the one being assembled
  std::map<std::uint64_t, wire::RowBlock> blocks;  // by series_row
  std::uint64_t rows = 0, missing_rows = 0, messages = 0, bytes = 0;
  std::optional<nlohmann::json> end;
  LinearCalibration cal;
  int height_bits = kDefaultHeightCodeBits;
  bool timed_out = false;

  while (true) {
    if (f.rows && rows >= f.rows) break;
    if (end) break;
    const auto now = clock::now();
    if (now >= deadline) {
      timed_out = true;
      break;
    }
    const auto wait = std::min<clock::duration>(deadline - now, std::chrono::milliseconds(200));
    zmq::pollitem_t item{sock.handle(), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&item, 1, std::chrono::duration_cast<std::chrono::milliseconds>(wait) + std::chrono::milliseconds(1)) <= 0) continue;
    std::vector<zmq::message_t> msg;
    if (!zmq::recv_multipart(sock, std::back_inserter(msg), zmq::recv_flags::dontwait)) continue;
    std::vector<std::string> parts;
    for (auto& m : msg) {
      bytes += m.size();
      parts.push_back(m.to_string());
    }
    wire::Decoded d;
    try {
      d = wire::decode(parts);
    } catch (const InputError& e) {
      std::fprintf(stderr, "stripeline: subscribe: skipped a malformed message: %s\n", e.what());
      continue;
    }
    ++messages;
    if (series.empty()) {
      series = d.series;
      if (d.seq != 0)
        std::fprintf(stderr, "stripeline: subscribe: joined series %s at seq %llu (its earlier messages were sent before we subscribed)\n",
                     series.c_str(), static_cast<unsigned long long>(d.seq));
    }
    if (d.series != series) {
      if (!f.quiet) std::fprintf(stderr, "stripeline: subscribe: ignoring series %s (assembling %s)\n", d.series.c_str(), series.c_str());
      continue;
    }
    if (auto g = gaps.observe(d.series, d.seq))
      std::fprintf(stderr, "stripeline: subscribe: gap: series %s seq %llu..%llu missing (%llu messages)\n", g->series.c_str(),
                   static_cast<unsigned long long>(g->first_missing), static_cast<unsigned long long>(g->first_missing + g->count - 1),
                   static_cast<unsigned long long>(g->count));
    switch (d.topic) {
      case wire::Topic::SeriesStart:
        cal = wire::calibration_from_json(d.header.value("calibration", nlohmann::json::object()));
        height_bits = d.header.value("height_bits", kDefaultHeightCodeBits);
        if (!f.quiet)
          std::printf("series %s started: %s, width %d, %s\n", series.c_str(), d.header.value("source", "?").c_str(),
                      d.header.value("width", 0), cal.unit());
        break;
      case wire::Topic::Profile: {
        cal = d.calibration;
        height_bits = d.header.value("height_bits", height_bits);
        wire::RowBlock& b = *d.rows;
        if (f.rows && rows + static_cast<std::uint64_t>(b.rows) > f.rows) {  // keep exactly --rows rows
          const int keep = static_cast<int>(f.rows - rows);
          const std::size_t n = static_cast<std::size_t>(keep) * b.slots * b.width;
          b.rows = keep;
          b.z.resize(n), b.intensity.resize(n), b.stripe_width.resize(n);
          b.frame_ids.resize(keep), b.timestamps_ns.resize(keep), b.encoder.resize(keep), b.missing.resize(keep);
        }
        rows += static_cast<std::uint64_t>(b.rows);
        for (const auto m : b.missing) missing_rows += m ? 1 : 0;
        blocks.emplace(b.series_row, std::move(b));
        break;
      }
      case wire::Topic::SeriesEnd:
        end = d.header;
        break;
      case wire::Topic::Heightmap:
      case wire::Topic::Stats:
        break;
    }
  }
  const double seconds = std::chrono::duration<double>(clock::now() - start).count();
  write_outputs(f, blocks, cal, height_bits);

  std::printf("received %llu rows (%llu marked missing: frames lost at the source) in %llu messages (%.1f MB, %.1f s) from series %s; gaps %zu (%llu messages missing)\n",
              static_cast<unsigned long long>(rows), static_cast<unsigned long long>(missing_rows), static_cast<unsigned long long>(messages),
              bytes / 1e6, seconds,
              series.empty() ? "-" : series.c_str(), gaps.gaps().size(), static_cast<unsigned long long>(gaps.missing()));
  if (end) {
    const auto published = end->value("profile_rows", std::uint64_t{0});
    const auto dropped = end->value("rows_dropped", nlohmann::json::object());
    std::printf("series-end (%s): %llu rows published, rows dropped by the sender: hwm %llu, no_subscriber %llu, error %llu; %s\n",
                end->value("reason", "?").c_str(), static_cast<unsigned long long>(published),
                static_cast<unsigned long long>(dropped.value("hwm", 0ull)), static_cast<unsigned long long>(dropped.value("no_subscriber", 0ull)),
                static_cast<unsigned long long>(dropped.value("error", 0ull)),
                rows == published && gaps.missing() == 0 ? "complete: every published row received" : "INCOMPLETE");
  }
  if (!f.quiet) {
    if (!f.ply.empty() && !blocks.empty()) std::printf("  wrote %s\n", f.ply.c_str());
    if (!f.heightmap.empty() && !blocks.empty()) std::printf("  wrote %s\n", f.heightmap.c_str());
  }
  if (timed_out) {
    std::fprintf(stderr, "stripeline: subscribe: timed out after %.1f s (%s)\n", f.timeout,
                 f.rows ? ("waiting for " + std::to_string(f.rows) + " rows").c_str() : "waiting for series-end");
    return 3;
  }
  if (f.fail_on_gap && (gaps.missing() > 0 || (end && rows != end->value("profile_rows", std::uint64_t{0})))) return 4;
  return 0;
}

}  // namespace

Subcommand add_subscribe(CLI::App& app) {
  auto* sub = app.add_subcommand("subscribe", "Receive a stripeline stream, report gaps, assemble rows into a PLY / height map");
  auto f = std::make_shared<Flags>();
  sub->add_option("endpoint", f->endpoint, "Publisher endpoint, e.g. tcp://127.0.0.1:5556")->required();
  sub->add_option("--ply", f->ply, "Write the received rows as a point cloud here");
  sub->add_flag("--ascii", f->ascii, "ASCII PLY instead of binary little-endian");
  sub->add_option("--heightmap", f->heightmap, "Write the received rows as a 16-bit height map here (.png or .tif); missing rows are 0");
  sub->add_option("--rows", f->rows, "Stop after this many rows (default: at the series' end)");
  sub->add_option("--timeout", f->timeout, "Give up after this many seconds, exit 3 (0 = wait forever; default 30)");
  sub->add_option("--rcv-hwm", f->rcv_hwm, "Receive high-water mark, messages (default 1000)");
  sub->add_option("--server-key", f->server_key, "CURVE: the publisher's public key file");
  sub->add_option("--client-key", f->client_key, "CURVE: this client's secret key file (mode 0600; its public key must be allowed)");
  sub->add_flag("--fail-on-gap", f->fail_on_gap, "Exit 4 when any message or row was missed");
  sub->add_flag("-q,--quiet", f->quiet, "Only the summary");
  return {sub, [f] { return subscribe(*f); }};
}

}  // namespace stripeline::tools
