// Calibrated points: ProfileMapping::point (every output), the CPU batch loop
// and the CUDA kernel evaluate one function; CPU and CUDA agree within 1e-4 mm.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include "core/applied_calibration.h"
#include "core/profile_mapping.h"
#include "gpu_test.h"
#include "kernels/calibrated_points.h"
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

struct Batch {
  int frames = 40, slots = 2, width = 2016;
  std::vector<std::int32_t> position;
  std::vector<std::uint8_t> count;
  std::vector<double> frame_y;
};

Batch example_batch(const SheetOfLightMap<double>& m) {
  Batch b;
  std::mt19937 rng(7);
  std::uniform_int_distribution<std::int32_t> pos(0, 255 * kPositionOne);
  std::uniform_int_distribution<int> cnt(0, 2);
  b.position.resize(static_cast<std::size_t>(b.frames) * b.slots * b.width);
  b.count.resize(static_cast<std::size_t>(b.frames) * b.width);
  for (auto& p : b.position) p = pos(rng);
  for (auto& c : b.count) c = static_cast<std::uint8_t>(cnt(rng));
  for (int f = 0; f < b.frames; ++f) b.frame_y.push_back(motion_y(m, 1000000 + f, 0));
  return b;
}

kernels::CalibratedPointsView view_of(const Batch& b, const AppliedCalibration& c, float* out) {
  kernels::CalibratedPointsView v;
  v.position = b.position.data();
  v.count = b.count.data();
  v.frame_y = b.frame_y.data();
  v.xyz = out;
  v.frames = b.frames, v.slots = b.slots, v.width = b.width;
  v.roi_x = c.roi_x, v.roi_y = c.roi_y;
  return v;
}

TEST(CalibratedPoints, BatchLoopIsTheMappingOfEveryOutput) {
  const auto cal = example_calibration();
  const SheetOfLightMap<double> m = cal->model.map<double>();
  const ProfileMapping mapping(LinearCalibration{}, kDefaultHeightCodeBits, cal);
  EXPECT_STREQ(mapping.unit(), "mm");
  const Batch b = example_batch(m);
  std::vector<float> xyz(b.position.size() * 3);
  kernels::calibrated_points_cpu(m, view_of(b, *cal, xyz.data()));
  std::size_t points = 0, none = 0;
  for (int f = 0; f < b.frames; ++f)
    for (int s = 0; s < b.slots; ++s)
      for (int x = 0; x < b.width; ++x) {
        const std::size_t i = (static_cast<std::size_t>(f) * b.slots + s) * b.width + x;
        const float* o = xyz.data() + 3 * i;
        double X, Y, Z;
        FrameMeta meta;
        const bool there = s < b.count[static_cast<std::size_t>(f) * b.width + x] &&
                           mapping.point(mapping.point_y(1000000 + f, meta), x, b.position[i], X, Y, Z);
        if (!there) {
          EXPECT_TRUE(std::isnan(o[0]) && std::isnan(o[1]) && std::isnan(o[2]));
          ++none;
          continue;
        }
        ASSERT_EQ(o[0], static_cast<float>(X));
        ASSERT_EQ(o[1], static_cast<float>(Y));
        ASSERT_EQ(o[2], static_cast<float>(Z));
        // The same point through the model's own pieces: u, v include the ROI offsets.
        double wx, wy, wz;
        ASSERT_TRUE(image_to_world(m, static_cast<double>(cal->roi_x + x), cal->roi_y + static_cast<double>(b.position[i]) / kPositionOne,
                                   1000000 + f, 0, wx, wy, wz));
        EXPECT_NEAR(wx, X, 1e-9);
        EXPECT_NEAR(wy, Y, 1e-9);
        EXPECT_NEAR(wz, Z, 1e-9);
        ++points;
      }
  EXPECT_GT(points, 10000u);
  EXPECT_GT(none, 10000u);
  // Y of frame 10^6 + f: f * step + offset + 10^6 * step in mm, whatever the skew adds from X, Z.
  EXPECT_NEAR(b.frame_y[0], 1e6 * 0.05 + 3.0, 1e-9);
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

class CudaCalibratedPoints : public test::CudaTest {};

TEST_F(CudaCalibratedPoints, MatchTheCpuWithin1e4Millimetres) {
#if STRIPELINE_HAVE_CUDA
  const auto cal = example_calibration();
  const SheetOfLightMap<double> m = cal->model.map<double>();
  const Batch b = example_batch(m);
  std::vector<float> cpu(b.position.size() * 3), gpu(cpu.size());
  kernels::calibrated_points_cpu(m, view_of(b, *cal, cpu.data()));

  cuda::DeviceBuffer position = cuda::DeviceBuffer::allocate(b.position.size() * sizeof(std::int32_t), "position");
  cuda::DeviceBuffer count = cuda::DeviceBuffer::allocate(b.count.size(), "count");
  cuda::DeviceBuffer frame_y = cuda::DeviceBuffer::allocate(b.frame_y.size() * sizeof(double), "frame_y");
  cuda::DeviceBuffer xyz = cuda::DeviceBuffer::allocate(gpu.size() * sizeof(float), "xyz");
  STRIPELINE_CUDA_CHECK(cudaMemcpy(position.get(), b.position.data(), position.size(), cudaMemcpyHostToDevice));
  STRIPELINE_CUDA_CHECK(cudaMemcpy(count.get(), b.count.data(), count.size(), cudaMemcpyHostToDevice));
  STRIPELINE_CUDA_CHECK(cudaMemcpy(frame_y.get(), b.frame_y.data(), frame_y.size(), cudaMemcpyHostToDevice));
  kernels::CalibratedPointsView v = view_of(b, *cal, static_cast<float*>(xyz.get()));
  v.position = static_cast<const std::int32_t*>(position.get());
  v.count = static_cast<const std::uint8_t*>(count.get());
  v.frame_y = static_cast<const double*>(frame_y.get());
  kernels::cuda::launch_calibrated_points(m, v, nullptr);
  STRIPELINE_CUDA_CHECK(cudaMemcpy(gpu.data(), xyz.get(), xyz.size(), cudaMemcpyDeviceToHost));

  double worst = 0;
  std::size_t points = 0;
  for (std::size_t i = 0; i < cpu.size(); ++i) {
    ASSERT_EQ(std::isnan(cpu[i]), std::isnan(gpu[i])) << i;
    if (std::isnan(cpu[i])) continue;
    worst = std::max(worst, std::abs(static_cast<double>(cpu[i]) - gpu[i]));
    ++points;
  }
  std::printf("[ calibrated points ] CPU vs CUDA: %zu coordinates, max difference %.3g mm\n", points, worst);
  EXPECT_GT(points, 30000u);
  EXPECT_LE(worst, 1e-4);
#else
  GTEST_SKIP() << "built without CUDA";
#endif
}

}  // namespace
}  // namespace stripeline
