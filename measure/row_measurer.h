#pragma once
// Measuring a scan given as rows (docs/measure.md): part detection
// (measure/part_detector.h) cuts parts out of the rows pushed in; each part
// that ends is measured by the job's tools (measure/tools.h) and handed to
// `on_result`. What feeds it maps its own input to rows: the measuring sink
// a pipeline's profiles (measure/measure_sink.h), the daemon the merged
// scan's rows (daemon/heads.cpp, through grid_row of measure/scan_files.h).
//
// Where the tools run: with queue_parts = 0 on the pushing thread (offline:
// every part measured); with queue_parts = N > 0 on a worker thread of its
// own, fed by a queue of at most N parts: detection stays on the pushing
// thread (a pass over each row's points), and a part finding the queue full
// is counted in dropped() and not measured, so the tools never stall what
// pushes. on_result then runs on the worker.
// A job is swapped while rows flow (set_job, the daemon's reload): the new
// job takes over at the first row where no part is open (a part is measured
// with the job it started under), its detector starts afresh (a belt
// reference is learnt again), part ids go on counting; no row is skipped.
// Thread-safety: begin/push/finish/abort on one thread (the pushing one);
// set_job, job, dropped from any thread.
#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "measure/job.h"
#include "measure/part_detector.h"
#include "measure/tools.h"

namespace stripeline::measure {

class RowMeasurer {
 public:
  using OnResult = std::function<void(const PartResult&, const Part&)>;
  RowMeasurer(std::shared_ptr<const Job> job, OnResult on_result, int queue_parts = 0);
  ~RowMeasurer();
  RowMeasurer(const RowMeasurer&) = delete;
  RowMeasurer& operator=(const RowMeasurer&) = delete;

  // A scan starts: its rows are in `units` ("mm" or "px"), `pitch` apart
  // along the motion; the volume tools sum with `volume` (none: the CPU). A
  // job set before takes over now. InputError naming the job file when its
  // units are not the scan's (`expected`: what the message asks for; ""
  // = units = "<units>" in the job).
  void begin(const std::string& units, double pitch, VolumeSummer volume, const std::string& expected = "");
  // Takes `row` (measure/part_detector.h: it may be swapped for a recycled one).
  void push(MeasureRow& row);
  // The scan ended: the open part ends, the queued parts are measured (their
  // results out) before it returns; a tool's exception is rethrown here.
  void finish();
  void abort() noexcept;

  // Any thread. InputError (and nothing changes) when the job's units are not
  // the running scan's; before begin(), the next begin() takes it.
  void set_job(std::shared_ptr<const Job> job);
  // The job parts start under now (the pending one once it took over).
  std::shared_ptr<const Job> job() const;
  const std::string& units() const { return units_; }
  std::uint64_t dropped() const { return dropped_.load(); }  // over its life, every scan

 private:
  void on_part(Part&& part);
  void take_pending_job();
  void work();
  void stop_worker() noexcept;

  std::shared_ptr<const Job> job_;      // written on the pushing thread under mutex_
  std::shared_ptr<const Job> pending_;  // under mutex_
  std::atomic<bool> has_pending_{false};
  bool begun_ = false;                  // under mutex_
  double pitch_ = 1.0;
  std::uint64_t id_base_ = 0;           // parts of the detectors before this one
  OnResult on_result_;
  std::unique_ptr<PartDetector> detector_;
  std::string units_ = "mm";
  int queue_parts_ = 0;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::pair<Part, std::shared_ptr<const Job>>> queue_;
  std::vector<Part> done_;  // measured on the worker: their rows go back to the detector
  bool closing_ = false;
  std::exception_ptr error_;
  std::atomic<std::uint64_t> dropped_{0};
  VolumeSummer volume_;
  std::thread worker_;
};

}  // namespace stripeline::measure
