// stripeline describe FILE...: what each file is and every processing setting
// it records, from its metadata document (core/metadata.h, docs/data-model.md).
// Height maps, XYZ TIFFs, range maps, recordings (PNG/TIFF), PLY point clouds,
// summary JSON files, calibration files (TOML). `--json`: one JSON object a
// line, {"file": F, "format": ..., the document's fields}: the same facts as
// python -m stripeline describe (python/stripeline/describe.py).
#include <cstdio>
#include <string>
#include <vector>

#include "calibration/calibration_file.h"
#include "core/errors.h"
#include "io/metadata_reader.h"
#include "tools/commands.h"

namespace stripeline::tools {
namespace {

metadata::Json describe_file(const std::string& path) {
  const std::filesystem::path p(path);
  if (p.extension() == ".toml") {  // a calibration file: what it records, validated
    metadata::Json d = {{"format", "TOML"}};
    d.update(calibration_file_document(load_calibration(p)));
    return d;
  }
  return io::read_metadata(p);
}

// "  key: value" lines, nested objects as dotted keys, arrays as JSON.
void print_fields(const metadata::Json& j, const std::string& prefix) {
  for (const auto& [key, value] : j.items()) {
    if (value.is_object()) {
      print_fields(value, prefix + key + ".");
      continue;
    }
    const std::string text = value.is_string() ? value.get<std::string>() : metadata::text(value);
    std::printf("  %s%s: %s\n", prefix.c_str(), key.c_str(), text.c_str());
  }
}

}  // namespace

Subcommand add_describe(CLI::App& app) {
  auto* cmd = app.add_subcommand("describe", "Say what each file is and every processing setting it records (height maps, XYZ TIFF, "
                                             "range maps, recordings, PLY, summary JSON, calibration TOML)");
  static std::vector<std::string> files;
  static bool json = false;
  cmd->add_option("files", files, "Files written by stripeline")->required();
  cmd->add_flag("--json", json, "One JSON object a line: {\"file\", \"format\", the metadata's fields} (as python -m stripeline describe)");
  return {cmd, [] {
            int rc = 0;
            for (const std::string& f : files) {
              metadata::Json d;
              try {
                d = describe_file(f);
              } catch (const InputError& e) {
                std::fprintf(stderr, "stripeline: error: %s\n", e.what());
                rc = 2;
                continue;
              }
              if (json) {
                metadata::Json line = {{"file", f}};
                line.update(d);
                std::printf("%s\n", metadata::text(line).c_str());
                continue;
              }
              const std::string kind = d.value("stripeline", std::string("?"));
              std::printf("%s: %s (%s)\n", f.c_str(), kind.c_str(), d.value("format", std::string("?")).c_str());
              d.erase("stripeline");
              d.erase("format");
              print_fields(d, "");
            }
            return rc;
          }};
}

}  // namespace stripeline::tools
