#include "pipeline/scan_metadata.h"

namespace stripeline {

metadata::Scan scan_metadata(const ScanInfo& info) {
  metadata::Scan s;
  s.source = info.source;
  s.method = to_string(info.chain.column.method);
  s.width = info.layout.width;
  s.frame_height = info.layout.frame_height;
  s.neighbour_columns = info.chain.neighbour_check.columns;
  s.neighbour_step = info.chain.neighbour_check.step;
  s.line_model = line_model_metadata(info.chain);
  if (info.pixel_bits.known()) {
    s.pixel_bits = info.pixel_bits.bits;
    s.pixel_bits_origin = to_string(info.pixel_bits.origin);
  }
  s.linear = info.calibration;
  s.sheet = info.sheet;
  s.frames = info.frames;
  return s;
}

metadata::Scan::LineModel line_model_metadata(const ChainConfig& chain) {
  const LineModelConfig& m = chain.line_model;
  if (!m.enabled) return {};
  return {m.candidates, m.min_length, m.line_width, m.step, m.jump_cost, m.width_cost, m.intensity_cost, m.segment_cost};
}

metadata::Json scan_document(std::string_view kind, const ScanInfo& info) { return metadata::scan_document(kind, scan_metadata(info)); }

}  // namespace stripeline
