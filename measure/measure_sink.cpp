#include "measure/measure_sink.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/errors.h"
#include "core/fixed_point.h"
#if STRIPELINE_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "core/cuda/check.h"
#endif

namespace stripeline::measure {

MeasureSink::MeasureSink(std::shared_ptr<const Job> job, OnResult on_result, int queue_parts)
    : job_(std::move(job)), on_result_(std::move(on_result)), queue_parts_(queue_parts) {}

MeasureSink::~MeasureSink() { stop_worker(); }

void MeasureSink::stop_worker() noexcept {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closing_ = true;
  }
  wake_.notify_all();
  if (worker_.joinable()) worker_.join();
}

void MeasureSink::set_job(std::shared_ptr<const Job> job) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (begun_ && job->units != units_)
    throw InputError(job->file + ": job.units = \"" + job->units + "\" but the running scan is in " + units_ + " (expected units = \"" + units_ +
                     "\")");
  pending_ = std::move(job);
  has_pending_ = true;
}

std::shared_ptr<const Job> MeasureSink::job() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return job_;
}

void MeasureSink::take_pending_job() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!pending_) return;
  job_ = std::move(pending_);
  pending_ = nullptr;
  has_pending_ = false;
  if (detector_) id_base_ += detector_->parts();
  detector_ = std::make_unique<PartDetector>(job_->detection, pitch_, units_, [this](Part&& part) { on_part(std::move(part)); });
}

void MeasureSink::on_part(Part&& part) {
  part.id += id_base_;
  if (queue_parts_ == 0) {
    const PartResult r = measure_part(*job_, part, volume_);
    if (on_result_) on_result_(r, part);
    detector_->recycle(std::move(part));
    return;
  }
  std::unique_lock<std::mutex> lock(mutex_);
  for (auto& d : done_) detector_->recycle(std::move(d));
  done_.clear();
  if (error_) std::rethrow_exception(error_);
  if (static_cast<int>(queue_.size()) >= queue_parts_) {
    ++dropped_;
    lock.unlock();
    detector_->recycle(std::move(part));
    return;
  }
  queue_.emplace_back(std::move(part), job_);
  lock.unlock();
  wake_.notify_one();
}

void MeasureSink::work() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return closing_ || !queue_.empty(); });
    if (queue_.empty()) return;  // closing, all measured
    Part part = std::move(queue_.front().first);
    const std::shared_ptr<const Job> job = std::move(queue_.front().second);
    queue_.pop_front();
    lock.unlock();
    try {
      const PartResult r = measure_part(*job, part, volume_);
      if (on_result_) on_result_(r, part);
    } catch (...) {
      lock.lock();
      error_ = std::current_exception();
      continue;
    }
    lock.lock();
    done_.push_back(std::move(part));
  }
}

// On the CUDA backend the volume tools sum on the device the scan runs on
// (measure/device_volume.h); otherwise on the CPU.
void MeasureSink::use_device(Backend backend) {
  volume_ = nullptr;
#if STRIPELINE_HAVE_CUDA
  if (backend != Backend::Cuda) return;
  int device = 0;
  STRIPELINE_CUDA_CHECK(cudaGetDevice(&device));
  if (!device_volume_ || device_volume_device_ != device) device_volume_ = std::make_unique<DeviceVolume>(device), device_volume_device_ = device;
  volume_ = [d = device_volume_.get()](const Part& part, const kernels::VolumeQuery& q) { return d->sums(part, q); };
#else
  (void)backend;
#endif
}

void MeasureSink::begin(const ScanInfo& info) {
  stop_worker();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (pending_) job_ = std::move(pending_);
    pending_ = nullptr;
    has_pending_ = false;
  }
  mapping_ = ProfileMapping(info.calibration, kDefaultHeightCodeBits, info.sheet);
  const std::string units = info.sheet ? "mm" : info.calibration.unit();
  if (units != job_->units)
    throw InputError(job_->file + ": job.units = \"" + job_->units + "\" but the scan is in " + units +
                     (units == "px" ? " (expected a sheet-of-light calibration: --calibration FILE, or units = \"px\" in the job)"
                                     : " (expected units = \"mm\" in the job)"));
  double pitch = 1.0;
  if (info.sheet) pitch = info.sheet->model.y_step;
  else if (info.calibration.enabled) pitch = info.calibration.y_scale;
  rows_ = 0;
  use_device(info.backend);
  std::lock_guard<std::mutex> lock(mutex_);
  units_ = units;
  pitch_ = std::abs(pitch);
  begun_ = true;
  queue_.clear();
  done_.clear();
  closing_ = false;
  error_ = nullptr;
  id_base_ = 0;
  detector_ = std::make_unique<PartDetector>(job_->detection, pitch_, units_, [this](Part&& part) { on_part(std::move(part)); });
  if (queue_parts_ > 0) worker_ = std::thread([this] { work(); });
}

void MeasureSink::consume(const ProfileSpan& p) {
  for (int f = 0; f < p.frames; ++f) {
    const FrameMeta& meta = p.meta[f];
    if (has_pending_.load(std::memory_order_relaxed) && !detector_->in_part()) take_pending_job();
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
    if (!sorted) {  // a lens or a second peak can put a point out of X order: sort the pairs
      std::vector<std::size_t> order(row_.x.size());
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return row_.x[a] < row_.x[b]; });
      std::vector<float> xs(order.size()), zs(order.size());
      for (std::size_t i = 0; i < order.size(); ++i) xs[i] = row_.x[order[i]], zs[i] = row_.z[order[i]];
      row_.x.swap(xs);
      row_.z.swap(zs);
    }
    ++rows_;
    detector_->push(row_);
  }
}

void MeasureSink::finish() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    begun_ = false;
  }
  if (detector_) detector_->finish();
  stop_worker();  // the queued parts are measured first
  if (error_) std::rethrow_exception(error_);
}

void MeasureSink::abort() noexcept {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    begun_ = false;
    queue_.clear();
  }
  stop_worker();
}

}  // namespace stripeline::measure
