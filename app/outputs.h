#pragma once
// The outputs of a run, a replay, a subscription or a daemon scan, wired in
// one place: PLY point cloud, 16-bit height map (+ 8-bit preview), and the
// ZeroMQ publisher. Every command and the daemon build their sinks here.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/fixed_point.h"
#include "io/ply_writer.h"
#include "pipeline/file_sinks.h"
#include "pipeline/sink.h"
#include "pipeline/xyz_tiff_sink.h"
#include "stages/backend.h"
#include "streaming/publisher.h"

namespace stripeline {

// [output] of a configuration.
struct OutputConfig {
  std::filesystem::path dir = "out";
  std::string ply = "scan.ply";            // "" = no PLY
  io::PlyEncoding ply_encoding = io::PlyEncoding::BinaryLittleEndian;
  std::string heightmap = "heightmap.png"; // 16-bit PNG or TIFF; "" = none
  std::string preview = "preview.png";     // 8-bit PNG; "" = none
  std::string summary = "summary.json";    // "" = none
  std::string xyz_tiff;                    // organised X/Y/Z: float32 TIFF of 3 planes (pipeline/xyz_tiff_sink.h); "" = none
  int height_bits = kDefaultHeightCodeBits;
  // Filters applied to the assembled height map before it is written, in
  // order ("median 3", "erode-h 32", ...; docs/heightmap-filters.md). A final
  // "to8 MIN:MAX" makes the preview from that range instead of the automatic one.
  std::vector<std::string> heightmap_filters;

  // Throws ConfigError naming the key (height_bits, heightmap_filters, and
  // the file names' extensions: ply .ply, heightmap and preview an image).
  void validate() const;
  bool any_file() const { return !ply.empty() || !heightmap.empty() || !preview.empty() || !summary.empty() || !xyz_tiff.empty(); }
  // Path of an output file: absolute names stay, relative ones go under dir.
  std::filesystem::path resolve(const std::string& name) const;
};

struct OutputOptions {
  std::string prefix;                      // prepended to every file name (the daemon's per-scan names)
  Backend filter_backend = Backend::Auto;  // processing.backend: where height-map filters run
  std::uint64_t expected_rows = 0;         // height-map rows to reserve for (0 = unknown)
  const PublisherConfig* publisher = nullptr;  // also stream (the publisher gets the output's height code and filters)
};

struct OutputSinks {
  // The sinks in run order; the file writers run on threads of their own
  // (pipeline/background_sink.h), so `ply` and `heightmap` point inside them.
  std::vector<std::unique_ptr<ProfileSink>> owned;
  std::vector<std::filesystem::path> files;  // the files the sinks will write (PLY, height map, preview, XYZ TIFF), in that order
  PlySink* ply = nullptr;
  HeightMapSink* heightmap = nullptr;
  XyzTiffSink* xyz = nullptr;
  Publisher* publisher = nullptr;
  std::vector<ProfileSink*> all() const;
};

// Creates the output directory when a file goes there (InputError when it
// cannot), then the sinks the output config asks for. Checks the names first
// (check_output_files).
OutputSinks make_output_sinks(const OutputConfig& output, const OutputOptions& options);

// What an output file is, for the checks below.
enum class OutputKind { Ply, Image16, Image8, Json, Other };

// One output path, before anything is written: its extension (PLY .ply,
// images .png/.tif/.tiff/.pgm), that it is not a directory, that its
// directory exists (or is `will_create`, the output directory made before
// writing, whose nearest existing parent must then be a directory) and is
// writable, and that a target that must be seekable (PLY, TIFF) is not a
// stream ("-", a FIFO, a device). InputError: one line naming `what` and the
// path. Creates nothing.
void check_output_path(const std::string& what, const std::filesystem::path& path, OutputKind kind,
                       const std::filesystem::path& will_create = {});
// check_output_path for every file `output` names (with `prefix`), and no two
// outputs with the same path. Creates nothing.
void check_output_files(const OutputConfig& output, const std::string& prefix = "");

// Removes what killed runs left beside the outputs (io::sweep_stale_temporaries:
// our exact temporary pattern, for these names, of processes no longer
// alive) and returns the paths removed.
std::vector<std::filesystem::path> sweep_stale_outputs(const OutputConfig& output,
                                                       const std::vector<std::filesystem::path>& more = {});

// The publisher's settings for a run: its own section, with the output's
// height code and height-map filters, the filters on `filter_backend`.
PublisherConfig publisher_for_outputs(PublisherConfig publisher, const OutputConfig& output, Backend filter_backend);

// Creates `dir` (and its parents). InputError naming it when that fails.
void create_output_dir(const std::filesystem::path& dir);

}  // namespace stripeline
