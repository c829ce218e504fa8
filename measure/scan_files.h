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

// Returns the rows read.
std::uint64_t measure_range_map(const std::filesystem::path& file, const Job& job, const OnMeasured& on_result);

}  // namespace stripeline::measure
