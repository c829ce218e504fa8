#pragma once
// The stripeline wire format (docs/wire-format.md), shared by the publisher
// and every subscriber. A message is a ZeroMQ multipart message:
//   part 0  topic: "series-start", "profile", "heightmap", "series-end", "stats",
//           "measurement" (since 1.3: one measured part, header only)
//   part 1  UTF-8 JSON header; "htype" names the type and version
//           ("stripeline-profile-1.0"), "series" a UUID, "seq" a u64 that
//           grows by 1 per message within a series, across topics
//   part 2… raw little-endian arrays described by header["parts"]
//           (name, dtype, shape): for profile/heightmap z (<f4, NaN = none),
//           intensity (<u2), width (<u2) and quality (<u2, since 1.1),
//           each [rows, slots, width]; with a sheet-of-light calibration
//           (since 1.2, unless the publisher leaves them out) points (<f4
//           [rows, slots, width, 3]: X, Y - motion_y, Z in mm, NaN = no point)
//           and motion_y (<f8 [rows]): the PLY's X/Y/Z exactly.
// No sockets here (streaming/sender.h sends), so the format is tested on its own.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>
#include <zmq.hpp>

#include "core/applied_calibration.h"
#include "core/calibration.h"
#include "core/errors.h"
#include "core/profile.h"
#include "core/profile_mapping.h"

namespace stripeline::wire {

inline constexpr const char* kFormatVersion = "1.3";  // 1.3: the measurement topic
inline constexpr int kFormatMajor = 1;

enum class Topic { SeriesStart, Profile, Heightmap, SeriesEnd, Stats, Measurement };
const char* topic_name(Topic t);
std::optional<Topic> parse_topic(const std::string& name);
// "stripeline-<topic>-1.0"
std::string htype(Topic t);

// A new random (version 4) UUID, "xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx".
std::string new_uuid();
// Wall-clock time in nanoseconds since the Unix epoch.
std::int64_t unix_time_ns();

// Consecutive height rows held in memory: a decoded message, or the rows a
// heightmap message accumulates across batches before it is sent.
struct RowBlock {
  std::uint64_t series_row = 0;  // row offset of rows[0] within the series (0-based)
  std::uint64_t index = 0;       // global acquisition index of rows[0] (the pipeline's frame index)
  int rows = 0, width = 0, slots = 1;
  std::vector<std::uint64_t> frame_ids;      // per row
  std::vector<std::int64_t> timestamps_ns;   // per row (source clock)
  std::vector<std::optional<std::int64_t>> encoder;  // per row; nullopt = no encoder
  std::vector<std::uint8_t> missing;         // per row: 1 = the frame never arrived
  std::vector<float> z;                      // [rows][slots][width]; NaN = none; mm when calibrated, else px
  std::vector<std::uint16_t> intensity;      // [rows][slots][width]
  std::vector<std::uint16_t> stripe_width;   // [rows][slots][width]
  std::vector<std::uint16_t> quality;        // [rows][slots][width]; contrast (0 from a 1.0 sender)
  std::vector<std::int32_t> primary;         // [rows][width] slot 0's fixed-point position (kNoPeak = none),
                                             // kept only when keep_primary: not sent, the exact input of height-map filters
  bool keep_primary = false;
  // The processor's calibrated points (sheet-of-light calibration, since 1.2),
  // both empty when not carried: points [rows][slots][width][3] X, dY, Z in mm
  // (core/calibrated_point.h; NaN x3 = no point: no detection, or beyond the
  // horizon) and motion_y [rows] in mm. A point's Y is motion_y + double(dY),
  // its X and Z the floats: exactly the PLY's vertex.
  std::vector<float> points;
  std::vector<double> motion_y;
  bool has_points() const { return !motion_y.empty(); }

  void clear(int width, int slots);
  // Append profiles [first, first + count) of a span, z through the mapping;
  // with `points` (and a mapping with a sheet-of-light calibration) also each
  // point's X, dY, Z and each row's motion_y.
  void append(const ProfileSpan& p, int first, int count, const ProfileMapping& mapping, std::uint64_t series_row_of_first,
              bool points = false);
  std::size_t payload_bytes() const {
    return z.size() * 4 + intensity.size() * 2 + stripe_width.size() * 2 + quality.size() * 2 + points.size() * 4 + motion_y.size() * 8;
  }
};

nlohmann::json calibration_json(const LinearCalibration& c);
LinearCalibration calibration_from_json(const nlohmann::json& j);
// A sheet-of-light calibration as series-start and scan.json carry it
// (`sheet_calibration`, docs/wire-format.md): identity, motion, ROI offsets
// and every model value, enough for a subscriber to map rows itself.
nlohmann::json sheet_calibration_json(const AppliedCalibration& c);
// The inverse; nullptr for a missing or malformed object.
std::shared_ptr<const AppliedCalibration> sheet_calibration_from_json(const nlohmann::json& j);

// One encoded message, ready to send: parts[0] topic, parts[1] header, parts[2..] arrays.
struct Message {
  std::vector<zmq::message_t> parts;
  std::size_t bytes() const;
  // The parts as strings (tests, tools).
  std::vector<std::string> strings() const;
};

// Common header fields: htype, series, seq, time_ns.
nlohmann::json base_header(Topic t, const std::string& series, std::uint64_t seq);
// A header-only message (series-start, series-end, stats).
Message encode_control(Topic t, const nlohmann::json& header);
// Profiles [first, first + count) of a span as a profile or heightmap
// message, encoded straight into the message's buffers (the one copy after
// the device-to-host copy). `header` holds the base fields and the
// series-wide context (calibration, height_bits); the row fields and the part
// descriptions are added here. With `points` and a mapping with a
// sheet-of-light calibration, the points and motion_y parts follow
// (RowBlock::points): the span's own points when it carries them (the
// processor's), else computed here by the same function.
Message encode_rows(Topic t, nlohmann::json header, const ProfileSpan& p, int first, int count, const ProfileMapping& mapping,
                    std::uint64_t series_row_of_first, bool points = false);
// The same from rows held in memory (with its points parts when it has them).
Message encode_rows(Topic t, nlohmann::json header, const RowBlock& rows);

// Frame f of a span as carried points: slots*width*3 floats X, dY, Z
// (NaN x3 where there is no point), and the frame's motion_y. The one place
// the stream's points are made (encode_rows, RowBlock::append).
double points_row(const ProfileSpan& p, int f, const ProfileMapping& mapping, float* out);

// A message that does not follow the format. what() is one printable line
// ("wire: <problem> (expected ...)"); reason() a short key by which receivers
// count what they skipped: parts, topic, header, htype, version, field,
// range, shape, size, values, and (SeriesRebuilder) geometry, overlap,
// series-row.
class MalformedMessage : public InputError {
 public:
  MalformedMessage(std::string reason, const std::string& problem);
  const std::string& reason() const noexcept { return reason_; }

 private:
  std::string reason_;
};

// At most `max` characters of `s`, every byte outside printable ASCII shown
// as '?': what a log line may quote of received text.
std::string printable(std::string_view s, std::size_t max = 80);

// Bounds a decoder enforces on a profile/heightmap message (besides the part
// sizes matching the shape): rows per message, and series rows.
inline constexpr int kMaxRowsPerMessage = 1 << 20;
inline constexpr std::uint64_t kMaxSeriesRow = std::uint64_t{1} << 48;

// A decoded message. decode() throws MalformedMessage naming the problem for
// anything that does not follow the format: wrong part count or size, an
// unknown topic or major version, a known header field of the wrong type or
// out of range (integers must be JSON integers; seq, series_row ... unsigned),
// a shape that does not match the arrays, an infinite z, points that are
// infinite, partly NaN or present without a detection, a motion_y that is
// not finite. After decode() every
// known header field present has its documented type, so header.value(...)
// cannot throw for them.
struct Decoded {
  Topic topic = Topic::Stats;
  nlohmann::json header;
  std::string series;
  std::uint64_t seq = 0;
  std::optional<RowBlock> rows;  // profile and heightmap
  // measurement: header["part"] is the part's record (docs/measure.md "Records")
  LinearCalibration calibration; // profile and heightmap
};
Decoded decode(const std::vector<std::string>& parts);
Decoded decode(const std::vector<zmq::message_t>& parts);

// Follows the seq numbers of a stream and reports every gap. A new series
// (another UUID) restarts the count.
struct Gap {
  std::string series;
  std::uint64_t first_missing = 0;  // seq
  std::uint64_t count = 0;          // messages missed
};
class GapTracker {
 public:
  // Returns the gap before this message, if any. A seq at or below the last
  // one (a duplicate or a publisher going backwards) is counted in
  // duplicates_or_reordered(), reported by backwards(), and not taken as the
  // new position.
  std::optional<Gap> observe(const std::string& series, std::uint64_t seq);
  std::uint64_t missing() const { return missing_; }
  std::uint64_t messages() const { return messages_; }
  const std::vector<Gap>& gaps() const { return gaps_; }
  std::uint64_t duplicates_or_reordered() const { return backwards_; }
  // Whether the last observe() saw a seq at or below the one before it.
  bool backwards() const { return last_backwards_; }
  std::optional<std::uint64_t> last_seq() const { return last_; }

 private:
  std::string series_;
  std::optional<std::uint64_t> last_;
  std::uint64_t missing_ = 0, messages_ = 0, backwards_ = 0;
  bool last_backwards_ = false;
  std::vector<Gap> gaps_;
};

}  // namespace stripeline::wire
