#pragma once
// Merging heads (docs/scale-out.md, "Merging heads"): N head streams in the
// wire format in, one merged series out. Each head's rows carry its
// calibrated points (parts points and motion_y, docs/wire-format.md); the
// merge
//   1. aligns the heads' rows by a declared key: the encoder count, the frame
//      id, or the timestamp within a tolerance (AlignKey);
//   2. maps every point through the head's head-to-world rigid transform
//      (calibration/head_alignment.h, from `stripeline align`) and bins it
//      onto one uniform world X grid (kernels/rectify.h: within one head's
//      cell the grid's rule, max/min/mean/nearest);
//   3. resolves the overlaps per X cell by OverlapRule: the mean of the heads'
//      cell values, or the value of the head whose point there had the
//      highest quality (contrast; ties: the lower head number); then fills
//      gaps of at most grid.fill cells;
//   4. emits merged rows in key order, each with a bitmask of the heads in it.
// A row waits for an absent head until that head has sent a later key (it
// comes in order, so it never will), until the head has been silent for the
// window, or until the row has been the oldest waiting one for the window.
// Nothing is dropped
// silently; per head (MergeHeadCounters):
//   received + lost = sent                  (its series' own numbering: series_row, series-end rows_in)
//   received = merged + late + unmatched + no_points + source_missing
//   merged + absent = rows                  (every merged row marks the head present or absent)
//
// Two parts: Merger is the logic without sockets (tests feed it decoded
// messages); MergeService subscribes to the heads (one SUB socket each,
// CURVE client where keys are given), runs a Merger on its own thread, and
// publishes the merged rows (an XPUB socket, the wire format's rectified
// form, docs/wire-format.md "Merged rows") and writes the merged range map
// and PLY when asked.
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "calibration/head_alignment.h"
#include "core/thread_scheduling.h"
#include "kernels/rectify.h"
#include "streaming/curve.h"
#include "streaming/wire_format.h"

namespace stripeline {

enum class AlignKey { Encoder, Timestamp, Frame };
enum class OverlapRule { Mean, Quality };
const char* to_string(AlignKey k);
const char* to_string(OverlapRule r);
AlignKey parse_align_key(const std::string& s);       // InputError naming the value
OverlapRule parse_overlap_rule(const std::string& s);  // InputError naming the value

inline constexpr int kMaxMergeHeads = 64;  // bits of a row's head mask

struct MergeConfig {
  std::vector<HeadTransform> heads;  // head i = bit i of a row's mask; its name and head-to-world transform
  AlignKey align = AlignKey::Encoder;
  std::int64_t timestamp_tolerance_ns = 50'000;  // AlignKey::Timestamp: rows this close are one row
  kernels::RectifyGrid grid;                     // world X grid, mm (grid.rule within a head's cell; grid.fill after the merge)
  OverlapRule overlap = OverlapRule::Mean;
  std::chrono::milliseconds window{200};  // a row waits at most this long for an absent head
  int max_pending_rows = 4096;            // rows waiting at once; beyond, the oldest goes out with its absent heads marked (forced)
  int rows_per_block = 8;                 // merged rows handed out together at most (a block goes out as soon as nothing more is ready)

  // InputError naming the setting.
  void validate() const;
};

struct MergeHeadCounters {
  std::uint64_t sent = 0;            // rows the head's series numbered: series-end rows_in, or (open series) the last series_row + 1
  std::uint64_t received = 0;        // rows received
  std::uint64_t lost = 0;            // numbered but never received (message gaps, the publisher's own drops)
  std::uint64_t merged = 0;          // received rows in a merged row
  std::uint64_t late = 0;            // received after their merged row went out (beyond the window)
  std::uint64_t unmatched = 0;       // no key (no encoder), or a key not above the head's previous one
  std::uint64_t no_points = 0;       // rows without calibrated points (publisher.points = false, no calibration)
  std::uint64_t source_missing = 0;  // rows the head's source marked missing (frame never arrived)
  std::uint64_t absent = 0;          // merged rows without this head (its bit clear)
  std::uint64_t series = 0;          // series seen (a restarted head starts a new one)
  std::uint64_t messages = 0, gap_messages = 0, malformed = 0;
};

struct MergeCounters {
  std::uint64_t rows = 0;          // merged rows emitted
  std::uint64_t rows_no_head = 0;  // ... of them with no head at all (cannot happen from a key alone; kept for the invariant)
  std::uint64_t forced = 0;        // emitted early because max_pending_rows were waiting
  std::vector<MergeHeadCounters> heads;
  // Time from the arrival of the message that completed a row (or the
  // window's end) to the row's hand-out, microseconds: what the merge adds
  // on its host, transport excluded.
  double latency_p50_us = 0, latency_p99_us = 0, latency_max_us = 0;
  nlohmann::json json(const MergeConfig& config) const;
};

// Merged rows handed out: rows.width = grid bins, slots 1, z = world Z in mm
// (NaN = no data), missing = no head present. Per row: the head mask, the
// row's world Y (the first present head's motion position through its
// transform; NaN when none). frame_ids, timestamps_ns and encoder are the
// first present head's.
struct MergedBlock {
  wire::RowBlock rows;
  std::vector<std::uint64_t> heads;
  std::vector<double> y_mm;
};

// Not thread-safe: one owner calls everything.
class Merger {
 public:
  using Clock = std::chrono::steady_clock;
  using Output = std::function<void(const MergedBlock&)>;
  Merger(MergeConfig config, Output out);
  ~Merger();
  Merger(const Merger&) = delete;
  Merger& operator=(const Merger&) = delete;

  const MergeConfig& config() const { return config_; }
  // One decoded message of head `head` (series-start, profile, series-end;
  // others are ignored), received at `now`. Rows that became ready go out.
  void on_message(int head, const wire::Decoded& m, Clock::time_point now);
  // A message of head `head` the decoder refused (counted).
  void on_malformed(int head);
  // Rows whose wait is over go out.
  void expire(Clock::time_point now);
  // Everything still waiting goes out (absent heads marked).
  void flush_all(Clock::time_point now);
  // Whether every head that started a series has ended its current one and nothing waits.
  bool all_ended() const;
  MergeCounters counters() const;

 private:
  struct Impl;
  MergeConfig config_;
  std::unique_ptr<Impl> impl_;
};

struct MergeServiceConfig {
  MergeConfig merge;
  std::vector<std::string> endpoints;    // per head, in merge.heads order
  std::vector<std::string> server_keys;  // per head: its publisher's CURVE public key file ("" = no CURVE); empty = none
  std::string client_key;                // CURVE: this merge's secret key file (with server_keys)
  int rcv_hwm = 10000;
  // The merged stream: "" = none. Bound like a publisher's (tcp://host:* = ephemeral).
  std::string publish;
  int send_hwm = 1000;
  CurveConfig curve;                     // downstream CURVE (server secret key, allowed clients)
  // The merge's thread and its sockets' I/O threads (docs/scale-out.md, "Latency under load").
  ThreadScheduling scheduling;
  // Files written when the merged series ends (or at stop()).
  std::filesystem::path range_map;       // float32 TIFF: world Z in mm per row and X cell, NaN = no data
  std::filesystem::path ply;             // one vertex per merged cell with data: x = cell centre, y = row's world Y, z
  bool ply_ascii = false;
  // The motion between merged rows, mm (the heads' calibration y_step): > 0
  // puts it in the range map's description, its row r at the first row's Y
  // + r x y_step_mm, so that `stripeline measure` reads it (docs/measure.md).
  double y_step_mm = 0.0;
  // On the merge's thread: each block as it goes out, and the series' end
  // before its series-end is sent (what it measures there goes out in the
  // series: publish_measurement). Either may be empty.
  std::function<void(const MergedBlock&)> on_rows;
  std::function<void()> on_series_end;
};

// The heads subscribed, the Merger on its own thread, the merged series out.
// Thread-safe: counters(), done() and stop() from any thread.
class MergeService {
 public:
  // Connects (InputError for a bad endpoint or key file), binds the publish
  // endpoint, starts the thread.
  explicit MergeService(MergeServiceConfig config);
  ~MergeService();
  MergeService(const MergeService&) = delete;
  MergeService& operator=(const MergeService&) = delete;

  std::string publish_endpoint() const;  // as bound ("" without one)
  // Waits until at least n subscriptions match the merged rows (a consumer that
  // must see the whole merged series connects first).
  bool wait_for_subscribers(int n, std::chrono::milliseconds timeout) const;
  // True once every head ended its series and the merged series went out.
  bool done() const;
  bool wait_done(std::chrono::milliseconds timeout) const;
  // Ends the merged series (waiting rows out, series-end, files) and joins the thread. Idempotent.
  void stop();
  MergeCounters counters() const;
  std::vector<std::filesystem::path> files() const;  // written so far
  // A measured part's record, sent as a measurement message in the merged
  // series (docs/wire-format.md) by the merge's thread; while no series is
  // open it waits for the next series-start (at most 64; beyond, the oldest
  // is dropped). Any thread; never takes the merge's own lock.
  void publish_measurement(const nlohmann::json& part);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace stripeline
