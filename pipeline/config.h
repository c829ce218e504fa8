#pragma once
// The configuration of a run, as read from TOML (configs/*.toml documents
// every key). Unknown keys and out-of-range values are ConfigErrors naming
// the file and the key: a typo never silently falls back to a default.
#include <filesystem>
#include <optional>
#include <string>

#include "acquisition/file_source.h"
#include "acquisition/synthetic_scanner.h"
#include "core/calibration.h"
#include "io/ply_writer.h"
#include "pipeline/pipeline.h"

namespace stripeline {

enum class SourceKind { Synthetic, File };

struct OutputConfig {
  std::filesystem::path dir = "out";
  std::string ply = "scan.ply";            // "" = no PLY
  io::PlyEncoding ply_encoding = io::PlyEncoding::BinaryLittleEndian;
  std::string heightmap = "heightmap.png"; // 16-bit PNG or TIFF; "" = none
  std::string preview = "preview.png";     // 8-bit PNG; "" = none
  std::string summary = "summary.json";    // "" = none
  int height_bits = kDefaultHeightCodeBits;

  // Path of an output file: absolute names stay, relative ones go under dir.
  std::filesystem::path resolve(const std::string& name) const;
};

struct Config {
  SourceKind source = SourceKind::Synthetic;
  SyntheticConfig synthetic;
  FileSourceConfig file;
  PipelineOptions pipeline;
  OutputConfig output;
  std::filesystem::path origin;  // the file it came from ("" = built-in defaults)
};

// Built-in defaults: the demo scan of `stripeline run`.
Config default_config();
// Parse a TOML file over the defaults. Throws ConfigError("<file>: <key> ...").
Config load_config(const std::filesystem::path& path);
// Same, from text (tests); `origin` names it in messages.
Config parse_config(const std::string& toml_text, const std::string& origin);

}  // namespace stripeline
