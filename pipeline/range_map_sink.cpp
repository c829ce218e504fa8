#include "pipeline/range_map_sink.h"

#include <cmath>

#include "core/errors.h"
#include "io/float_tiff_writer.h"
#include "io/image_writer.h"
#include "pipeline/scan_metadata.h"

namespace stripeline {

void RangeMapOptions::validate() const {
  grid.validate();
  if (!(z_scale > 0) || !std::isfinite(z_scale) || !std::isfinite(z_offset))
    throw InputError("range-map code scale " + std::to_string(z_scale) + " is not usable (expected OFFSET:SCALE in mm with SCALE > 0)");
  if (float_tiff.empty() && codes.empty()) throw InputError("range map: nothing to write (expected a float TIFF and/or a 16-bit code image)");
}


RangeMapSink::RangeMapSink(RangeMapOptions options) : o_(std::move(options)) { o_.validate(); }

void RangeMapSink::begin(const ScanInfo& info) {
  if (!info.sheet)
    throw InputError("range maps need a sheet-of-light calibration (expected --calibration FILE or [calibration] file)");
  mapping_ = ProfileMapping(info.calibration, kDefaultHeightCodeBits, info.sheet);
  bins_ = o_.grid.bins();
  key_.assign(bins_, 0.0f);
  n_.assign(bins_, 0);
  rows_.clear();
  // Z in mm (NaN = no data), column i at X = x_min + i * dx mm, row = frame (docs/calibration.md "range maps").
  metadata::Json d = scan_document("range-map", info);
  d["values"] = "Z mm, NaN = no data";
  d["grid"] = {{"x_min_mm", o_.grid.x_min}, {"dx_mm", o_.grid.dx}, {"bins", bins_}, {"rule", kernels::rectify_rule_name(o_.grid.rule)}, {"fill_bins", o_.grid.fill}};
  description_ = d;
}

void RangeMapSink::consume(const ProfileSpan& p) {
  for (int f = 0; f < p.frames; ++f) {
    const std::size_t at = rows_.size();
    rows_.resize(at + static_cast<std::size_t>(bins_));
    const kernels::RectifyAccumulator acc{rows_.data() + at, key_.data(), n_.data()};
    acc.clear(bins_);
    const double y = mapping_.point_y(p.index(f), p.meta[f]);
    for (int x = 0; x < p.width; ++x) {
      const int n = p.peaks(f, x);
      for (int s = 0; s < n; ++s) {
        double X, Y, Z;
        if (mapping_.point(p, f, s, x, y, X, Y, Z)) acc.add(o_.grid, bins_, X, Z);
      }
    }
    acc.finish(o_.grid, bins_);
  }
}

void RangeMapSink::finish() {
  const std::int64_t rows = static_cast<std::int64_t>(rows_.size() / (bins_ ? bins_ : 1));
  if (rows == 0) return;
  if (!o_.float_tiff.empty()) io::write_float_tiff(o_.float_tiff, rows_.data(), bins_, rows, metadata::text(description_));
  if (!o_.codes.empty()) {
    std::vector<std::uint16_t> codes(rows_.size());
    for (std::size_t i = 0; i < rows_.size(); ++i) codes[i] = kernels::range_code(rows_[i], o_.z_offset, o_.z_scale);
    metadata::Json d = description_;
    d["values"] = "16-bit code, 0 = no data";
    d["code"] = {{"z_offset_mm", o_.z_offset}, {"z_scale_mm", o_.z_scale}, {"meaning", "Z mm = z_offset_mm + code * z_scale_mm"}};
    io::ImageWriteOptions w;
    w.description = metadata::text(d);
    io::write_image(o_.codes, codes.data(), bins_, rows, PixelFormat::Mono16, w);
  }
}

std::vector<std::filesystem::path> RangeMapSink::files() const {
  std::vector<std::filesystem::path> f;
  if (!o_.float_tiff.empty()) f.push_back(o_.float_tiff);
  if (!o_.codes.empty()) f.push_back(o_.codes);
  return f;
}

}  // namespace stripeline
