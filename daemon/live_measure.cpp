#include "daemon/live_measure.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <sstream>

#include "app/settings.h"
#include "core/errors.h"
#include "daemon/modbus_server.h"
#include "measure/records.h"
#include "streaming/publisher.h"

namespace stripeline::daemon {

namespace {
std::string head_label(const std::string& head) { return head.empty() ? std::string() : "head=\"" + head + "\""; }
}  // namespace

std::shared_ptr<const measure::Job> LiveMeasure::load(const MeasureConfig& config) {
  if (config.job.empty()) throw InputError("measure.job: is empty (expected a job file)");
  return std::make_shared<const measure::Job>(measure::load_job(config.job));
}

bool only_the_job_changed(const Config& running, const Config& loaded) {
  auto without_measure = [](const Config& c) {
    std::istringstream in(settings_values(c));
    std::string out, line;
    while (std::getline(in, line))
      if (line.rfind("measure.job ", 0) != 0) out += line + "\n";
    return out;
  };
  return running.heads.empty() && loaded.heads.empty() && without_measure(running) == without_measure(loaded);
}

LiveMeasure::LiveMeasure(Registry& registry, const MeasureConfig& config, std::shared_ptr<const measure::Job> job, std::string head)
    : registry_(registry),
      head_(std::move(head)),
      queue_parts_(config.queue_parts),
      dropped_counter_(registry.counter("stripeline_measure_parts_dropped_total",
                                        "Parts not measured: the measuring queue (measure.queue_parts) was full", head_label(head_))),
      sink_(std::move(job), [this](const measure::PartResult& r, const measure::Part&) { on_result(r); }, config.queue_parts) {
  // Every family shows from the start (0), not only after the first part.
  for (const char* d : {"pass", "fail", "none"})
    registry_.counter("stripeline_measure_parts_total", "Parts measured by the live job, by the part's decision", labels(fmt::format("decision=\"{}\"", d)));
}

LiveMeasure::~LiveMeasure() = default;

std::string LiveMeasure::labels(const std::string& more) const {
  const std::string h = head_label(head_);
  return h.empty() ? more : h + "," + more;
}

void LiveMeasure::swap(std::shared_ptr<const measure::Job> job) { sink_.set_job(std::move(job)); }

void LiveMeasure::set_out(Out out) {
  std::lock_guard lock(mu_);
  out_ = std::move(out);
}

void LiveMeasure::set_publisher(Publisher* publisher) {
  set_out(publisher ? Out([publisher](const nlohmann::json& record) { publisher->publish_measurement(record); }) : Out());
}

void LiveMeasure::set_modbus(ModbusServer* modbus, int unit) {
  std::lock_guard lock(mu_);
  modbus_ = modbus;
  unit_ = unit;
}

std::uint64_t LiveMeasure::parts() const {
  std::lock_guard lock(mu_);
  return counters_.parts;
}

void LiveMeasure::collect() {
  std::lock_guard lock(dropped_mu_);
  const std::uint64_t dropped = sink_.dropped();
  if (dropped > dropped_seen_) dropped_counter_.add(static_cast<double>(dropped - dropped_seen_));
  dropped_seen_ = dropped;
}

// The measuring thread, once per part.
void LiveMeasure::on_result(const measure::PartResult& r) {
  collect();
  registry_.counter("stripeline_measure_parts_total", "Parts measured by the live job, by the part's decision",
                    labels(fmt::format("decision=\"{}\"", measure::to_string(r.decision))))
      .add(1);
  for (const auto& t : r.tools) {
    if (t.decision == measure::Decision::None) continue;
    registry_
        .counter("stripeline_measure_tool_results_total", "Tool decisions of the live job's parts: pass or fail, per tool",
                 labels(fmt::format("tool=\"{}\",result=\"{}\"", t.name, t.decision == measure::Decision::Pass ? "pass" : "fail")))
        .add(1);
  }
  nlohmann::json record = measure::part_json(r);
  record["job"] = r.job;
  if (!head_.empty()) record["head"] = head_;
  if (spdlog::should_log(spdlog::level::debug)) spdlog::debug("measure{}: {}", head_.empty() ? "" : " " + head_, record.dump());
  std::lock_guard lock(mu_);
  ++counters_.parts;
  if (r.decision == measure::Decision::Pass) ++counters_.passed;
  if (r.decision == measure::Decision::Fail) ++counters_.failed;
  if (out_) out_(record);
  if (modbus_) {
    measure::modbus_registers(r, counters_, ++update_, registers_);
    modbus_->publish(registers_, unit_);
  }
}

}  // namespace stripeline::daemon
