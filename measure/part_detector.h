#pragma once
// Part detection on a scan, row by row (docs/measure.md, "Part detection").
//
// A row is a part's when at least min_points of its points within [x_min,
// x_max] stand more than `threshold` above the reference. Modes:
//  - continuous: a part starts at a part row and ends when gap_length along
//    the motion passes without one; it is the rows from its first to its last
//    part row; runs shorter than min_length are dropped; a part reaching
//    max_length is cut there (Part::cut) and the next one starts.
//  - fixed-length: a part row starts a part of `length`; the detector re-arms
//    at the next row that is not a part's.
//  - encoder: parts at fixed places along the motion axis, [start + k pitch,
//    start + k pitch + length), whatever their height (a trigger from the
//    encoder position).
// Reference: fixed (Z = reference_z) or belt: the line Z = a + b X fitted by
// least squares to the points of rows outside parts within `threshold` of
// the current reference, each row's weight decaying by 1/1000 per row (it
// follows a drifting belt); reference_z until 2 rows of belt are seen.
// Rows are moved in and recycled: in steady state no row is allocated.
// Thread-safety: one thread.
#include <cstdint>
#include <functional>
#include <vector>

#include "measure/job.h"
#include "measure/part.h"

namespace stripeline::measure {

class PartDetector {
 public:
  using OnPart = std::function<void(Part&&)>;
  // row_pitch: the motion between rows (mm, or frames without a calibration).
  PartDetector(DetectionSettings settings, double row_pitch, std::string units, OnPart on_part);

  // Takes `row`: when a part keeps it, `row` is swapped for a recycled empty
  // one (its vectors keep their capacity). Calls on_part for a part that ends.
  void push(MeasureRow& row);
  // The scan ended: the part in progress (if long enough) ends.
  void finish();
  // Gives a finished part's rows back for reuse.
  void recycle(Part&& part);

  Reference reference() const { return reference_; }
  // A part is open (rows kept, not yet ended).
  bool in_part() const { return in_part_; }
  std::uint64_t parts() const { return next_id_ - 1; }

 private:
  bool is_part_row(const MeasureRow& row) const;
  void keep(MeasureRow& row);
  void start(MeasureRow& row);
  void emit(std::size_t rows, bool cut);
  void learn_belt(const MeasureRow& row);

  DetectionSettings s_;
  double pitch_;
  std::string units_;
  OnPart on_part_;
  Reference reference_;
  Part part_;
  bool in_part_ = false, armed_ = true;
  std::size_t last_part_row_ = 0;
  std::int64_t encoder_slot_ = -1;
  std::uint64_t next_id_ = 1;
  std::vector<MeasureRow> spare_;
  double sw_ = 0, sx_ = 0, sz_ = 0, sxx_ = 0, sxz_ = 0;
  std::uint64_t belt_rows_ = 0;
};

}  // namespace stripeline::measure
