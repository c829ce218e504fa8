// What measuring costs per row (docs/measure.md, "Throughput"): the rows of
// the `conveyor` scene (50 parts, exact heights, 2048 points a row over
// 100 mm) through part detection alone, then through detection and the
// tools of configs/jobs/conveyor.toml on every part, on the calling thread.
// Prints rows/s for both and the tools' time per part.
//   measure_bench [JOB.toml] [PASSES]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "acquisition/triangulation_scenes.h"
#include "measure/job.h"
#include "measure/part_detector.h"
#include "measure/tools.h"

using namespace stripeline;

int main(int argc, char** argv) {
  const std::string job_file = argc > 1 ? argv[1] : std::string(STRIPELINE_SOURCE_DIR) + "/configs/jobs/conveyor.toml";
  const int passes = argc > 2 ? std::atoi(argv[2]) : 10;
  const measure::Job job = measure::load_job(job_file);
  const PartsPreset preset = parts_preset("conveyor");
  const PartsScene scene(preset.config);
  std::vector<measure::MeasureRow> rows(preset.frames);
  for (std::uint64_t f = 0; f < preset.frames; ++f) {
    auto& r = rows[f];
    r.frame = f;
    r.y = scene.y_of(f);
    for (int i = 0; i < 2048; ++i) {
      const double x = -50.0 + 100.0 * i / 2047.0;
      r.x.push_back(static_cast<float>(x));
      r.z.push_back(static_cast<float>(scene.height_at(x, r.y)));
    }
  }
  for (const bool tools : {false, true}) {
    std::uint64_t parts = 0, n = 0;
    double tool_s = 0;
    measure::PartDetector* self = nullptr;
    measure::PartDetector d(job.detection, preset.config.y_step_mm, "mm", [&](measure::Part&& p) {
      ++parts;
      if (tools) {
        const auto t0 = std::chrono::steady_clock::now();
        const measure::PartResult r = measure::measure_part(job, p);
        tool_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (r.tools.empty()) std::abort();
      }
      self->recycle(std::move(p));
    });
    self = &d;
    measure::MeasureRow row;
    const auto t0 = std::chrono::steady_clock::now();
    for (int pass = 0; pass < passes; ++pass)
      for (const auto& r : rows) {
        row.frame = r.frame, row.y = r.y + pass * 10000.0;
        row.x.assign(r.x.begin(), r.x.end());
        row.z.assign(r.z.begin(), r.z.end());
        d.push(row);
        ++n;
      }
    d.finish();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%s: %llu rows of 2048 points, %llu parts in %.3f s: %.0f rows/s (%.2f us a row)%s\n",
                tools ? "detection + tools" : "detection alone", static_cast<unsigned long long>(n), static_cast<unsigned long long>(parts), s,
                n / s, 1e6 * s / n, tools ? (", tools " + std::to_string(1e3 * tool_s / parts) + " ms a part").c_str() : "");
  }
  return 0;
}
