#pragma once
// The daemon's live measurement (docs/measure.md, "Live"): a head's
// [measure] job applied to its rows as they flow. A MeasureSink beside the
// scans detects parts on the sink thread and measures them on a thread of
// its own, fed by a queue of at most measure.queue_parts parts: a part
// finding it full is dropped and counted, acquisition never waits. Each
// measured part goes out
//   - to Prometheus: stripeline_measure_parts_total{decision=...},
//     stripeline_measure_tool_results_total{tool=...,result=pass|fail},
//     stripeline_measure_parts_dropped_total (label head=... in a daemon of
//     several heads);
//   - to the publisher as a measurement message (docs/wire-format.md), or to
//     whatever set_out() gives (the merged stream's, daemon/heads.cpp);
//   - to the Modbus TCP server, when one is given (the latest part's
//     registers, on the unit identifier given: daemon/modbus_server.h);
//   - to the log (debug), its decision and values.
// The merged scan's job (docs/measure.md "Measuring the merged scan") is one
// of these too, labelled head="merged": the daemon pushes the merged rows
// into measurer() itself.
// The object outlives the pipelines (one per generation): a reload that
// restarts the pipeline, or one that only swaps the job (swap()), keeps its
// counters and its Modbus registers counting.
// Thread-safety: sink() on the pipeline's sink thread; swap, set_publisher,
// set_modbus from any thread.
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/config.h"
#include "daemon/metrics.h"
#include "measure/job.h"
#include "measure/measure_sink.h"
#include "measure/modbus_registers.h"

namespace stripeline {
class Publisher;
class ModbusServer;
}  // namespace stripeline

namespace stripeline::daemon {

// A reloaded configuration differs from the running one in its [measure]
// job (file or contents) only: the job can be swapped in without a restart.
bool only_the_job_changed(const Config& running, const Config& loaded);

class LiveMeasure {
 public:
  // `job`: LiveMeasure::load(config)'s.
  LiveMeasure(Registry& registry, const MeasureConfig& config, std::shared_ptr<const measure::Job> job, std::string head = "");
  ~LiveMeasure();

  // The job file of `config`, loaded and checked (InputError naming the key).
  static std::shared_ptr<const measure::Job> load(const MeasureConfig& config);
  // Rows keep flowing: the job takes over at the first row outside a part
  // (measure/measure_sink.h). InputError (the old job kept) when its units
  // are not the running scan's.
  void swap(std::shared_ptr<const measure::Job> job);
  std::shared_ptr<const measure::Job> job() const { return sink_.job(); }

  ProfileSink& sink() { return sink_; }
  // Rows of a feed of its own (not a pipeline's profiles) go here.
  measure::RowMeasurer& measurer() { return sink_.measurer(); }
  using Out = std::function<void(const nlohmann::json& record)>;
  void set_out(Out out);  // each part's record (nullptr: none)
  void set_publisher(Publisher* publisher);  // set_out: its measurement messages
  void set_modbus(ModbusServer* modbus, int unit = 0);
  std::uint64_t parts() const;
  int queue_parts() const { return queue_parts_; }
  // Brings the dropped-parts counter up to date (the daemon's collect()).
  void collect();

 private:
  void on_result(const measure::PartResult& r);
  std::string labels(const std::string& more) const;

  Registry& registry_;
  const std::string head_;
  const int queue_parts_;
  Counter& dropped_counter_;
  std::mutex dropped_mu_;
  std::uint64_t dropped_seen_ = 0;  // under dropped_mu_
  mutable std::mutex mu_;           // guards the members below (held while a part goes out)
  Out out_;
  ModbusServer* modbus_ = nullptr;
  int unit_ = 0;
  measure::PartCounters counters_;
  std::uint16_t update_ = 0;
  std::vector<std::uint16_t> registers_;
  measure::MeasureSink sink_;  // last: its worker stops before the members it calls go
};

}  // namespace stripeline::daemon
