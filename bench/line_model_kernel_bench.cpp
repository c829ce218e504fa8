// The line model's two CUDA kernels (kernels/cuda/line_model_kernels.h: a
// warp per frame, a block per frame) on the candidates of the production
// shape: 2048x52 frames of the benchmark's synthetic scanner, extracted on
// the CPU with the line model's extraction (adaptive, selection all, K
// slots). Times each kernel with CUDA events for 1, 4, 16 and 300 frames
// per launch (launch after launch on one stream, after a warm-up), checks
// both against the CPU oracle once, and prints the medians. Not a test:
// nothing but the bits is checked. Then profiles the block kernel's phases
// (thread 0's clock64() at each boundary, summed over 50 launches).
//
//   line_model_kernel_bench [K=8] [REPS=200] [WARMUP=8]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <cuda_runtime.h>

#include "acquisition/synthetic_scanner.h"
#include "core/cuda/check.h"
#include "core/cuda/runtime.h"
#include "kernels/cuda/line_model_kernels.h"
#include "stages/chain.h"

using namespace stripeline;
using stripeline::cuda::DeviceBuffer;
using stripeline::cuda::Event;
using stripeline::cuda::Stream;
using stripeline::cuda::elapsed_ms;
namespace kc = stripeline::kernels::cuda;

namespace {

template <class T>
DeviceBuffer upload(const T* host, std::size_t n, const char* what) {
  DeviceBuffer d = DeviceBuffer::allocate(n * sizeof(T), what);
  STRIPELINE_CUDA_CHECK(cudaMemcpy(d.data(), host, n * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Where a frame's time goes in the block kernel: cycles per frame of each
// phase and pass (thread 0's view: the phase's slowest warp), as microseconds
// at the SM's clock.
void print_phase_profile(const kernels::LineModelParams& line, const kernels::LineModelArrays& in, const kernels::LineModelArrays& out,
                         std::uint8_t* back, int width, int clock_khz, cudaStream_t stream, const kernels::LineStageAhead* ahead) {
  static const char* const kNames[kc::kLinePhaseCount] = {"staging", "speculative", "rounds", "exact fallback", "first states",
                                                          "last states", "path", "runs", "drop short"};
  constexpr int kLaunches = 50;
  for (int frames : {1, 300}) {
    kernels::LineModelView v;
    v.in = in, v.out = out, v.back = back, v.back_stride = static_cast<std::size_t>(frames), v.frames = frames, v.width = width;
    kc::LinePhaseProfile sum{};
    if (ahead != nullptr) kc::launch_line_stage_ahead(v, *ahead, stream);  // what the warp chain leaves the model
    for (int r = 0; r < kLaunches; ++r) {
      const kc::LinePhaseProfile one = kc::line_model_block_phase_cycles(v, line, stream, ahead);
      for (int a = 0; a <= kernels::kLinePasses; ++a)
        for (int b = 0; b < kc::kLinePhaseCount; ++b) sum.cycles[a][b] += one.cycles[a][b];
    }
    const double per = 1.0 / (static_cast<double>(kLaunches) * frames), us = 1e3 / clock_khz;
    std::printf("  block kernel phases, %d frame(s) per launch (cycles per frame; us at %.0f MHz); per frame: passes %.2f, rounds %.3f, fallbacks %.3f\n",
                frames, clock_khz / 1e3, static_cast<double>(sum.cycles[kernels::kLinePasses][1]) * per,
                static_cast<double>(sum.cycles[kernels::kLinePasses][2]) * per, static_cast<double>(sum.cycles[kernels::kLinePasses][3]) * per);
    double total = 0;
    for (int b = 0; b < kc::kLinePhaseCount; ++b) {
      std::printf("    %-14s", kNames[b]);
      for (int a = 0; a < kernels::kLinePasses; ++a) {
        const double c = static_cast<double>(sum.cycles[a][b]) * per;
        total += c;
        std::printf("  pass %d %8.0f (%6.2f us)", a + 1, c, c * us);
      }
      std::printf("\n");
    }
    const double write = static_cast<double>(sum.cycles[kernels::kLinePasses][0]) * per;
    total += write;
    std::printf("    %-14s  %8.0f (%6.2f us); all phases %8.0f cycles (%6.2f us)\n", "write", write, write * us, total, total * us);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int k = argc > 1 ? std::atoi(argv[1]) : 8;
  const int reps = argc > 2 ? std::atoi(argv[2]) : 200;
  const int warmup = argc > 3 ? std::atoi(argv[3]) : kernels::line_model::kLineWarmup;
  constexpr int kWidth = 2048, kHeight = 52, kFrames = 300;
  SyntheticConfig sc;
  sc.width = kWidth, sc.frame_height = kHeight, sc.frames = 0;
  SyntheticScanner scanner(sc);
  BatchLayout layout = scanner.frame_layout();
  layout.frames = kFrames;
  Batch batch(layout, &allocate_host);
  scanner.fill(batch);

  ChainConfig model;
  model.line_model.enabled = true;
  model.line_model.candidates = k;
  const kernels::ColumnParams params = validate_chain(model, layout);
  const kernels::LineModelParams line = validate_line_model(model, params);
  ChainConfig extract;  // what extraction_params() gives the model: selection all, K slots
  extract.column.selection = SpotSelection::All;
  extract.max_peaks = k;
  auto cpu = make_processor(Backend::Cpu, layout, extract);
  ProfileBatch cand(kWidth, kFrames, k, &allocate_host);
  cpu->process(batch, cand);
  auto oracle_cpu = make_processor(Backend::Cpu, layout, model);
  ProfileBatch expected(kWidth, kFrames, 1, &allocate_host);
  oracle_cpu->process(batch, expected);

  const std::size_t nk = static_cast<std::size_t>(kWidth) * kFrames * k, n1 = static_cast<std::size_t>(kWidth) * kFrames;
  const DeviceBuffer pos = upload(cand.position, nk, "pos"), inten = upload(cand.intensity, nk, "int"), wid = upload(cand.stripe_width, nk, "wid"),
                     q = upload(cand.quality, nk, "q"), count = upload(cand.count, n1, "count");
  const DeviceBuffer opos = DeviceBuffer::allocate(n1 * 4, "out pos"), oint = DeviceBuffer::allocate(n1 * 2, "out int"),
                     owid = DeviceBuffer::allocate(n1 * 2, "out wid"), oq = DeviceBuffer::allocate(n1 * 2, "out q"),
                     ocount = DeviceBuffer::allocate(n1, "out count");
  const DeviceBuffer back = DeviceBuffer::allocate(kernels::line_model_device_scratch_bytes(k, kWidth, kFrames), "scratch");
  kc::configure_line_model(cuda::max_shared_bytes_per_block());
  kc::set_line_model_warmup(warmup);
  const Stream stream = Stream::create();
  const Event start = Event::create_timing(), stop = Event::create_timing();

  cudaDeviceProp prop{};
  STRIPELINE_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  long candidates = 0;
  for (std::size_t i = 0; i < n1; ++i) candidates += std::min<int>(cand.count[i], k);
  std::printf("%s, %d SMs; production shape %dx%d, K %d, %.2f candidates per column; warm-up %d columns; auto kernel: %s\n", prop.name, prop.multiProcessorCount,
              kWidth, kHeight, k, static_cast<double>(candidates) / static_cast<double>(n1), warmup,
              kc::line_kernel_for(line, kWidth) == kc::LineKernel::Block ? "block" : "warp");
  // The warp kernel; the block kernel with its speculative walks in 64 bits,
  // in 32 from the staged candidates and in 32 from the link table (the
  // default), in the same run.
  // Then with pass 0 staged ahead (kernels::LineStageAhead) by a kernel of
  // its own, as the processor runs them: timed with the model, and the
  // model alone (staged once before the timed launches).
  struct Design {
    kc::LineKernel kernel;
    bool narrow, table;
    int ahead;  // 0: the model stages; 1: the stage kernel timed with it; 2: the model alone after it
    const char* name;
  };
  const kernels::LineStageAhead ahead_size = kernels::line_stage_ahead(line, kWidth, nullptr);
  const DeviceBuffer ahead_bytes = DeviceBuffer::allocate(std::max<std::size_t>(ahead_size.frame_bytes, 16) * kFrames, "staged ahead");
  const kernels::LineStageAhead ahead = kernels::line_stage_ahead(line, kWidth, ahead_bytes.as<unsigned char>());
  for (const Design& d : {Design{kc::LineKernel::Warp, true, true, 0, "warp per frame        "},
                          Design{kc::LineKernel::Block, false, false, 0, "block, 64-bit walks   "},
                          Design{kc::LineKernel::Block, true, false, 0, "block, 32-bit walks   "},
                          Design{kc::LineKernel::Block, true, true, 0, "block, link table     "},
                          Design{kc::LineKernel::Block, true, true, 1, "block, stage + model  "},
                          Design{kc::LineKernel::Block, true, true, 2, "block, staged ahead   "}}) {
    if (d.ahead > 0 && ahead.bytes == nullptr) continue;  // no link table at this K
    const kc::LineKernel design = d.kernel;
    const char* name = d.name;
    kc::set_line_model_narrow_walks(d.narrow);
    kc::set_line_model_link_table(d.table);
    for (int frames : {1, 4, 16, kFrames}) {
      kernels::LineModelView v;
      v.in = {pos.as<std::int32_t>(), inten.as<std::uint16_t>(), wid.as<std::uint16_t>(), q.as<std::uint16_t>(), count.as<std::uint8_t>()};
      v.out = {opos.as<std::int32_t>(), oint.as<std::uint16_t>(), owid.as<std::uint16_t>(), oq.as<std::uint16_t>(), ocount.as<std::uint8_t>()};
      v.back = back.as<std::uint8_t>(), v.back_stride = static_cast<std::size_t>(frames), v.frames = frames, v.width = kWidth;
      std::vector<double> ms;
      if (d.ahead) kc::launch_line_stage_ahead(v, ahead, stream.get());
      for (int r = 0; r < reps + 20; ++r) {
        STRIPELINE_CUDA_CHECK(cudaEventRecord(start.get(), stream.get()));
        if (d.ahead == 1) kc::launch_line_stage_ahead(v, ahead, stream.get());  // timed with the model, as the processor runs it
        kc::launch_line_model(v, line, stream.get(), design, d.ahead > 0 ? &ahead : nullptr);
        STRIPELINE_CUDA_CHECK(cudaEventRecord(stop.get(), stream.get()));
        STRIPELINE_CUDA_CHECK(cudaEventSynchronize(stop.get()));
        if (r >= 20) ms.push_back(static_cast<double>(elapsed_ms(start.get(), stop.get())));
      }
      std::sort(ms.begin(), ms.end());
      std::printf("  %s  %3d frames: median %8.1f us  p99 %8.1f us  (%.1f us per frame)\n", name, frames, median(ms) * 1e3,
                  ms[ms.size() * 99 / 100] * 1e3, median(ms) * 1e3 / frames);
      if (frames == kFrames) {
        std::vector<std::int32_t> got(n1);
        std::vector<std::uint8_t> got_count(n1);
        STRIPELINE_CUDA_CHECK(cudaMemcpy(got.data(), opos.data(), n1 * 4, cudaMemcpyDeviceToHost));
        STRIPELINE_CUDA_CHECK(cudaMemcpy(got_count.data(), ocount.data(), n1, cudaMemcpyDeviceToHost));
        const bool same = std::memcmp(got.data(), expected.position, n1 * 4) == 0 && std::memcmp(got_count.data(), expected.count, n1) == 0;
        std::printf("  %s  positions and counts %s the CPU oracle's\n", name, same ? "equal" : "DIFFER FROM");
        if (!same) return 1;
      }
    }
  }
  int clock_khz = 0;
  STRIPELINE_CUDA_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
  for (const int way : {0, 1, 2, 3}) {
    if (way == 3 && ahead.bytes == nullptr) continue;
    kc::set_line_model_narrow_walks(way > 0);
    kc::set_line_model_link_table(way >= 2);
    std::printf("  the block kernel's speculative walks %s:\n", way == 0   ? "in 64 bits"
                                                                : way == 1 ? "in 32 bits, staged candidates"
                                                                : way == 2 ? "from the link table"
                                                                           : "from the link table, pass 0 staged ahead");
    print_phase_profile(line, {pos.as<std::int32_t>(), inten.as<std::uint16_t>(), wid.as<std::uint16_t>(), q.as<std::uint16_t>(), count.as<std::uint8_t>()},
                        {opos.as<std::int32_t>(), oint.as<std::uint16_t>(), owid.as<std::uint16_t>(), oq.as<std::uint16_t>(), ocount.as<std::uint8_t>()},
                        back.as<std::uint8_t>(), kWidth, clock_khz, stream.get(),
                        way == 3 ? &ahead : nullptr);
  }
  return 0;
}
