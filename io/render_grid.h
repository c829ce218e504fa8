#pragma once
// Private to io/: helpers of io/render.h shared by its files: points (PLY
// vertices, XYZ TIFF pixels) on a grid, and a height map's rows.
#include <filesystem>
#include <vector>

#include "io/ply_writer.h"
#include "io/render.h"

namespace stripeline::io {

// The primary points (slot 0) of `points` on a grid over their x and y:
// uncalibrated (px) points whose x and y are whole numbers (columns, frame
// indices) get one cell each; others a grid whose rows are the distinct y
// values (one a profile) when there are few, else about one cell a point.
// A cell holds the mean z (and intensity) of its points, NaN when none.
// Fills s.height (and s.intensity when with_intensity), s.points, s.unit_note.
void grid_points(const std::vector<PlyVertex>& points, bool with_intensity, bool px, ScanFields& s);

// The rows (px, from the top of the frame; NaN = no detection) of a 16-bit
// height map of `width` columns, profiles [first, first + count): the line a
// recording's picture shows. InputError naming the file when it is not such
// a height map, is narrower/wider than `width` or shorter.
std::vector<float> heightmap_rows(const std::filesystem::path& path, int width, std::int64_t first, std::int64_t count);

}  // namespace stripeline::io
