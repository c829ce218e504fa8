// Several engines in one process, each on its CUDA device
// (PipelineOptions::device; core/cuda/runtime.h, "Several devices"): what a
// multi-head daemon and `bench --devices` run. Each engine's profiles must be
// the CPU oracle's, bit for bit, whether the engines share one GPU or have
// one each, and whichever worker thread (with whichever current device)
// calls a processor.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "acquisition/synthetic_scanner.h"
#include "core/errors.h"
#include "pipeline/pipeline.h"
#include "stages/backend.h"
#include "stages/chain.h"
#include "gpu_test.h"
#include "test_helpers.h"

using namespace stripeline;

namespace {

// Every profile's slots (position, intensity, quality, count) in frame order.
class AllSlotsSink final : public ProfileSink {
 public:
  void begin(const ScanInfo&) override {}
  void consume(const ProfileSpan& p) override {
    for (int f = 0; f < p.frames; ++f)
      for (int x = 0; x < p.width; ++x) {
        const int n = p.peaks(f, x);
        values.push_back(n);
        for (int s = 0; s < n; ++s) {
          const std::size_t i = p.slot_index(f, s, x);
          values.push_back(p.position[i]);
          values.push_back(p.intensity[i]);
          values.push_back(p.quality[i]);
        }
      }
    frames += static_cast<std::uint64_t>(p.frames);
  }
  void finish() override {}
  std::vector<std::int64_t> values;
  std::uint64_t frames = 0;
};

SyntheticConfig scene(std::uint64_t seed) {
  SyntheticConfig c;
  c.width = 777;  // odd: partial blocks everywhere
  c.frame_height = 52;
  c.frames = 90;
  c.seed = seed;
  return c;
}

PipelineOptions options(Backend backend, int device) {
  PipelineOptions o;
  o.backend = backend;
  o.device = device;
  o.batch_frames = 16;  // several batches, the last one partial
  o.buffers = 3;
  return o;
}

AllSlotsSink run_on(Backend backend, int device, std::uint64_t seed) {
  SyntheticScanner source(scene(seed));
  AllSlotsSink sink;
  Pipeline(options(backend, device)).run(source, {&sink});
  return sink;
}

// Engines on `devices`, all at once, one thread each; each with its own scene.
std::vector<AllSlotsSink> run_together(const std::vector<int>& devices) {
  std::vector<AllSlotsSink> sinks(devices.size());
  std::vector<std::string> errors(devices.size());
  {
    std::vector<std::jthread> threads;
    for (std::size_t i = 0; i < devices.size(); ++i)
      threads.emplace_back([&, i] {
        try {
          SyntheticScanner source(scene(100 + i));
          Pipeline(options(Backend::Cuda, devices[i])).run(source, {&sinks[i]});
        } catch (const std::exception& e) {
          errors[i] = e.what();
        }
      });
  }
  for (std::size_t i = 0; i < devices.size(); ++i) EXPECT_EQ(errors[i], "") << "engine " << i << " on device " << devices[i];
  return sinks;
}

void expect_each_matches_cpu(const std::vector<int>& devices) {
  const std::vector<AllSlotsSink> got = run_together(devices);
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const AllSlotsSink cpu = run_on(Backend::Cpu, 0, 100 + i);
    EXPECT_EQ(got[i].frames, cpu.frames) << "engine " << i;
    EXPECT_TRUE(got[i].values == cpu.values) << "engine " << i << " on device " << devices[i] << " differs from the CPU oracle";
  }
}

}  // namespace

class MultiDevice : public test::CudaTest {};

// One GPU named for two heads: two engines share device 0.
TEST_F(MultiDevice, TwoEnginesOnOneDeviceAtOnceMatchTheCpu) { expect_each_matches_cpu({0, 0}); }

TEST_F(MultiDevice, OneEnginePerDeviceAtOnceMatchesTheCpu) {
  const int count = cuda_device_count();
  if (count < 2) GTEST_SKIP() << "this host has " << count << " CUDA device: one engine per device needs two (the one-device case is TwoEnginesOnOneDevice)";
  std::vector<int> devices;
  for (int d = 0; d < count; ++d) devices.push_back(d);
  expect_each_matches_cpu(devices);
  devices.insert(devices.end(), devices.begin(), devices.end());  // and two heads per GPU on every GPU
  expect_each_matches_cpu(devices);
}

// A processor made on the last device, called from a fresh thread (whose
// current device is 0) and destroyed there: it makes its own device current
// for every call and for its teardown, and leaves the caller's as it was.
TEST_F(MultiDevice, AProcessorUsesItsOwnDeviceWhicheverThreadCallsIt) {
  const int last = cuda_device_count() - 1;
  SyntheticScanner source(scene(7));
  BatchLayout layout = source.frame_layout();
  layout.frames = 16;
  Batch batch(layout, host_allocator_for(Backend::Cuda));
  ASSERT_TRUE(source.fill(batch));
  const ChainConfig config;
  const int slots = output_slots(config, layout.frame_height);
  ProfileBatch expected(layout.width, layout.frames, slots, &allocate_host);
  make_processor(Backend::Cpu, layout, config)->process(batch, expected);

  std::unique_ptr<BatchProcessor> gpu;
  {
    const CudaDeviceScope on_last(last);
    gpu = make_processor(Backend::Cuda, layout, config);
  }
  ProfileBatch got(layout.width, layout.frames, slots, host_allocator_for(Backend::Cuda));
  std::string error;
  std::jthread([&] {
    try {
      gpu->process(batch, got);
      gpu.reset();
    } catch (const std::exception& e) {
      error = e.what();
    }
  }).join();
  EXPECT_EQ(error, "");
  AllSlotsSink cpu, cuda;
  cpu.consume(expected.span());
  cuda.consume(got.span());
  EXPECT_EQ(cuda.frames, 16u);
  EXPECT_TRUE(cuda.values == cpu.values) << "the processor made on device " << last << " differs from the CPU oracle";
}

TEST_F(MultiDevice, NoSuchDeviceIsOneLineNamingIt) {
  const int count = cuda_device_count();
  SyntheticScanner source(scene(1));
  AllSlotsSink sink;
  try {
    Pipeline(options(Backend::Cuda, count)).run(source, {&sink});
    FAIL() << "device " << count << " was accepted on a host with " << count << " devices";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("device = " + std::to_string(count)), std::string::npos) << what;
    EXPECT_NE(what.find("CUDA device"), std::string::npos) << what;
  }
}
