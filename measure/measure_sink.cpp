#include "measure/measure_sink.h"

#include <algorithm>
#include <cmath>

#include "core/errors.h"
#include "core/fixed_point.h"
#if STRIPELINE_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "core/cuda/check.h"
#endif

namespace stripeline::measure {

MeasureSink::MeasureSink(std::shared_ptr<const Job> job, OnResult on_result, int queue_parts)
    : rows_measurer_(std::move(job), std::move(on_result), queue_parts) {}

MeasureSink::~MeasureSink() = default;

// On the CUDA backend the volume tools sum on the device the scan runs on
// (measure/device_volume.h); otherwise on the CPU.
VolumeSummer MeasureSink::use_device(Backend backend) {
#if STRIPELINE_HAVE_CUDA
  if (backend != Backend::Cuda) return nullptr;
  int device = 0;
  STRIPELINE_CUDA_CHECK(cudaGetDevice(&device));
  if (!device_volume_ || device_volume_device_ != device) device_volume_ = std::make_unique<DeviceVolume>(device), device_volume_device_ = device;
  return [d = device_volume_.get()](const Part& part, const kernels::VolumeQuery& q) { return d->sums(part, q); };
#else
  (void)backend;
  return nullptr;
#endif
}

void MeasureSink::begin(const ScanInfo& info) {
  mapping_ = ProfileMapping(info.calibration, kDefaultHeightCodeBits, info.sheet);
  const std::string units = info.sheet ? "mm" : info.calibration.unit();
  double pitch = 1.0;
  if (info.sheet) pitch = info.sheet->model.y_step;
  else if (info.calibration.enabled) pitch = info.calibration.y_scale;
  rows_ = 0;
  rows_measurer_.begin(units, pitch, use_device(info.backend),
                       units == "px" ? " (expected a sheet-of-light calibration: --calibration FILE, or units = \"px\" in the job)"
                                     : " (expected units = \"mm\" in the job)");
}

void MeasureSink::consume(const ProfileSpan& p) {
  for (int f = 0; f < p.frames; ++f) {
    const FrameMeta& meta = p.meta[f];
    row_.clear_points();
    row_.frame = p.index(f);
    row_.y = mapping_.point_y(p.index(f), meta);
    row_.encoder = meta.encoder;
    row_.has_encoder = meta.has_encoder;
    row_.timestamp_ns = meta.timestamp_ns;
    bool sorted = true;
    for (int x = 0; x < p.width; ++x) {
      const int n = p.peaks(f, x);
      for (int s = 0; s < n; ++s) {
        double X, Y, Z;
        if (!mapping_.point(p, f, s, x, row_.y, X, Y, Z) || !std::isfinite(X) || !std::isfinite(Z)) continue;
        sorted = sorted && (row_.x.empty() || X >= row_.x.back());
        row_.x.push_back(static_cast<float>(X));
        row_.z.push_back(static_cast<float>(Z));
      }
    }
    if (!sorted) row_.sort_by_x(sort_order_, sort_scratch_);
    ++rows_;
    rows_measurer_.push(row_);
  }
}

void MeasureSink::finish() { rows_measurer_.finish(); }

void MeasureSink::abort() noexcept { rows_measurer_.abort(); }

}  // namespace stripeline::measure
