// Calibrated points: ProfileMapping::point (every output), the CPU batch loop
// and the CUDA kernel evaluate one function; CPU and CUDA give the same bits,
// for the kernel alone and for the whole pipeline with a calibration on.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "core/applied_calibration.h"
#include "core/profile_mapping.h"
#include "gpu_test.h"
#include "kernels/calibrated_points.h"
#include "acquisition/synthetic_scanner.h"
#include "core/errors.h"
#include "pipeline/pipeline.h"
#include "stages/chain.h"
#if STRIPELINE_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "core/cuda/check.h"
#include "core/cuda/runtime.h"
#include "kernels/cuda/calibrated_points_kernels.h"
#endif

namespace stripeline {
namespace {

// A sheet-of-light model of the size the fit produces: a 2048-column sensor,
// ~100 mm across, a perspective homography, lens distortion and a skew.
std::shared_ptr<AppliedCalibration> example_calibration() {
  auto c = std::make_shared<AppliedCalibration>();
  SheetOfLightModel& m = c->model;
  m.kind = SheetOfLightModel::Kind::SheetOfLight;
  m.unit = "mm";
  m.cu = 1023.5;
  m.cv = 543.5;
  m.scale = 1024.0;
  const double d[5] = {-0.08, 0.012, -0.001, 2e-4, -1e-4};
  const double h[9] = {50.0, 0.8, 0.3, -0.5, -95.0, 12.0, 0.01, 0.35, 1.0};
  for (int i = 0; i < 5; ++i) m.distortion[i] = d[i];
  for (int i = 0; i < 9; ++i) m.homography[i] = h[i];
  m.y_step = 0.05;
  m.y_offset = 3.0;
  m.skew_about_x_deg = 1.5;
  m.skew_about_z_deg = -0.7;
  c->roi_x = 32;
  c->roi_y = 412;
  c->id = "test";
  return c;
}

struct Detections {
  int frames = 40, slots = 2, width = 2016;
  std::vector<std::int32_t> position;
  std::vector<std::uint8_t> count;
};

Detections example_batch() {
  Detections b;
  std::mt19937 rng(7);
  std::uniform_int_distribution<std::int32_t> pos(0, 255 * kPositionOne);
  std::uniform_int_distribution<int> cnt(0, 2);
  b.position.resize(static_cast<std::size_t>(b.frames) * b.slots * b.width);
  b.count.resize(static_cast<std::size_t>(b.frames) * b.width);
  for (auto& p : b.position) p = pos(rng);
  for (auto& c : b.count) c = static_cast<std::uint8_t>(cnt(rng));
  return b;
}

kernels::CalibratedPointsView view_of(const Detections& b, const AppliedCalibration& c, float* out) {
  kernels::CalibratedPointsView v;
  v.position = b.position.data();
  v.count = b.count.data();
  v.points = out;
  v.frames = b.frames, v.slots = b.slots, v.width = b.width;
  v.roi_x = c.roi_x, v.roi_y = c.roi_y;
  return v;
}

TEST(CalibratedPoints, BatchLoopIsTheMappingOfEveryOutput) {
  const auto cal = example_calibration();
  const SheetOfLightMap<double> m = cal->model.map<double>();
  const ProfileMapping mapping(LinearCalibration{}, kDefaultHeightCodeBits, cal);
  EXPECT_STREQ(mapping.unit(), "mm");
  const Detections b = example_batch();
  std::vector<float> xyz(b.position.size() * 3);
  kernels::calibrated_points_cpu(m, view_of(b, *cal, xyz.data()));
  std::size_t points = 0, none = 0;
  for (int f = 0; f < b.frames; ++f) {
    FrameMeta meta;
    const double y = mapping.point_y(1000000 + f, meta);
    for (int s = 0; s < b.slots; ++s)
      for (int x = 0; x < b.width; ++x) {
        const std::size_t i = (static_cast<std::size_t>(f) * b.slots + s) * b.width + x;
        const float* o = xyz.data() + 3 * i;
        double X, Y, Z;
        const bool there = s < b.count[static_cast<std::size_t>(f) * b.width + x] && mapping.point(y, x, b.position[i], X, Y, Z);
        if (!there) {
          EXPECT_TRUE(std::isnan(o[0]) && std::isnan(o[1]) && std::isnan(o[2]));
          ++none;
          continue;
        }
        // The array holds X, Y - y, Z: the mapping's values exactly.
        ASSERT_EQ(o[0], X);
        ASSERT_EQ(y + static_cast<double>(o[1]), Y);
        ASSERT_EQ(o[2], Z);
        // The same point through the model's own pieces (in double): u, v
        // include the ROI offsets; the stored floats round it.
        double wx, wy, wz;
        ASSERT_TRUE(image_to_world(m, static_cast<double>(cal->roi_x + x), cal->roi_y + static_cast<double>(b.position[i]) / kPositionOne,
                                   1000000 + f, 0, wx, wy, wz));
        EXPECT_NEAR(wx, X, 1e-5);
        EXPECT_NEAR(wy, Y, 1e-5);  // Y ~ 5e4 mm: dY rounded to float, added in double
        EXPECT_NEAR(wz, Z, 1e-5);
        ++points;
      }
  }
  EXPECT_GT(points, 10000u);
  EXPECT_GT(none, 10000u);
  // Y of frame 10^6: 10^6 * step + offset in mm, whatever the skew adds from X, Z.
  FrameMeta meta;
  EXPECT_NEAR(mapping.point_y(1000000, meta), 1e6 * 0.05 + 3.0, 1e-9);
}

TEST(CalibratedPoints, WithoutCalibrationThePixelMappingIsUnchanged) {
  const ProfileMapping mapping(LinearCalibration{}, kDefaultHeightCodeBits);
  EXPECT_STREQ(mapping.unit(), "px");
  FrameMeta meta;
  double X, Y, Z;
  ASSERT_TRUE(mapping.point(mapping.point_y(17, meta), 5, 3 * kPositionOne + kPositionOne / 2, X, Y, Z));
  EXPECT_EQ(X, 5.0);
  EXPECT_EQ(Y, 17.0);
  EXPECT_EQ(Z, 3.5);
}

// The pipeline maps points in the processor when a calibration is set: the
// profiles carry the points array, and the sinks read it.
struct PointsRun {
  std::vector<float> points;
  std::vector<std::int32_t> position;
  std::uint64_t mapped = 0;
};

class PointsCapture final : public ProfileSink {
 public:
  explicit PointsCapture(PointsRun& r) : r_(r) {}
  void begin(const ScanInfo&) override {}
  void consume(const ProfileSpan& p) override {
    ASSERT_NE(p.xyz, nullptr);
    const std::size_t n = static_cast<std::size_t>(p.frames) * p.slots * p.width;
    r_.points.insert(r_.points.end(), p.xyz, p.xyz + 3 * n);
    r_.position.insert(r_.position.end(), p.position, p.position + n);
    for (std::size_t i = 0; i < n; ++i) r_.mapped += std::isnan(p.xyz[3 * i]) ? 0 : 1;
  }
  void finish() override {}

 private:
  PointsRun& r_;
};

PointsRun run_calibrated(Backend backend, std::shared_ptr<const AppliedCalibration> cal, int batch_frames) {
  SyntheticConfig sc;
  sc.width = 2016 - 32;  // not a multiple of 32
  sc.frame_height = 52;
  sc.frames = 70;
  SyntheticScanner source(sc);
  PipelineOptions o;
  o.backend = backend;
  o.batch_frames = batch_frames;
  o.buffers = 3;
  o.sheet = std::move(cal);
  PointsRun r;
  PointsCapture sink(r);
  Pipeline(o).run(source, {&sink});
  return r;
}

TEST(CalibratedPoints, ThePipelineMapsEveryDetectionInTheProcessor) {
  const auto cal = example_calibration();
  const ProfileMapping mapping(LinearCalibration{}, kDefaultHeightCodeBits, cal);
  const PointsRun r = run_calibrated(Backend::Cpu, cal, 32);
  ASSERT_EQ(r.points.size(), 3 * r.position.size());
  EXPECT_GT(r.mapped, 70u * 1000u);
  // Every mapped point is the mapping's point of its detection.
  const int width = 2016 - 32;
  for (std::size_t i = 0; i < r.position.size(); i += 97) {
    if (std::isnan(r.points[3 * i])) continue;
    double X, Y, Z;
    ASSERT_TRUE(mapping.point(0.0, static_cast<int>(i % width), r.position[i], X, Y, Z));
    EXPECT_EQ(r.points[3 * i], X);
    EXPECT_EQ(r.points[3 * i + 1], Y);
    EXPECT_EQ(r.points[3 * i + 2], Z);
  }
}

TEST(CalibratedPoints, AProfileBatchWithoutPointsIsRefusedByACalibratedChain) {
  SyntheticConfig sc;
  sc.width = 64, sc.frame_height = 16, sc.frames = 4;
  SyntheticScanner source(sc);
  BatchLayout l = source.frame_layout();
  l.frames = 4;
  ChainConfig chain;
  chain.calibration = example_calibration();
  auto p = make_processor(Backend::Cpu, l, chain);
  Batch in(l, &allocate_host);
  ASSERT_TRUE(source.fill(in));
  ProfileBatch without(l.width, l.frames, p->slots(), &allocate_host);
  EXPECT_THROW(p->process(in, without), RuntimeFailure);
  ProfileBatch with(l.width, l.frames, p->slots(), &allocate_host, true);
  EXPECT_NO_THROW(p->process(in, with));
}

class CudaCalibratedPoints : public test::CudaTest {};

TEST_F(CudaCalibratedPoints, KernelGivesTheCpuBits) {
#if STRIPELINE_HAVE_CUDA
  const auto cal = example_calibration();
  const SheetOfLightMap<double> m = cal->model.map<double>();
  const Detections b = example_batch();
  std::vector<float> cpu(b.position.size() * 3), gpu(cpu.size());
  kernels::calibrated_points_cpu(m, view_of(b, *cal, cpu.data()));

  cuda::DeviceBuffer position = cuda::DeviceBuffer::allocate(b.position.size() * sizeof(std::int32_t), "position");
  cuda::DeviceBuffer count = cuda::DeviceBuffer::allocate(b.count.size(), "count");
  cuda::DeviceBuffer xyz = cuda::DeviceBuffer::allocate(gpu.size() * sizeof(float), "xyz");
  STRIPELINE_CUDA_CHECK(cudaMemcpy(position.get(), b.position.data(), position.size(), cudaMemcpyHostToDevice));
  STRIPELINE_CUDA_CHECK(cudaMemcpy(count.get(), b.count.data(), count.size(), cudaMemcpyHostToDevice));
  STRIPELINE_CUDA_CHECK(cudaMemset(xyz.get(), 0xA5, xyz.size()));  // poisoned: an unwritten element fails
  kernels::CalibratedPointsView v = view_of(b, *cal, static_cast<float*>(xyz.get()));
  v.position = static_cast<const std::int32_t*>(position.get());
  v.count = static_cast<const std::uint8_t*>(count.get());
  kernels::cuda::launch_calibrated_points(m, v, nullptr);
  STRIPELINE_CUDA_CHECK(cudaMemcpy(gpu.data(), xyz.get(), xyz.size(), cudaMemcpyDeviceToHost));

  double worst = 0;
  std::size_t points = 0, differ = 0;
  for (std::size_t i = 0; i < cpu.size(); ++i) {
    ASSERT_EQ(std::isnan(cpu[i]), std::isnan(gpu[i])) << i;
    if (std::isnan(cpu[i])) continue;
    worst = std::max(worst, std::abs(static_cast<double>(cpu[i]) - gpu[i]));
    differ += cpu[i] != gpu[i];
    ++points;
  }
  std::printf("[ calibrated points ] CPU vs CUDA: %zu coordinates, %zu differ, max difference %.3g mm\n", points, differ, worst);
  EXPECT_GT(points, 30000u);
  EXPECT_LE(worst, 1e-4);  // the bound...
  EXPECT_EQ(differ, 0u);   // ...and the bits: no FMA contraction in the kernel
#else
  GTEST_SKIP() << "built without CUDA";
#endif
}

TEST_F(CudaCalibratedPoints, PipelineOnTheGpuGivesTheCpuPoints) {
  const auto cal = example_calibration();
  for (const int batch : {1, 32, 70}) {
    const PointsRun cpu = run_calibrated(Backend::Cpu, cal, batch);
    const PointsRun gpu = run_calibrated(Backend::Cuda, cal, batch);
    ASSERT_EQ(cpu.position, gpu.position) << "batch " << batch;
    ASSERT_EQ(cpu.points.size(), gpu.points.size());
    EXPECT_EQ(0, std::memcmp(cpu.points.data(), gpu.points.data(), cpu.points.size() * sizeof(float))) << "batch " << batch;
    EXPECT_GT(gpu.mapped, 70u * 1000u);
  }
}

}  // namespace
}  // namespace stripeline
