#pragma once
// The measuring sink (docs/measure.md): each profile's points, mapped as
// every other sink maps them (core/profile_mapping.h: the calibration's mm,
// else px), become a row; part detection (measure/part_detector.h) cuts
// parts out of the rows; each part that ends is measured by the job's tools
// (measure/tools.h) and handed to `on_result`.
//
// Detection, the worker and job swaps are the RowMeasurer's
// (measure/row_measurer.h): with queue_parts = 0 the tools run on the
// pipeline's sink thread (offline: every part measured); with queue_parts =
// N > 0 on a worker thread, a part finding the queue full counted in
// dropped() and not measured, so the tools never stall acquisition; a job set
// while rows flow takes over at the first row where no part is open.
// Thread-safety: begin/consume/finish/abort on the pipeline's one sink
// thread; set_job, job, dropped and parts from any thread.
#include <functional>
#include <memory>

#include "core/profile_mapping.h"
#include "measure/device_volume.h"
#include "measure/job.h"
#include "measure/part_detector.h"
#include "measure/row_measurer.h"
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
  void set_job(std::shared_ptr<const Job> job) { rows_measurer_.set_job(std::move(job)); }
  // The job parts start under now (the pending one once it took over).
  std::shared_ptr<const Job> job() const { return rows_measurer_.job(); }

  const std::string& units() const { return rows_measurer_.units(); }
  std::uint64_t rows() const { return rows_; }
  std::uint64_t dropped() const { return rows_measurer_.dropped(); }  // over the sink's life, every scan
  // What the rows go to; a feed of rows of its own (the daemon's merged scan) uses it directly.
  RowMeasurer& measurer() { return rows_measurer_; }

 private:
  VolumeSummer use_device(Backend backend);  // begin(): where the volume tools sum

  ProfileMapping mapping_;
  MeasureRow row_;
  std::vector<std::uint32_t> sort_order_;  // row_.sort_by_x's, kept from row to row
  std::vector<float> sort_scratch_;
  std::uint64_t rows_ = 0;
#if STRIPELINE_HAVE_CUDA
  std::unique_ptr<DeviceVolume> device_volume_;
  int device_volume_device_ = -1;
#endif
  RowMeasurer rows_measurer_;  // last: its worker stops before the members it uses go
};

}  // namespace stripeline::measure
