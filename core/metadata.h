#pragma once
// The one metadata serializer (docs/data-model.md "Metadata"): every output
// that says what it is and how it was made writes one JSON document built
// here, and every reader parses it back with parse() below (C++) or
// stripeline.describe (Python).
//
//   {"stripeline": KIND, "schema": 1, "software": "stripeline X.Y.Z", ...}
//
// KIND: "heightmap", "xyz", "range-map", "point-cloud", "summary",
// "recording", "series-start" (the stream's header). A document made by
// scan_document() carries the scan's common fields (source, method,
// frame_height, width, neighbour_check, line_model, unit, point_unit, calibration);
// each output adds its own fields with one line each:
//     d["height_bits"] = bits;
// Adding a field that every output carries is one line in scan_document().
// Raise kSchema only when a field changes meaning or goes away; new fields
// do not change it (readers ignore what they do not know).
//
// Where the text goes: a PNG tEXt "Description" / TIFF ImageDescription
// (text(): one line, ASCII), a PLY header comment (ply_comment()), a JSON
// file (pretty()), a ZeroMQ header (the stream dumps the object itself).
// Thread-safety: pure functions.
#include <nlohmann/json.hpp>

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/applied_calibration.h"
#include "core/calibration.h"
#include "core/types.h"

namespace stripeline::metadata {

using Json = nlohmann::ordered_json;

inline constexpr int kSchema = 1;
// A PLY header comment that holds the document: "comment stripeline-metadata {...}".
inline constexpr std::string_view kPlyCommentKey = "stripeline-metadata ";

// What made a scan, as every output of it records it.
struct Scan {
  std::string source;          // the source's describe()
  std::string method;          // the column method (to_string)
  int width = 0;               // columns
  int frame_height = 0;        // rows of a frame
  int neighbour_columns = 0;   // the neighbour check: 0 = off (docs/extraction.md)
  double neighbour_step = 0.0;
  // The line model (stages/chain.h LineModelConfig): candidates 0 = off.
  struct LineModel {
    int candidates = 0, min_length = 0, line_width = 0;
    double step = 0.0, jump_cost = 0.0, width_cost = 0.0, intensity_cost = 0.0, segment_cost = 0.0;
  } line_model;
  int pixel_bits = 0;          // significant bits the rows were extracted with (0 = not known)
  std::string pixel_bits_origin;  // where they came from (docs/data-model.md, "Significant bits")
  LinearCalibration linear;    // [calibration] linear keys
  std::shared_ptr<const AppliedCalibration> sheet;  // sheet-of-light calibration applied, or none
  // A shard (`replay --frames`): the frames of the recording it holds, written
  // as "frame_range": {"start", "end", "of"} after the common fields; none: the whole source.
  std::optional<FrameRange> frames;
};

// {"stripeline": kind, "schema": kSchema, "software": "stripeline <version>"}.
Json document(std::string_view kind);
// document(kind) plus the scan's common fields.
Json scan_document(std::string_view kind, const Scan& scan);

// 16 lowercase hex digits: FNV-1a 64 of `bytes` (file and settings digests).
std::string fnv1a_hex(std::string_view bytes);

// The "frame_range" field of a shard's document; the key (`stripeline join`
// replaces or drops it).
inline constexpr const char* kFrameRangeKey = "frame_range";
Json frame_range(const FrameRange& r);
// The range a document records; nullopt when it records none. InputError
// naming `where` when the field is there but malformed.
std::optional<FrameRange> frame_range_of(const Json& document, const std::string& where);

// The "calibration" field: the sheet-of-light model when one is applied,
// else the linear keys ({"model": "none"} block when they are off).
Json calibration(const LinearCalibration& linear, const AppliedCalibration* sheet);
// {"model": "linear-keys" | "none", "enabled", "unit", "x_scale", ..., "y_from_encoder"}
Json linear_calibration(const LinearCalibration& c);
// {"model": "sheet-of-light" | "linear", "id", "file", "file_fnv1a", "unit", "roi_offset",
//  "y_source", "y_step_mm", "y_offset_mm", "centre", "scale", "distortion", "homography", skews}
Json sheet_calibration(const AppliedCalibration& c);

// One line of ASCII JSON (non-ASCII escaped, invalid UTF-8 replaced): what
// image descriptions and PLY comments hold.
std::string text(const Json& j);
// Indented, for JSON files (summary.json), ending in a newline.
std::string pretty(const Json& j);
// The PLY header comment (without "comment "): kPlyCommentKey + text(j).
std::string ply_comment(const Json& j);

// The one parser. `where` names the file for the message. Throws InputError
// when the text is not a JSON object.
Json parse(std::string_view text, const std::string& where);
// The document inside a description or comment text, or a null Json when
// the text is not a stripeline document (e.g. an older free-text description).
Json find_document(std::string_view text);

}  // namespace stripeline::metadata
