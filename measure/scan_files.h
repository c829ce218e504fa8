#pragma once
// Measuring a scan saved to a file (docs/measure.md, "Inputs"): a range map
// that stripeline wrote (`replay --range-map`, float32 Z mm on a uniform X
// grid; its description names the grid and the motion step): each row's
// filled bins become the row's points (X = the bin's centre), row r at
// Y = y_offset + r x y_step. InputError naming the file for anything else.
#include <cstdint>
#include <filesystem>
#include <functional>

#include "measure/job.h"
#include "measure/part.h"
#include "measure/tools.h"

namespace stripeline::measure {

using OnMeasured = std::function<void(const PartResult&, const Part&)>;

// A calibrated PLY that stripeline wrote (replay --ply with a calibration):
// consecutive points whose Y lies within half the file's y_step_mm of their
// row's first point form a row (at that first point's Y), sorted by X.
std::uint64_t measure_ply(const std::filesystem::path& file, const Job& job, const OnMeasured& on_result);

// One row of a range map on a uniform X grid (cell i at X = x_min + i dx,
// Z = its value, NaN = no data) as a row's points: the filled cells, in X
// order; the row's own fields (y, frame, ...) are the caller's. The one way
// a grid row becomes a measured row: measure_range_map's and the daemon's
// merged scan (docs/measure.md "Measuring the merged scan").
void grid_row(const float* z, int cells, double x_min, double dx, MeasureRow& row);

// Returns the rows read.
std::uint64_t measure_range_map(const std::filesystem::path& file, const Job& job, const OnMeasured& on_result);

}  // namespace stripeline::measure
