#pragma once
// BatchAssembler: packs a camera's frames, one at a time, into the pipeline's
// batch buffers exactly as a CoaXPress frame grabber concatenates them, and
// accounts for every frame that did not arrive whole.
//
// It knows nothing of Aravis: the camera source hands it each buffer as an
// ArrivedFrame (the tests do too). For each frame:
//   - the frame-id gap since the previous one is counted by its size and, up
//     to gap_fill_limit frames, inserted as missing rows (FrameMeta::missing,
//     zero pixels, ids and timestamps interpolated) so that row r of a height
//     map stays frame r of the scan;
//   - a failed or incomplete buffer, or one of the wrong geometry, becomes one
//     missing row, counted by its status;
//   - a complete frame is copied into the next row block with its id,
//     timestamp and encoder count.
// Frame ids are unwrapped to 64 bits: GigE Vision 1.x block ids run 1..65535
// and then restart at 1 (0 is never used). A frame that arrives after a newer
// one (GigE Vision drivers hand on an incomplete frame when they give up on
// it, which can be after the next one completed) is dropped: its row was
// already written as missing and counted in the gap; arrived_late counts it.
#include <cstddef>
#include <cstdint>
#include <optional>

#include "acquisition/source.h"
#include "core/batch.h"

namespace stripeline {

enum class FrameStatus : std::uint8_t {
  Complete,        // every byte arrived
  MissingPackets,  // some packets never arrived (GigE Vision)
  Timeout,         // the driver gave up waiting for the rest of the frame
  Failed,          // aborted, size mismatch or any other driver error
};

struct ArrivedFrame {
  std::uint64_t frame_id = 0;       // as the camera numbers it (may wrap at 65535)
  std::int64_t timestamp_ns = 0;
  std::optional<std::int64_t> encoder;
  FrameStatus status = FrameStatus::Complete;
  int width = 0;
  int height = 0;
  PixelFormat format = PixelFormat::Mono8;
  const std::byte* data = nullptr;  // width * height pixels of format, rows contiguous
  std::size_t bytes = 0;
};

class BatchAssembler {
 public:
  // frame: width, frame_height and format every frame must have.
  // gap_fill_limit: the largest gap inserted as missing rows (larger ones are
  // counted and logged, but leave no rows: a camera that paused for a minute
  // should not produce a minute of empty rows).
  BatchAssembler(BatchLayout frame, std::uint64_t gap_fill_limit);

  enum class Result { Placed, BatchFull };
  // Adds `frame` (and the missing rows of the gap before it) to `batch`. If
  // the batch fills first it returns BatchFull having placed what fitted:
  // call again with the same frame and the next batch; nothing is counted
  // twice. `rows` (at most batch.layout.frames) ends the batch earlier: the
  // last rows a source wants.
  Result add(Batch& batch, const ArrivedFrame& frame, int rows);
  Result add(Batch& batch, const ArrivedFrame& frame) { return add(batch, frame, batch.layout.frames); }

  // Counters so far (frames_complete and the lost_* fields; the batch and
  // driver fields are the camera source's).
  const AcquisitionCounters& counters() const { return counters_; }
  // The next frame starts a new id sequence (a reconnected camera).
  void restart_sequence();

  // How a frame id follows the previous one. Ids up to 65535 are taken as
  // GigE Vision 1.x block ids, which wrap (65535 is followed by 1).
  //   Ahead: `distance` frames on (1 = consecutive);
  //   Late:  at most kLateWindow behind (or repeated): a frame the driver
  //          completed after a newer one, already counted in that gap;
  //   Reset: further behind: the camera's counter restarted.
  struct IdStep {
    enum Kind { Ahead, Late, Reset } kind;
    std::uint64_t distance;
  };
  static constexpr std::uint64_t kLateWindow = 1024;
  static IdStep classify(std::uint64_t previous, std::uint64_t next);
  // classify()'s distance for Ahead, 0 otherwise.
  static std::uint64_t id_distance(std::uint64_t previous, std::uint64_t next);

 private:
  void write_missing_row(Batch& batch, std::uint64_t frame_id, std::int64_t timestamp_ns);
  bool geometry_matches(const ArrivedFrame& f) const;

  BatchLayout frame_;
  std::size_t frame_bytes_;
  std::uint64_t gap_fill_limit_;
  AcquisitionCounters counters_;

  bool have_previous_ = false;
  std::uint64_t previous_raw_ = 0;      // camera id of the last frame placed
  std::uint64_t previous_id_ = 0;       // its unwrapped id
  std::int64_t previous_ts_ = 0;
  // The gap in front of the frame being added, while it is being written,
  // and the frame's unwrapped id.
  bool gap_known_ = false;
  std::uint64_t gap_ = 0, gap_rows_ = 0, gap_rows_written_ = 0, id_ = 0;
};

}  // namespace stripeline
