#pragma once
// Where frames come from. A source writes frames straight into the batch
// buffers the pipeline hands it (pinned memory on the CUDA backend): no
// intermediate copy for file replay, synthetic frames or cameras.
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "core/batch.h"
#include "core/significant_bits.h"

namespace stripeline {

struct CameraSettings;  // acquisition/camera_source.h

// Why fill() returned false.
enum class SourceEnd : std::uint8_t {
  Exhausted,   // a file or a finite synthetic scan ran out
  Stopped,     // request_stop() (SIGINT, SIGTERM, a reload)
  DeviceLost,  // the camera stopped answering: the daemon reconnects
};

// How frames get from the grabber's buffer into a batch: Direct, the grabber
// wrote into the batch's own memory (FrameSource::attach_buffers, nothing
// copied); Copy, each frame is copied from the driver's buffer into the batch.
enum class AcquisitionPath : std::uint8_t { Copy, Direct };
const char* to_string(AcquisitionPath p);

// Frames a live source lost, each counted by its size (a gap of 5 frame ids
// counts 5). Every lost frame that is inside the stream becomes a missing row
// (FrameMeta::missing), never a valid profile. docs/cameras.md.
struct AcquisitionCounters {
  std::uint64_t frames_complete = 0;  // frames received whole
  // Frame ids that never arrived (includes the driver's underruns): those
  // beyond gap_fill_limit once the gap is seen, the others as their missing
  // rows are written: a gap cut by the run's end counts only the rows
  // written before it, so every loss counted within gap_fill_limit is a
  // missing row.
  std::uint64_t lost_gap = 0;
  std::uint64_t lost_incomplete = 0;  // buffers with missing packets
  std::uint64_t lost_timeout = 0;     // buffers the driver gave up on (timeout)
  std::uint64_t lost_failed = 0;      // other failed buffers: aborted, size mismatch, wrong geometry
  std::uint64_t gap_not_inserted = 0; // part of lost_gap beyond gap_fill_limit: counted, but no rows inserted
  std::uint64_t arrived_late = 0;     // frames completed after a newer one: already counted in lost_gap, dropped
  std::uint64_t underruns = 0;        // the driver's underrun count (Aravis 0.8 counts packets that found no free buffer; the frames are in lost_gap)
  std::uint64_t device_errors = 0;    // errors the driver reported (GenTL EVENT_ERROR); the frames they cost are in the lost_* fields
  std::uint64_t batches_full = 0;     // batches handed on full
  std::uint64_t batches_flushed = 0;  // batches handed on partial, after flush_timeout
  AcquisitionPath path = AcquisitionPath::Copy;  // the path this source's frames took
  std::uint64_t bytes_copied = 0;     // pixel bytes copied from the grabber's buffers into batches (0 on the direct path)
  std::uint64_t lost_total() const { return lost_gap + lost_incomplete + lost_timeout + lost_failed; }
};

class FrameSource {
 public:
  virtual ~FrameSource() = default;
  // Width, frame height and pixel format of every frame (frames = 0).
  virtual BatchLayout frame_layout() const = 0;
  // Fill up to batch.layout.frames frames (pixels and meta) and set
  // batch.frames; the pipeline numbers the batch (sequence, first_index).
  // Returns false, with batch.frames == 0, once the source is exhausted. A file's partial batch is its last one; a live source also
  // hands on a partial batch when its flush timeout expires.
  // Throws InputError for bad data, RuntimeFailure for device failures.
  virtual bool fill(Batch& batch) = 0;
  // Frames this source will deliver, when known (progress bars).
  virtual std::optional<std::uint64_t> total_frames() const { return std::nullopt; }
  // A recording replayed in part (`replay --frames`): which frames, numbered
  // as the whole recording numbers them. The pipeline numbers the profiles
  // from there, so a part's rows, frame ids and motion Y are the whole
  // replay's (docs/scale-out.md). nullopt: the whole source, from 0.
  virtual std::optional<FrameRange> frame_range() const { return std::nullopt; }
  // Why the last fill() returned false.
  virtual SourceEnd end_reason() const { return SourceEnd::Exhausted; }
  // Ask a source that waits for frames (a camera) to return from fill() now:
  // it hands on what it holds, then returns false with end_reason() Stopped.
  // Thread-safe and async-signal-safe (it only sets an atomic flag).
  virtual void request_stop() noexcept {}
  // Live path (docs/architecture.md, "The live path's backlog"): frames that
  // have arrived and wait to be taken, i.e. a fill() asking for that many
  // would return without waiting (a camera's filled ring buffers, a paced
  // source's frames already due). nullopt = not known (files, sources that
  // run as fast as they are read): the batch then never grows on its own.
  // Called from the thread that calls fill(); must be cheap (no device I/O).
  virtual std::optional<std::uint64_t> pending_frames() const { return std::nullopt; }
  // Discard the `n` oldest waiting frames without handing them on (the live
  // path's bound on its backlog); returns how many were discarded (0 = this
  // source cannot: its own ring bounds the backlog). Same thread as fill().
  // Discarded frames leave no rows; the pipeline counts them.
  virtual std::uint64_t drop_pending(std::uint64_t n) {
    (void)n;
    return 0;
  }
  // When `frame` (as fill() described it) became available to us, in
  // steady_clock nanoseconds: where the live path's frame-arrival -> profile
  // latency starts. 0 = not known: the pipeline takes the moment fill()
  // returned it. Same thread as fill().
  virtual std::int64_t arrival_ns(const FrameMeta& frame) const {
    (void)frame;
    return 0;
  }
  // Loss accounting of a live source (nullopt for files and synthetic scans).
  virtual std::optional<AcquisitionCounters> acquisition_counters() const { return std::nullopt; }
  // How many bits of each pixel word carry signal, when the source knows it
  // (a camera's PixelFormat, a file's MaxSampleValue or sBIT, the simulated
  // scanner's depth); not known otherwise: the pipeline then infers it from
  // the first batch (docs/data-model.md, "Significant bits").
  virtual SignificantBits significant_bits() const { return {}; }
  // One line for logs: "synthetic scanner 2048x52 Mono8, seed 1".
  virtual std::string describe() const = 0;
  // A live camera's read-back (its real ROI and offsets on the sensor, which
  // a calibration file is applied at); null for files and synthetic scans.
  virtual const CameraSettings* camera_settings() const { return nullptr; }
  // After end_reason() DeviceLost: why, and seconds from the last sign of
  // life to the loss being declared ("" and 0 for sources that cannot be lost).
  virtual std::string loss_reason() const { return {}; }
  virtual double loss_detection_seconds() const { return 0.0; }

  // Zero-copy acquisition (optional: frame grabbers that write whole batches
  // into our memory, GenTL). direct_buffer_bytes(): how many bytes each
  // batch's pixel buffer must hold for that (the device's payload: pixels,
  // plus chunk data); 0 = this source copies frames into any batch.
  virtual std::size_t direct_buffer_bytes() const { return 0; }
  // Before the first fill() the pipeline may show the source every batch of
  // its pool and the allocator their pixels came from (pinned memory with
  // CUDA). A source that takes them lets its device write into them: fill()
  // then returns a batch holding another `pixels` buffer of the same size
  // and allocator, the one the device filled (slots exchange buffers; their
  // number, sizes and kind never change). Before freeing those batches the
  // pipeline calls detach_buffers(): the device stops writing to them.
  virtual void attach_buffers(std::span<Batch* const> batches, HostAllocator allocator) {
    (void)batches;
    (void)allocator;
  }
  virtual void detach_buffers() noexcept {}
};

// What every fill() checks first: the batch holds frames of the source's
// geometry and its buffers are as large as its layout. RuntimeFailure (a
// caller's mistake, not the user's) naming `source` otherwise.
void check_fill_target(const Batch& batch, const BatchLayout& frame_layout, const char* source);

}  // namespace stripeline
