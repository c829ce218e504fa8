#pragma once
// The measurement tools applied to a part (docs/measure.md, "Tools": each
// tool's exact definition). Values are in the part's units (mm with a
// calibration, else px); a value the part cannot give (an empty region, an
// edge not found) is NaN and fails any limit on it.
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "kernels/volume_ops.h"
#include "measure/job.h"
#include "measure/part.h"

namespace stripeline::measure {

enum class Decision { None, Pass, Fail };  // None: no limits on it
const char* to_string(Decision d);

struct ToolResult {
  std::string name;
  ToolKind kind = ToolKind::Height;
  std::vector<std::pair<std::string, double>> values;  // tool_values(kind), in order
  std::vector<Decision> value_decisions;                // one per value
  Decision decision = Decision::None;
  std::uint64_t points = 0;                             // points (or rows, for row tools) that went in
  double value(const std::string& name) const;          // NaN when absent
};

struct PartResult {
  std::uint64_t part = 0;
  std::string job;  // the job's name it was measured by
  std::uint64_t frame_first = 0, frame_last = 0;
  double y_first = 0, y_last = 0, length = 0;
  bool has_encoder = false;
  std::int64_t encoder_first = 0, encoder_last = 0;
  std::int64_t timestamp_first_ns = 0, timestamp_last_ns = 0;
  Box box;
  Reference reference;
  std::string units;
  std::uint64_t rows = 0, points = 0;
  bool cut = false;
  std::vector<ToolResult> tools;
  Decision decision = Decision::None;
};

// Runs every tool of the job on the part, in the job's order (an anchor
// refers to an earlier tool's result). Thread-safety: pure; any thread.
// The volume tool's sums of a query over a part, where they are not summed
// on the CPU (measure/device_volume.h on the CUDA backend): the same sums.
using VolumeSummer = std::function<kernels::VolumeSums(const Part&, const kernels::VolumeQuery&)>;

// `volume`: where given, the volume tools' sums come from it.
PartResult measure_part(const Job& job, const Part& part, const VolumeSummer& volume = nullptr);

// The volume tool's inputs on a part (its region resolved against the part
// and the tools before it, the part's reference) and its sums, summed on the
// CPU: the oracle of the CUDA kernel (kernels/cuda/volume_kernels.h), which
// gives the same sums for the part's rows on the device.
kernels::VolumeQuery volume_query(const ToolSpec& t, const Part& p, const std::vector<ToolResult>& done);
kernels::VolumeSums volume_sums(const Part& p, const kernels::VolumeQuery& q);

}  // namespace stripeline::measure
