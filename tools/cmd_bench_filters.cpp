// `stripeline bench-filters [--json FILE]`: bench_heightmap_filters, the
// height-map filters (stages/heightmap_filters.h) on the inspection
// software's sizes (3650x2048 and 700x700), lengths 2, 32, 64 for
// dilation/erosion along rows and columns, median sizes 3 to 15 and
// median 3 + to8; CPU (oneTBB) and, when a GPU is present, CUDA compute only
// (CUDA events around the kernels) and with transfers (pinned host buffers,
// upload + kernels + download, wall clock). Times are medians of repeated runs.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "core/errors.h"
#include "core/host_buffer.h"
#include "io/atomic_file.h"
#include "stages/heightmap_filters.h"
#include "tools/commands.h"
#if STRIPELINE_HAVE_CUDA
#include "core/cuda/runtime.h"
#include "stages/cuda/heightmap_filters_cuda.h"
#endif

namespace stripeline::tools {

namespace {

using clock_type = std::chrono::steady_clock;

struct Size {
  int width, height;
};

struct Case {
  std::string name;
  std::vector<FilterStep> steps;
};

// A smooth surface with noise and ~10% no-detection pixels.
std::vector<std::uint16_t> make_map(int w, int h) {
  std::mt19937 rng(1234);
  std::uniform_int_distribution<int> noise(-40, 40);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<std::uint16_t> m(static_cast<std::size_t>(w) * h);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const int base = 8000 + (x * 7 + y * 3) % 20000 + noise(rng);
      m[static_cast<std::size_t>(y) * w + x] = u(rng) < 0.1 ? 0 : static_cast<std::uint16_t>(std::clamp(base, 1, 65535));
    }
  return m;
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <class F>
double time_median_ms(F&& f, int min_reps, double budget_ms) {
  f();  // warm-up (first-touch of per-thread scratch, caches, clocks)
  std::vector<double> t;
  double total = 0.0;
  while (static_cast<int>(t.size()) < min_reps || (total < budget_ms && t.size() < 200)) {
    const auto t0 = clock_type::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(clock_type::now() - t0).count());
    total += t.back();
  }
  return median_of(std::move(t));
}

std::vector<Case> cases(bool quick) {
  std::vector<Case> c;
  const int lengths[] = {2, 32, 64};
  for (int L : lengths)
    for (auto op : {FilterOp::Dilate, FilterOp::Erode})
      for (auto axis : {FilterAxis::Horizontal, FilterAxis::Vertical}) {
        FilterStep s{op, axis, L, 0, 0};
        c.push_back({describe(s), {s}});
      }
  for (int k = kMinMedian; k <= kMaxMedian; k += 2) {
    if (quick && k > 5) break;
    FilterStep s{FilterOp::Median, FilterAxis::None, k, 0, 0};
    c.push_back({describe(s), {s}});
  }
  c.push_back({"median 3 + to8", {{FilterOp::Median, FilterAxis::None, 3, 0, 0}, {FilterOp::To8, FilterAxis::None, 0, 1, 40000}}});
  return c;
}

}  // namespace

Subcommand add_bench_filters(CLI::App& app) {
  auto* sub = app.add_subcommand("bench-filters",
                                 "Benchmark the height-map filters (median, to8, dilation/erosion) on CPU and CUDA, as bench_heightmap_filters");
  struct Options {
    std::string json;
    bool quick = false;
    bool no_cpu = false;
  };
  auto o = std::make_shared<Options>();
  sub->add_option("--json", o->json, "Also write the results as JSON here");
  sub->add_flag("--quick", o->quick, "700x700 only, medians up to 5x5 (smoke test)");
  sub->add_flag("--no-cpu", o->no_cpu, "Skip the CPU backend (its large medians take seconds)");
  return {sub, [o] {
            std::vector<Size> sizes = {{3650, 2048}, {700, 700}};
            if (o->quick) sizes = {{700, 700}};
            [[maybe_unused]] const bool cuda = cuda_available();
            nlohmann::json root;
            root["benchmark"] = "bench_heightmap_filters";
            root["cuda"] = cuda_status();
            root["cpu_threads"] = static_cast<int>(std::thread::hardware_concurrency());
            root["results"] = nlohmann::json::array();
            std::printf("bench_heightmap_filters  (CUDA: %s)\n", cuda_status().c_str());
            std::printf("%-10s %-18s %12s %12s %14s %14s %12s\n", "size", "filter", "cpu ms", "cpu Gpix/s", "cuda comp ms", "cuda comp Gp/s",
                        "cuda+xfer ms");
            for (const auto& sz : sizes) {
              const auto map = make_map(sz.width, sz.height);
              const double mpix = static_cast<double>(sz.width) * sz.height / 1e6;
              const std::size_t px = map.size();
              std::vector<std::uint16_t> out(px);
#if STRIPELINE_HAVE_CUDA
              HostBuffer pin_in, pin_out;
              if (cuda) {
                pin_in = cuda::allocate_pinned(px * 2);
                pin_out = cuda::allocate_pinned(px * 2);
                std::memcpy(pin_in.data(), map.data(), px * 2);
              }
#endif
              for (const auto& c : cases(o->quick)) {
                nlohmann::json r;
                r["width"] = sz.width;
                r["height"] = sz.height;
                r["filter"] = c.name;
                double cpu_ms = -1, comp_ms = -1, xfer_ms = -1;
                if (!o->no_cpu) {
                  auto f = make_heightmap_filter(Backend::Cpu, sz.width, sz.height, c.steps);
                  cpu_ms = time_median_ms([&] { f->run(map.data(), out.data()); }, 3, 1000.0);
                  r["cpu_ms"] = cpu_ms;
                  r["cpu_gpix_s"] = mpix / cpu_ms;
                }
#if STRIPELINE_HAVE_CUDA
                if (cuda) {
                  auto base = make_heightmap_filter(Backend::Cuda, sz.width, sz.height, c.steps);
                  auto* f = dynamic_cast<cuda::CudaHeightMapFilter*>(base.get());
                  const auto* in = reinterpret_cast<const std::uint16_t*>(pin_in.data());
                  xfer_ms = time_median_ms([&] { f->run(in, pin_out.data()); }, 20, 500.0);
                  std::vector<double> t;
                  f->compute_only_ms();
                  for (int i = 0; i < 50; ++i) t.push_back(f->compute_only_ms());
                  comp_ms = median_of(t);
                  r["cuda_compute_ms"] = comp_ms;
                  r["cuda_compute_gpix_s"] = mpix / comp_ms;
                  r["cuda_with_transfers_ms"] = xfer_ms;
                }
#endif
                root["results"].push_back(r);
                auto cell = [](double v, const char* fmt) {
                  char b[32];
                  if (v < 0)
                    std::snprintf(b, sizeof b, "%s", "-");
                  else
                    std::snprintf(b, sizeof b, fmt, v);
                  return std::string(b);
                };
                std::printf("%-10s %-18s %12s %12s %14s %14s %12s\n", (std::to_string(sz.width) + "x" + std::to_string(sz.height)).c_str(),
                            c.name.c_str(), cell(cpu_ms, "%.3f").c_str(), cell(cpu_ms < 0 ? -1 : mpix / cpu_ms, "%.3f").c_str(),
                            cell(comp_ms, "%.4f").c_str(), cell(comp_ms < 0 ? -1 : mpix / comp_ms, "%.2f").c_str(),
                            cell(xfer_ms, "%.3f").c_str());
                std::fflush(stdout);
              }
            }
            if (!o->json.empty()) {
              io::write_file_atomically(o->json, root.dump(2) + "\n");
              std::printf("\nwrote %s\n", o->json.c_str());
            }
            return 0;
          }};
}

}  // namespace stripeline::tools
