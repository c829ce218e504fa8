#pragma once
// What measuring sees (docs/measure.md): a scan as rows of points, and a part
// as the rows that part detection cut out of it, with its reference.
//
// A row is one profile: its points' X and Z in the calibration's mm (the
// sensor's columns and rows where the scan has no sheet-of-light
// calibration: units "px"), in increasing X, NaN-free; its Y on the motion
// axis (mm), frame index, encoder count and timestamp.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

namespace stripeline::measure {

struct MeasureRow {
  std::uint64_t frame = 0;
  double y = 0.0;                 // motion axis: mm with a calibration, else the frame index
  std::int64_t encoder = 0;
  bool has_encoder = false;
  std::int64_t timestamp_ns = 0;
  std::vector<float> x, z;        // the points, X increasing

  void clear_points() {
    x.clear();
    z.clear();
  }
  // The points in X order, equal X in the order they came (a lens or a
  // second peak can put a point out of order). `order` and `scratch` are
  // the caller's, kept from row to row: nothing is allocated once they
  // have grown (std::stable_sort would take a buffer each time).
  void sort_by_x(std::vector<std::uint32_t>& order, std::vector<float>& scratch) {
    order.resize(x.size());
    std::iota(order.begin(), order.end(), 0u);
    std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) { return x[a] < x[b] || (x[a] == x[b] && a < b); });
    for (std::vector<float>* v : {&x, &z}) {
      scratch.resize(order.size());
      for (std::size_t i = 0; i < order.size(); ++i) scratch[i] = (*v)[order[i]];
      v->swap(scratch);
    }
  }
};

// The reference the heights are taken from: Z = a + b X (a fitted belt
// line, or a fixed Z with b = 0). Height h = Z - reference(X).
struct Reference {
  double a = 0.0, b = 0.0;
  double at(double x) const { return a + b * x; }
};

struct Box {
  double x_min = std::numeric_limits<double>::quiet_NaN(), x_max = x_min, y_min = x_min, y_max = x_min, z_min = x_min, z_max = x_min;
};

struct Part {
  std::uint64_t id = 0;            // 1, 2, ... in the order parts end
  std::vector<MeasureRow> rows;    // its rows, in order
  Reference reference;             // at the part's start
  Box box;                         // of its points above the detection threshold
  double row_pitch = 0.0;          // mm (or frames) between rows: the motion step
  std::string units = "mm";        // "mm" or "px"
  bool cut = false;                // ended by max_length, not by a gap

  double y_start() const { return rows.empty() ? 0.0 : rows.front().y; }
  double y_end() const { return rows.empty() ? 0.0 : rows.back().y; }
  // Length along the motion: rows x pitch.
  double length() const { return static_cast<double>(rows.size()) * row_pitch; }
};

}  // namespace stripeline::measure
