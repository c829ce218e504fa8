#pragma once
// A scan's metadata document (core/metadata.h) from what the pipeline tells
// its sinks: every sink's description starts here.
#include <string_view>

#include "core/metadata.h"
#include "pipeline/sink.h"

namespace stripeline {

metadata::Scan scan_metadata(const ScanInfo& info);
// The line model's values as outputs record them (candidates 0: it is off).
metadata::Scan::LineModel line_model_metadata(const ChainConfig& chain);
// metadata::scan_document(kind, scan_metadata(info)).
metadata::Json scan_document(std::string_view kind, const ScanInfo& info);

}  // namespace stripeline
