#include "measure/row_measurer.h"

#include <cmath>

#include "core/errors.h"

namespace stripeline::measure {

RowMeasurer::RowMeasurer(std::shared_ptr<const Job> job, OnResult on_result, int queue_parts)
    : job_(std::move(job)), on_result_(std::move(on_result)), queue_parts_(queue_parts) {}

RowMeasurer::~RowMeasurer() { stop_worker(); }

void RowMeasurer::stop_worker() noexcept {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closing_ = true;
  }
  wake_.notify_all();
  if (worker_.joinable()) worker_.join();
}

void RowMeasurer::set_job(std::shared_ptr<const Job> job) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (begun_ && job->units != units_)
    throw InputError(job->file + ": job.units = \"" + job->units + "\" but the running scan is in " + units_ + " (expected units = \"" + units_ +
                     "\")");
  pending_ = std::move(job);
  has_pending_ = true;
}

std::shared_ptr<const Job> RowMeasurer::job() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return job_;
}

void RowMeasurer::take_pending_job() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!pending_) return;
  job_ = std::move(pending_);
  pending_ = nullptr;
  has_pending_ = false;
  if (detector_) id_base_ += detector_->parts();
  detector_ = std::make_unique<PartDetector>(job_->detection, pitch_, units_, [this](Part&& part) { on_part(std::move(part)); });
}

void RowMeasurer::on_part(Part&& part) {
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

void RowMeasurer::work() {
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

void RowMeasurer::begin(const std::string& units, double pitch, VolumeSummer volume, const std::string& expected) {
  stop_worker();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (pending_) job_ = std::move(pending_);
    pending_ = nullptr;
    has_pending_ = false;
  }
  if (units != job_->units)
    throw InputError(job_->file + ": job.units = \"" + job_->units + "\" but the scan is in " + units +
                     (expected.empty() ? " (expected units = \"" + units + "\" in the job)" : expected));
  volume_ = std::move(volume);
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

void RowMeasurer::push(MeasureRow& row) {
  if (has_pending_.load(std::memory_order_relaxed) && !detector_->in_part()) take_pending_job();
  detector_->push(row);
}

void RowMeasurer::finish() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    begun_ = false;
  }
  if (detector_) detector_->finish();
  stop_worker();  // the queued parts are measured first
  if (error_) std::rethrow_exception(error_);
}

void RowMeasurer::abort() noexcept {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    begun_ = false;
    queue_.clear();
  }
  stop_worker();
}

}  // namespace stripeline::measure
