// `stripeline subscribe ENDPOINT`: receive a stripeline stream (docs/wire-format.md),
// report every gap in seq, and assemble the rows of one series into a PLY
// point cloud and/or a 16-bit height map.
//
// It follows the first series it sees and stops at its series-end, or after
// --rows rows; --timeout bounds the whole wait (exit 3 when it passes).
// Exit codes: 0 ok; 2 bad usage; 3 timeout; 4 gaps with --fail-on-gap.
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>

#include "app/outputs.h"
#include "app/run_session.h"
#include "calibration/calibration_file.h"
#include "core/errors.h"
#include "core/fixed_point.h"
#include "streaming/subscriber.h"
#include "streaming/wire_format.h"
#include "tools/calibration_flags.h"
#include "tools/commands.h"

namespace stripeline::tools {

namespace {

struct Flags {
  std::string endpoint, ply, heightmap, server_key, client_key;
  std::uint64_t rows = 0;
  double timeout = 30.0;
  int rcv_hwm = 1000;
  bool ascii = false, fail_on_gap = false, quiet = false;
  std::string calibration, roi_offset;  // --calibration / --roi-offset: map the rows with this file instead of the series'
  double y_step = 0.0;
};

// The files asked for, written by the same sinks a replay uses, with the
// series' height code.
OutputConfig outputs_of(const Flags& f, int height_bits) {
  OutputConfig o;
  o.dir = "";
  o.ply = f.ply;
  o.ply_encoding = f.ascii ? io::PlyEncoding::Ascii : io::PlyEncoding::BinaryLittleEndian;
  o.heightmap = f.heightmap;
  o.preview = o.summary = "";
  o.height_bits = height_bits;
  return o;
}

// Keeps the first `keep` rows of a block (--rows).
void truncate(wire::RowBlock& b, int keep) {
  const std::size_t n = static_cast<std::size_t>(keep) * b.slots * b.width;
  b.rows = keep;
  b.z.resize(n), b.intensity.resize(n), b.stripe_width.resize(n), b.quality.resize(n);
  b.frame_ids.resize(keep), b.timestamps_ns.resize(keep), b.encoder.resize(keep), b.missing.resize(keep);
  if (b.has_points()) b.points.resize(3 * n), b.motion_y.resize(keep);
}

int subscribe(const Flags& f) {
  Subscriber sub(SubscriberOptions{f.endpoint, f.rcv_hwm, f.server_key, f.client_key});
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  const auto deadline = f.timeout > 0 ? start + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(f.timeout))
                                      : clock::time_point::max();
  wire::GapTracker gaps;
  std::string series;  // the one being assembled
  std::uint64_t rows = 0, missing_rows = 0, messages = 0, malformed_seen = 0;
  std::optional<nlohmann::json> end;
  std::unique_ptr<RunSession> session;  // the outputs, fed from the stream: no source, no pipeline
  std::unique_ptr<SeriesRebuilder> rebuild;
  bool timed_out = false;
  auto outputs_for = [&](const wire::Decoded& d) {
    if (rebuild) return;
    Config c;
    c.output = outputs_of(f, d.header.value("height_bits", kDefaultHeightCodeBits));
    if (!f.calibration.empty()) apply_calibration_flags(c, f.calibration, f.y_step, f.roi_offset);
    session = std::make_unique<RunSession>(std::move(c));
    rebuild = std::make_unique<SeriesRebuilder>(session->open_outputs().all());
    if (!f.calibration.empty())
      rebuild->use_calibration(load_applied_calibration(session->config().calibration, d.header.value("width", 0), d.header.value("frame_height", 0)));
  };

  try {
    while (true) {
      if (f.rows && rows >= f.rows) break;
      if (end) break;
      const auto now = clock::now();
      if (now >= deadline) {
        timed_out = true;
        break;
      }
      const auto wait = std::min<clock::duration>(deadline - now, std::chrono::milliseconds(200));
      std::optional<wire::Decoded> msg = sub.receive(std::chrono::duration_cast<std::chrono::milliseconds>(wait) + std::chrono::milliseconds(1));
      if (sub.malformed() > malformed_seen) {
        malformed_seen = sub.malformed();
        std::fprintf(stderr, "stripeline: subscribe: skipped a malformed message (%s): %s\n", sub.last_malformed_reason().c_str(),
                     sub.last_malformed().c_str());
      }
      if (!msg) continue;
      wire::Decoded& d = *msg;
      // Checks after decoding (seq order, the series' geometry and rows): the
      // message is skipped, counted and named in one line like the above.
      const auto skip = [&](const wire::MalformedMessage& e) {
        sub.count_malformed(e);
        malformed_seen = sub.malformed();
        std::fprintf(stderr, "stripeline: subscribe: skipped a malformed message (%s): %s\n", e.reason().c_str(), e.what());
      };
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
      const auto last_seq = gaps.last_seq();
      if (auto g = gaps.observe(d.series, d.seq))
        std::fprintf(stderr, "stripeline: subscribe: gap: series %s seq %llu..%llu missing (%llu messages)\n", g->series.c_str(),
                     static_cast<unsigned long long>(g->first_missing), static_cast<unsigned long long>(g->first_missing + g->count - 1),
                     static_cast<unsigned long long>(g->count));
      if (gaps.backwards()) {  // ZeroMQ keeps a publisher's order: a repeated or earlier seq is the publisher's fault
        skip(wire::MalformedMessage("seq", "seq " + std::to_string(d.seq) + " after " + std::to_string(last_seq.value_or(0)) +
                                               " (expected seq to grow; a duplicate or a publisher going backwards)"));
        continue;
      }
      try {
      switch (d.topic) {
        case wire::Topic::SeriesStart: {
          outputs_for(d);
          rebuild->start(d);
          const LinearCalibration cal = wire::calibration_from_json(d.header.value("calibration", nlohmann::json::object()));
          if (!f.quiet)
            std::printf("series %s started: %s, width %d, %s%s\n", series.c_str(), d.header.value("source", "?").c_str(),
                        d.header.value("width", 0), d.header.value("point_unit", std::string(cal.unit())).c_str(),
                        !d.header.contains("sheet_calibration") ? ""
                        : !f.calibration.empty()              ? " (mapped with --calibration)"
                        : d.header.value("points", false)     ? " (X/Y/Z carried by the messages)"
                                                              : " (mapped with the series' sheet-of-light model)");
          break;
        }
        case wire::Topic::Profile: {
          outputs_for(d);
          wire::RowBlock& b = *d.rows;
          if (f.rows && rows + static_cast<std::uint64_t>(b.rows) > f.rows) truncate(b, static_cast<int>(f.rows - rows));  // exactly --rows rows
          rebuild->rows(b, ProfileMapping(d.calibration, d.header.value("height_bits", kDefaultHeightCodeBits)), d.seq);
          rows += static_cast<std::uint64_t>(b.rows);
          for (const auto m : b.missing) missing_rows += m ? 1 : 0;
          break;
        }
        case wire::Topic::SeriesEnd:
          end = d.header;
          break;
        case wire::Topic::Heightmap:
        case wire::Topic::Stats:
        case wire::Topic::Measurement:
          break;
      }
      } catch (const wire::MalformedMessage& e) {
        skip(e);
      }
    }
  } catch (...) {
    if (rebuild) rebuild->abort();
    throw;
  }
  const double seconds = std::chrono::duration<double>(clock::now() - start).count();
  const bool wrote = rebuild && rebuild->finish();

  std::printf("received %llu rows (%llu marked missing: frames lost at the source) in %llu messages (%.1f MB, %.1f s) from series %s; gaps %zu (%llu messages missing)\n",
              static_cast<unsigned long long>(rows), static_cast<unsigned long long>(missing_rows), static_cast<unsigned long long>(messages),
              sub.bytes() / 1e6, seconds, series.empty() ? "-" : series.c_str(), gaps.gaps().size(),
              static_cast<unsigned long long>(gaps.missing()));
  if (sub.malformed() > 0) {
    std::string reasons;
    for (const auto& [reason, n] : sub.malformed_by_reason()) reasons += (reasons.empty() ? "" : ", ") + reason + " " + std::to_string(n);
    std::printf("malformed messages skipped: %llu (%s)\n", static_cast<unsigned long long>(sub.malformed()), reasons.c_str());
  }
  if (end) {
    const auto published = end->value("profile_rows", std::uint64_t{0});
    const auto dropped = end->value("rows_dropped", nlohmann::json::object());
    std::printf("series-end (%s): %llu rows published, rows dropped by the sender: hwm %llu, no_subscriber %llu, error %llu; %s\n",
                end->value("reason", "?").c_str(), static_cast<unsigned long long>(published),
                static_cast<unsigned long long>(dropped.value("hwm", 0ull)), static_cast<unsigned long long>(dropped.value("no_subscriber", 0ull)),
                static_cast<unsigned long long>(dropped.value("error", 0ull)),
                rows == published && gaps.missing() == 0 ? "complete: every published row received" : "INCOMPLETE");
  }
  if (!f.quiet && wrote)
    for (const auto& p : session->output_files()) std::printf("  wrote %s\n", p.string().c_str());
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
  add_calibration_flags(sub, f->calibration, f->y_step, f->roi_offset);
  return {sub, [f] {
            check_output_files(outputs_of(*f, kDefaultHeightCodeBits));  // bad names: one line, exit 2, before subscribing
            if (!f->calibration.empty()) {  // a bad file: one line, exit 2, before subscribing
              Config c;
              apply_calibration_flags(c, f->calibration, f->y_step, f->roi_offset);
              load_calibration(c.calibration.file);
            }
            return subscribe(*f);
          }};
}

}  // namespace stripeline::tools
