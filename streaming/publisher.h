#pragma once
// Publisher: a ProfileSink that streams height rows over ZeroMQ in the
// stripeline wire format (streaming/wire_format.h, docs/wire-format.md).
// Its parts: the socket and the drops (streaming/sender.h), CURVE
// (streaming/curve.h), the series state machine (streaming/series.h).
//
// It never blocks the pipeline. The socket is an XPUB with XPUB_NODROP, so
// a subscriber at its high-water mark makes a send fail with EAGAIN instead
// of being dropped silently; every message that is not sent is counted by
// reason, and the seq numbers let each subscriber see exactly which ones it
// missed. Note: with NODROP one subscriber at its high-water mark makes the
// message a drop for all subscribers (they all see the same gap).
//
// One begin() .. finish() is one series: series-start, profile (and
// heightmap) messages, stats, series-end stating how many profile rows the
// series published. The socket stays bound across series.
//
// Conservation, per series and in total:
//   rows_in = rows_published + rows_dropped[hwm] + rows_dropped[no_subscriber] + rows_dropped[error]
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/rectify.h"
#include "pipeline/sink.h"
#include "stages/backend.h"
#include "streaming/curve.h"
#include "streaming/sender.h"

namespace stripeline {

// [publisher] (and [security]) of a configuration.
struct PublisherConfig {
  std::string endpoint = "tcp://127.0.0.1:5556";  // tcp://127.0.0.1:* binds an ephemeral port (see endpoint())
  int send_hwm = 500;                // messages queued per subscriber before sends fail (and are counted as drops)
  int rows_per_message = 8;          // profile rows per profile message
  int heightmap_rows = 0;            // rows per heightmap message (0 = no heightmap messages)
  double stats_interval = 1.0;       // seconds between stats messages within a series (0 = only at series end)
  int linger_ms = 1000;              // how long queued messages are still delivered after close
  int control_timeout_ms = 1000;     // series-start/series-end wait this long for room at the high-water mark (the
                                     // pipeline waits with them), then are counted (control_dropped) and logged
  int height_bits = 6;               // announced in headers: the height code the subscriber should use
  // Height-map filters (stages/heightmap_filters.h, "median 3", ...) applied to
  // each heightmap message's primary z before it is sent: the same steps as
  // [output] heightmap_filters, a final to8 ignored. Filtered z values lie on
  // the height code's grid (1/2^height_bits px). Set with the output section's
  // filters by the composition root (app/outputs.h), which also sets the backend
  // they run on (processing.backend).
  std::vector<std::string> heightmap_filters;
  Backend filter_backend = Backend::Auto;
  // Rectified rows (docs/wire-format.md): with a sheet-of-light calibration,
  // every heightmap message is followed by one of form "rectified" holding the
  // same rows resampled onto a uniform X grid, Z in mm (kernels/rectify.h).
  // "X_MIN:X_MAX:DX" in mm; "" = off.
  std::string rectified_grid;
  std::string rectified_rule = "max";  // max, min, mean or nearest
  int rectified_fill = 0;              // largest gap (bins) filled by interpolation
  // With a sheet-of-light calibration, profile and heightmap messages carry
  // the processor's calibrated points (parts points and motion_y,
  // docs/wire-format.md): 12 bytes per column and slot plus 8 per row. false
  // leaves them out (clients map the rows with series-start's model).
  bool points = true;
  CurveConfig curve;

  // Throws ConfigError naming the key ("publisher.<key>", "security.<key>").
  void validate() const;
  // rectified_grid, rectified_rule and rectified_fill as a grid (InputError when malformed).
  kernels::RectifyGrid rectify_grid() const;
  bool operator==(const PublisherConfig&) const = default;
};

struct PublisherCounters {
  std::uint64_t series = 0;
  std::uint64_t rows_in = 0;         // profile rows handed to the publisher
  std::uint64_t rows_published = 0;  // profile rows sent
  std::array<std::uint64_t, kDropReasons> rows_dropped{};
  std::uint64_t messages_sent = 0;
  std::array<std::uint64_t, kDropReasons> messages_dropped{};
  std::uint64_t heightmap_rows_published = 0;
  std::uint64_t bytes_sent = 0;
  // series-start, series-end not sent after waiting control_timeout_ms (also in messages_dropped)
  std::array<std::uint64_t, 2> control_dropped{};
  std::uint64_t rows_dropped_total() const { return rows_dropped[0] + rows_dropped[1] + rows_dropped[2]; }
  std::uint64_t messages_dropped_total() const { return messages_dropped[0] + messages_dropped[1] + messages_dropped[2]; }
};

class Publisher final : public ProfileSink {
 public:
  // Binds the socket (and starts the ZAP handler when CURVE is on). Throws
  // ConfigError for a bad configuration or key file, InputError when the
  // endpoint cannot be bound.
  explicit Publisher(PublisherConfig config);
  ~Publisher() override;
  Publisher(const Publisher&) = delete;
  Publisher& operator=(const Publisher&) = delete;

  // The endpoint actually bound (the ephemeral port resolved).
  std::string endpoint() const;
  const PublisherConfig& config() const;

  void begin(const ScanInfo& info) override;                 // new series: series-start
  void consume(const ProfileSpan& profiles) override;
  void finish() override;                                    // heightmap rest, stats, series-end
  void abort() noexcept override;                            // series-end with reason "aborted"

  // A measured part's record (docs/measure.md "Records", with "job") as a
  // measurement message of the open series (docs/wire-format.md); while no
  // series is open it is held (at most 64, the oldest dropped and counted as
  // no_subscriber) and sent after the next series-start. Thread-safe (the
  // measuring thread calls it; it waits for a send in progress, never for a
  // subscriber).
  void publish_measurement(const nlohmann::json& part);

  // Annotations for the next series-start/series-end (e.g. the daemon's scan
  // number, the reason a scan ended). Cleared at each finish().
  void annotate(const std::string& key, const std::string& value);
  void annotate(const std::string& key, std::uint64_t value);

  // Thread-safe snapshot of the counters.
  PublisherCounters counters() const;
  std::string series() const;
  // Subscriptions currently matching the profile topic (reads pending
  // subscription messages first, unless a send holds the socket: then the
  // last count; never waits). Thread-safe.
  int subscribers();
  // Waits until at least n subscriptions match the profile topic.
  bool wait_for_subscribers(int n, std::chrono::milliseconds timeout);
  // Housekeeping from another thread: reads subscriptions, sends a stats
  // message when the interval has passed within a series. Skipped when a
  // send holds the socket (never waits for a control message). Thread-safe.
  void tick();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace stripeline
