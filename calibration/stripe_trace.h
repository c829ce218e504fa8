#pragma once
// Tracing a frame's stripe into straight pieces and corners, in image pixels
// (step 2 of the fit, calibration/fit.h): runs cut at gaps and jumps,
// Douglas-Peucker pieces, orthogonal-regression lines, corners where
// neighbouring lines meet, each with its turn.
#include <cstddef>
#include <vector>

#include "core/sheet_of_light.h"

namespace stripeline::fit_detail {

struct ImageLine {
  double cu = 0, cv = 0, du = 1, dv = 0;  // centroid, unit direction (du > 0)
  std::size_t first = 0, last = 0;        // point range (inclusive)
};

struct ImageCorner {
  double u = 0, v = 0;
  double cross = 0;            // dA x dB in (u, v): its sign is the raw turn
  ImageLine before, after;
};

struct Trace {
  std::vector<ImageCorner> corners;
  int runs = 0;
  bool whole = false;          // one run, well inside the ROI on every side
  double u_first = 0, v_first = 0, u_last = 0, v_last = 0;  // ends of the (longest) run
};

// Traces one frame's points (sorted by u). edge_margin: the fit's ROI margin
// (a whole target keeps three times it from every border).
Trace trace_frame(const std::vector<double>& u, const std::vector<double>& v, const SensorRoi& roi, double edge_margin);

}  // namespace stripeline::fit_detail
