#pragma once
// `stripeline join`: the outputs of the parts of one replay (`replay --frames
// START:END`, a Slurm job array's shards; docs/scale-out.md) joined into the
// file that one replay of those frames writes, byte for byte: a PLY (header,
// comments and all), a height map, a range map (float TIFF or 16-bit codes)
// or an XYZ TIFF, the kind read from each file's metadata (core/metadata.h).
//
// The parts must fit together: one kind and format, the same metadata but for
// their "frame_range" (the same recording, settings, calibration, software),
// frame ranges that follow each other with no gap and no overlap (in any
// order on the command line). The joined file records the union of the ranges,
// or none when the union is the whole recording: then it is the file an
// unsharded replay writes. Anything else is an InputError naming the files,
// and nothing is written (the output appears under its name only when complete).
//
// Images are joined in memory (the joined map's rows, as the replay's own
// sinks hold them); PLY records are copied as they are, a few MiB at a time.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <vector>

#include "core/types.h"

namespace stripeline::io {

enum class ShardKind { PointCloud, HeightMap, RangeMap, RangeCodes, Xyz };
// "point cloud", "height map", "range map", "range-map codes", "XYZ TIFF".
const char* to_string(ShardKind kind);

struct JoinResult {
  ShardKind kind = ShardKind::PointCloud;
  std::size_t parts = 0;
  std::uint64_t items = 0;  // PLY vertices, or image rows
  FrameRange frames;        // the union of the parts' ranges
};

JoinResult join_shards(const std::vector<std::filesystem::path>& shards, const std::filesystem::path& out);

}  // namespace stripeline::io
