#pragma once
// Reads back the metadata document (core/metadata.h) an output carries:
// PNG tEXt "Description", TIFF ImageDescription, the PLY header comment
// "stripeline-metadata {...}", or a JSON file (summary.json). For
// `stripeline describe` and tests; python/stripeline/describe.py reads the
// same places.
#include <filesystem>
#include <string>

#include "core/metadata.h"

namespace stripeline::io {

// {"format": "PNG" | "TIFF" | "PLY" | "JSON", then the document's fields}.
// Throws InputError naming the file when it cannot be read, is none of
// these, or carries no stripeline document.
metadata::Json read_metadata(const std::filesystem::path& path);
// The document alone, as written (no "format" key); `format` gets "PNG",
// "TIFF", "PLY" or "JSON". Throws as read_metadata().
metadata::Json read_document(const std::filesystem::path& path, std::string* format = nullptr);

}  // namespace stripeline::io
