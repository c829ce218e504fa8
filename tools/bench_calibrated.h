#pragma once
// `stripeline bench --calibration FILE`: what applying a sheet-of-light
// calibration costs in the production streaming run. The sink maps every
// detection of each batch to (X, Y, Z) mm with the same function the PLY
// sink and the CUDA kernel use (kernels/calibrated_points.h), on the host,
// frames spread over the cores (oneTBB), into a buffer reused across batches
// -- the work every calibrated output does today, measured where it runs.
#include <tbb/parallel_for.h>

#include <cmath>
#include <memory>
#include <vector>

#include "core/applied_calibration.h"
#include "kernels/calibrated_points.h"
#include "pipeline/sink.h"

namespace stripeline::tools {

class CalibratedPointsSink final : public ProfileSink {
 public:
  explicit CalibratedPointsSink(std::shared_ptr<const AppliedCalibration> c) : c_(std::move(c)), map_(c_->model.map<double>()) {}
  void begin(const ScanInfo& info) override {
    xyz_.assign(static_cast<std::size_t>(info.layout.frames) * info.profile_slots * info.layout.width * 3, 0.0f);
    y_.assign(static_cast<std::size_t>(info.layout.frames), 0.0);
  }
  void consume(const ProfileSpan& p) override {
    for (int f = 0; f < p.frames; ++f) y_[f] = motion_y(map_, p.index(f), p.meta[f].has_encoder ? p.meta[f].encoder : 0);
    kernels::CalibratedPointsView v;
    v.position = p.position;
    v.count = p.count;
    v.frame_y = y_.data();
    v.xyz = xyz_.data();
    v.frames = p.frames, v.slots = p.slots, v.width = p.width;
    v.roi_x = c_->roi_x, v.roi_y = c_->roi_y;
    tbb::parallel_for(0, p.frames, [&](int f) {
      for (int s = 0; s < v.slots; ++s)
        for (int x = 0; x < v.width; ++x) kernels::calibrated_point_at(map_, v, f, s, x);
    });
    // Keep the result observable: count the mapped points.
    for (std::size_t i = 2; i < static_cast<std::size_t>(p.frames) * p.slots * p.width * 3; i += 3) points_ += std::isnan(xyz_[i]) ? 0 : 1;
  }
  void finish() override {}
  std::uint64_t points() const { return points_; }

 private:
  std::shared_ptr<const AppliedCalibration> c_;
  SheetOfLightMap<double> map_;
  std::vector<float> xyz_;
  std::vector<double> y_;
  std::uint64_t points_ = 0;
};

}  // namespace stripeline::tools
