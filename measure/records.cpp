#include "measure/records.h"

#include <cmath>
#include <cstdio>

#include "io/atomic_file.h"

namespace stripeline::measure {

namespace {

nlohmann::json number(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

std::string csv_number(double v) {
  if (!std::isfinite(v)) return "";
  char b[40];
  std::snprintf(b, sizeof b, "%.9g", v);
  return b;
}

}  // namespace

nlohmann::json part_json(const PartResult& r) {
  nlohmann::json j = {{"part", r.part},
                      {"decision", to_string(r.decision)},
                      {"units", r.units},
                      {"frames", {r.frame_first, r.frame_last}},
                      {"y", {r.y_first, r.y_last}},
                      {"length", r.length},
                      {"timestamp_ns", {r.timestamp_first_ns, r.timestamp_last_ns}},
                      {"rows", r.rows},
                      {"points", r.points},
                      {"cut", r.cut},
                      {"reference", {{"a", r.reference.a}, {"b", r.reference.b}}},
                      {"box",
                       {{"x", {number(r.box.x_min), number(r.box.x_max)}},
                        {"y", {number(r.box.y_min), number(r.box.y_max)}},
                        {"z", {number(r.box.z_min), number(r.box.z_max)}}}}};
  j["encoder"] = r.has_encoder ? nlohmann::json::array({r.encoder_first, r.encoder_last}) : nlohmann::json(nullptr);
  j["tools"] = nlohmann::json::array();
  for (const auto& t : r.tools) {
    nlohmann::json tj = {{"name", t.name}, {"type", to_string(t.kind)}, {"decision", to_string(t.decision)}, {"points", t.points}};
    for (std::size_t i = 0; i < t.values.size(); ++i) {
      tj["values"][t.values[i].first] = number(t.values[i].second);
      tj["decisions"][t.values[i].first] = to_string(t.value_decisions[i]);
    }
    j["tools"].push_back(tj);
  }
  return j;
}

std::string csv_header(const Job& job) {
  std::string h = "part,decision,frame_first,frame_last,y_first,y_last,length,encoder_first,encoder_last,timestamp_first_ns,timestamp_last_ns,"
                  "x_min,x_max,y_min,y_max,z_min,z_max";
  for (const auto& t : job.tools) {
    for (const auto& v : tool_values(t.kind)) h += "," + t.name + "." + v;
    h += "," + t.name + ".decision";
  }
  return h + "\n";
}

std::string csv_line(const PartResult& r) {
  std::string s = std::to_string(r.part) + "," + to_string(r.decision) + "," + std::to_string(r.frame_first) + "," +
                  std::to_string(r.frame_last) + "," + csv_number(r.y_first) + "," + csv_number(r.y_last) + "," + csv_number(r.length) + ",";
  s += r.has_encoder ? std::to_string(r.encoder_first) + "," + std::to_string(r.encoder_last) : std::string(",");
  s += "," + std::to_string(r.timestamp_first_ns) + "," + std::to_string(r.timestamp_last_ns);
  for (double v : {r.box.x_min, r.box.x_max, r.box.y_min, r.box.y_max, r.box.z_min, r.box.z_max}) s += "," + csv_number(v);
  for (const auto& t : r.tools) {
    for (const auto& [k, v] : t.values) s += "," + csv_number(v);
    s += std::string(",") + to_string(t.decision);
  }
  return s + "\n";
}

ResultFiles::ResultFiles(const Job& job, std::filesystem::path json, std::filesystem::path csv)
    : job_(job), json_(std::move(json)), csv_(std::move(csv)) {}

void ResultFiles::add(const PartResult& r) { results_.push_back(r); }

void ResultFiles::finish(const std::string& units) const {
  if (!json_.empty()) {
    nlohmann::json doc = {{"job", job_.name}, {"job_file", job_.file}, {"units", units}, {"parts", nlohmann::json::array()}};
    for (const auto& r : results_) doc["parts"].push_back(part_json(r));
    io::write_file_atomically(json_, doc.dump(1) + "\n");
  }
  if (!csv_.empty()) {
    std::string text = csv_header(job_);
    for (const auto& r : results_) text += csv_line(r);
    io::write_file_atomically(csv_, text);
  }
}

}  // namespace stripeline::measure
