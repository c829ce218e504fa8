#pragma once
// Per-part records (docs/measure.md, "Records"): one JSON object per part and
// one CSV line per part, with the job's tools as columns. ResultFiles
// collects them and writes both files atomically when the scan ends.
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "measure/job.h"
#include "measure/tools.h"

namespace stripeline::measure {

nlohmann::json part_json(const PartResult& r);
std::string csv_header(const Job& job);
std::string csv_line(const PartResult& r);

class ResultFiles {
 public:
  ResultFiles(const Job& job, std::filesystem::path json, std::filesystem::path csv);
  void add(const PartResult& r);
  // Writes the files (temporary name, then rename); nothing when neither is set.
  void finish(const std::string& units) const;
  const std::vector<PartResult>& results() const { return results_; }

 private:
  const Job& job_;
  std::filesystem::path json_, csv_;
  std::vector<PartResult> results_;
};

}  // namespace stripeline::measure
