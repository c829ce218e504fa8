#pragma once
// The measuring sink (docs/measure.md): each profile's points, mapped as
// every other sink maps them (core/profile_mapping.h: the calibration's mm,
// else px), become a row; part detection (measure/part_detector.h) cuts
// parts out of the rows; each part that ends is measured by the job's tools
// (measure/tools.h) and handed to `on_result`.
//
// Where the tools run: with queue_parts = 0 on the pipeline's sink thread
// (offline: every part measured); with queue_parts = N > 0 on a worker
// thread of the sink's own, fed by a queue of at most N parts: detection
// stays on the sink thread (a pass over each row's points), and a part
// finding the queue full is counted in dropped() and not measured, so the
// tools never stall acquisition. on_result then runs on the worker.
// A job is swapped while rows flow (set_job, the daemon's reload): the new
// job takes over at the first row where no part is open (a part is measured
// with the job it started under), its detector starts afresh (a belt
// reference is learnt again), part ids go on counting; no row is skipped.
// Thread-safety: begin/consume/finish/abort on the pipeline's one sink
// thread; set_job, job, dropped and parts from any thread.
#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/profile_mapping.h"
#include "measure/device_volume.h"
#include "measure/job.h"
#include "measure/part_detector.h"
#include "measure/tools.h"
#include "pipeline/sink.h"

namespace stripeline::measure {

class MeasureSink final : public ProfileSink {
 public:
  using OnResult = std::function<void(const PartResult&, const Part&)>;
  MeasureSink(std::shared_ptr<const Job> job, OnResult on_result, int queue_parts = 0);
  ~MeasureSink() override;
  // InputError when the job's units and the scan's differ (a mm job needs a
  // sheet-of-light calibration).
  void begin(const ScanInfo& info) override;
  void consume(const ProfileSpan& profiles) override;
  void finish() override;
  void abort() noexcept override;

  // Any thread. InputError (and nothing changes) when the job's units are not
  // the running scan's; before begin(), the next begin() takes it.
  void set_job(std::shared_ptr<const Job> job);
  // The job parts start under now (the pending one once it took over).
  std::shared_ptr<const Job> job() const;

  const std::string& units() const { return units_; }
  std::uint64_t rows() const { return rows_; }
  std::uint64_t dropped() const { return dropped_.load(); }  // over the sink's life, every scan

 private:
  void on_part(Part&& part);
  void use_device(Backend backend);  // begin(): where the volume tools sum
  void take_pending_job();  // sink thread
  void work();
  void stop_worker() noexcept;

  std::shared_ptr<const Job> job_;      // written on the sink thread under mutex_
  std::shared_ptr<const Job> pending_;  // under mutex_
  std::atomic<bool> has_pending_{false};
  bool begun_ = false;                  // under mutex_
  double pitch_ = 1.0;
  std::uint64_t id_base_ = 0;           // parts of the detectors before this one
  OnResult on_result_;
  ProfileMapping mapping_;
  std::unique_ptr<PartDetector> detector_;
  MeasureRow row_;
  std::string units_ = "mm";
  std::uint64_t rows_ = 0;
  int queue_parts_ = 0;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::pair<Part, std::shared_ptr<const Job>>> queue_;
  std::vector<Part> done_;  // measured on the worker: their rows go back to the detector
  bool closing_ = false;
  std::exception_ptr error_;
  std::atomic<std::uint64_t> dropped_{0};
  VolumeSummer volume_;  // set in begin(); none: the CPU
#if STRIPELINE_HAVE_CUDA
  std::unique_ptr<DeviceVolume> device_volume_;
  int device_volume_device_ = -1;
#endif
  std::thread worker_;
};

}  // namespace stripeline::measure
