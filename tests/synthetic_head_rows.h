#pragma once
// Rows of a synthetic head as its processor hands them to the publisher:
// WIDTH columns, one slot, every column detected, the calibrated points
// already in the span (head-local X across the view, Z from a profile
// function), frame f with frame id f, encoder count 4 f, timestamp
// f * 100 us. For the merge's tests and benchmark (tests/test_merge.cpp,
// bench/merge_bench.cpp): the stream is real, only the extraction is skipped.
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <vector>

#include "core/applied_calibration.h"
#include "core/profile.h"
#include "pipeline/sink.h"

namespace stripeline::test {

class SyntheticHeadRows {
 public:
  // z_of(frame, local_x) in mm (NaN = no point); local X spans [x0, x1] over the columns.
  SyntheticHeadRows(int width, int capacity, double x0, double x1, std::function<double(std::uint64_t, double)> z_of)
      : width_(width), capacity_(capacity), x0_(x0), x1_(x1), z_of_(std::move(z_of)) {
    const std::size_t n = static_cast<std::size_t>(width) * capacity;
    position_.assign(n, 100 * 256);
    intensity_.assign(n, 200);
    swidth_.assign(n, 3);
    quality_.assign(n, 40);
    count_.assign(n, 1);
    xyz_.assign(3 * n, 0.0f);
    meta_.resize(static_cast<std::size_t>(capacity));
    sheet_ = std::make_shared<AppliedCalibration>();
    sheet_->model.kind = SheetOfLightModel::Kind::SheetOfLight;
    sheet_->model.unit = "mm";
    sheet_->model.y_step = 0.1;  // motion_y = frame * 0.1 mm
  }

  double x_of(int column) const { return x0_ + (x1_ - x0_) * column / (width_ - 1); }
  void set_quality(std::uint16_t q) { std::fill(quality_.begin(), quality_.end(), q); }

  // Frames [first, first + n) (n <= capacity) as a span with their points.
  ProfileSpan span(std::uint64_t first, int n) {
    for (int f = 0; f < n; ++f) {
      const std::uint64_t frame = first + static_cast<std::uint64_t>(f);
      FrameMeta& m = meta_[static_cast<std::size_t>(f)];
      m.frame_id = frame;
      m.encoder = static_cast<std::int64_t>(4 * frame);
      m.has_encoder = true;
      m.timestamp_ns = static_cast<std::int64_t>(frame) * 100'000;
      m.missing = false;
      for (int c = 0; c < width_; ++c) {
        const std::size_t i = static_cast<std::size_t>(f) * width_ + c;
        const double z = z_of_(frame, x_of(c));
        count_[i] = std::isnan(z) ? 0 : 1;
        float* p = xyz_.data() + 3 * i;
        if (std::isnan(z)) {
          p[0] = p[1] = p[2] = std::numeric_limits<float>::quiet_NaN();
        } else {
          p[0] = static_cast<float>(x_of(c)), p[1] = 0.0f, p[2] = static_cast<float>(z);
        }
      }
    }
    ProfileSpan s;
    s.first_index = first;
    s.frames = n, s.width = width_, s.slots = 1, s.meta = meta_.data(), s.position = position_.data();
    s.intensity = intensity_.data(), s.stripe_width = swidth_.data(), s.quality = quality_.data(), s.count = count_.data();
    s.xyz = xyz_.data();
    return s;
  }

  ScanInfo info(const std::string& source) const {
    ScanInfo info;
    info.layout.width = width_;
    info.layout.frame_height = 256;
    info.layout.frames = capacity_;
    info.sheet = sheet_;
    info.source = source;
    return info;
  }

 private:
  int width_, capacity_;
  double x0_, x1_;
  std::function<double(std::uint64_t, double)> z_of_;
  std::vector<std::int32_t> position_;
  std::vector<std::uint16_t> intensity_, swidth_, quality_;
  std::vector<std::uint8_t> count_;
  std::vector<float> xyz_;
  std::vector<FrameMeta> meta_;
  std::shared_ptr<AppliedCalibration> sheet_;
};

}  // namespace stripeline::test
