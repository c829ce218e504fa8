#pragma once
// A part's own files (docs/measure.md, "Part files"), written when it has
// been measured: DIR/part-000001.ply (its points: x, y, z in the part's
// units, binary PLY as io/ply_writer.h writes it) and DIR/part-000001.tif
// (its range map: float32 Z, NaN = no data, one row per scan row, columns on
// a uniform X grid over the part's box with `dx`, the mean of each bin's
// points; kernels/rectify.h). Each file appears under its name complete
// (temporary name, then rename).
#include <filesystem>

#include "measure/part.h"

namespace stripeline::measure {

struct PartFileOptions {
  std::filesystem::path dir;  // "" = none
  double dx = 0.1;            // range map bin width
};

// Writes the part's PLY and range map; InputError naming the file when it cannot.
void write_part_files(const Part& part, const PartFileOptions& o);

}  // namespace stripeline::measure
