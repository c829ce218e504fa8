#include "pipeline/range_map_sink.h"

#include <cmath>
#include <cstdio>

#include "core/errors.h"
#include "io/float_tiff_writer.h"
#include "io/image_writer.h"

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
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "stripeline rectified range map: Z in mm (NaN = no data), column i at X = %.9g + i * %.9g mm, row = frame "
                "(Y = frame * %.9g mm), rule %s, gaps up to %d bins filled; calibration id %s",
                o_.grid.x_min, o_.grid.dx, info.sheet->model.y_step,
                o_.grid.rule == kernels::RectifyRule::Max   ? "max"
                : o_.grid.rule == kernels::RectifyRule::Min ? "min"
                : o_.grid.rule == kernels::RectifyRule::Mean ? "mean"
                                                             : "nearest",
                o_.grid.fill, info.sheet->id.c_str());
  description_ = buf;
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
  if (!o_.float_tiff.empty()) io::write_float_tiff(o_.float_tiff, rows_.data(), bins_, rows, description_);
  if (!o_.codes.empty()) {
    std::vector<std::uint16_t> codes(rows_.size());
    for (std::size_t i = 0; i < rows_.size(); ++i) codes[i] = kernels::range_code(rows_[i], o_.z_offset, o_.z_scale);
    char buf[160];
    std::snprintf(buf, sizeof buf, "; 16-bit code: Z mm = %.9g + code * %.9g, 0 = no data", o_.z_offset, o_.z_scale);
    io::ImageWriteOptions w;
    w.description = description_ + buf;
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
