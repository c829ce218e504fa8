#include "pipeline/xyz_tiff_sink.h"

#include <limits>

#include "io/image_writer.h"
#include "pipeline/scan_metadata.h"

namespace stripeline {

XyzTiffSink::XyzTiffSink(std::filesystem::path path, std::uint64_t expected_rows)
    : path_(std::move(path)), expected_rows_(expected_rows) {}

void XyzTiffSink::begin(const ScanInfo& info) {
  mapping_ = ProfileMapping(info.calibration, kDefaultHeightCodeBits, info.sheet);
  width_ = info.layout.width;
  rows_ = 0;
  for (auto* plane : {&x_, &y_, &z_}) {
    plane->clear();
    if (expected_rows_) plane->reserve(expected_rows_ * static_cast<std::size_t>(width_));
  }
  metadata::Json d = scan_document("xyz", info);
  d["planes"] = {"x", "y", "z"};
  d["slot"] = 0;
  d["no_point"] = "NaN";
  description_ = metadata::text(d);
}

void XyzTiffSink::consume(const ProfileSpan& p) {
  constexpr float kNone = std::numeric_limits<float>::quiet_NaN();
  for (int f = 0; f < p.frames; ++f) {
    const std::size_t at = x_.size();
    x_.resize(at + static_cast<std::size_t>(p.width), kNone);
    y_.resize(at + static_cast<std::size_t>(p.width), kNone);
    z_.resize(at + static_cast<std::size_t>(p.width), kNone);
    const double y = mapping_.point_y(p.index(f), p.meta[f]);
    for (int x = 0; x < p.width; ++x) {
      if (p.peaks(f, x) == 0) continue;  // no detection (a missing frame has none)
      double X, Y, Z;
      if (!mapping_.point(p, f, 0, x, y, X, Y, Z)) continue;
      x_[at + x] = static_cast<float>(X);
      y_[at + x] = static_cast<float>(Y);
      z_[at + x] = static_cast<float>(Z);
    }
    ++rows_;
  }
}

void XyzTiffSink::finish() {
  if (rows_ == 0) return;  // nothing scanned, nothing written
  const float* planes[3] = {x_.data(), y_.data(), z_.data()};
  io::ImageWriteOptions options;
  options.description = description_;
  io::write_float_planes_tiff(path_, planes, 3, width_, static_cast<std::int64_t>(rows_), options);
}

void XyzTiffSink::abort() noexcept {
  x_.clear();
  y_.clear();
  z_.clear();
  rows_ = 0;
}

}  // namespace stripeline
