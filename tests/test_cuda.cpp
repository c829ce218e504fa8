// CUDA backend against its oracle, the CPU backend: every stage on its own and
// the processor (fused kernel and per-stage fallback), compared bit for bit on
// odd geometries, both pixel formats, partial batches, every method, blur size
// and threshold setting, on random frames and on synthetic stripes. Outputs
// are poisoned before each run so that an unwritten element fails.
//
// Every test skips (visibly, with the reason) when no CUDA device is usable,
// and the file builds without the CUDA backend too.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstring>
#include <iostream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "acquisition/synthetic_scanner.h"
#include "core/errors.h"
#include "gpu_test.h"
#include "stages/backend.h"
#include "stages/chain.h"
#include "stages/stages.h"
#if STRIPELINE_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "core/cuda/device_lane.h"
#include "core/cuda/runtime.h"
#include "stages/cuda/cuda_stages.h"
#endif

using namespace stripeline;

namespace {

// ---------------------------------------------------------------------------
// Batches and synthetic content

Batch make_batch(int width, int frame_height, int frames, int capacity, PixelFormat format,
                 HostAllocator alloc = &allocate_host) {
  Batch b(BatchLayout{width, frame_height, capacity, format}, alloc);
  b.frames = frames;
  b.sequence = 7;
  b.first_index = 1000;
  for (int i = 0; i < capacity; ++i) {
    b.meta[i].frame_id = 1000 + static_cast<std::uint64_t>(i);
    b.meta[i].timestamp_ns = 5'000'000 * static_cast<std::int64_t>(i);
    b.meta[i].encoder = 3 * i;
    b.meta[i].has_encoder = (i % 2) == 0;
  }
  return b;
}

std::uint32_t max_value(PixelFormat f) { return f == PixelFormat::Mono8 ? 255u : 65535u; }

void set_pixel(Batch& b, std::size_t index, std::uint32_t v) {
  if (b.layout.format == PixelFormat::Mono8)
    reinterpret_cast<std::uint8_t*>(b.pixels.data())[index] = static_cast<std::uint8_t>(v);
  else
    reinterpret_cast<std::uint16_t*>(b.pixels.data())[index] = static_cast<std::uint16_t>(v);
}

// Uniform noise over the whole range, every frame of the capacity.
void fill_random(Batch& b, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::uint32_t> value(0, max_value(b.layout.format));
  for (std::size_t i = 0; i < b.layout.pixels(); ++i) set_pixel(b, i, value(rng));
}

// Synthetic laser stripes: per column, `stripes` Gaussians (sigma 0.5 to
// `widest` px, amplitude 0.2..1.4 of full scale, so some saturate into
// plateaus) at rows that wander from column to column and sometimes jump; low
// noise below the threshold; some columns without any stripe (gaps).
void fill_stripes(Batch& b, std::uint64_t seed, int stripes, double widest = 2.5) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const int w = b.layout.width, h = b.layout.frame_height;
  const double full = max_value(b.layout.format);
  std::vector<double> centre(stripes), sigma(stripes), amplitude(stripes);
  for (int f = 0; f < b.layout.frames; ++f) {
    for (int s = 0; s < stripes; ++s) {
      centre[s] = u(rng) * (h - 1);
      sigma[s] = 0.5 + (widest - 0.5) * u(rng);
      amplitude[s] = (0.2 + 1.2 * u(rng)) * full;
    }
    const std::size_t frame0 = static_cast<std::size_t>(f) * b.layout.frame_pixels();
    for (int x = 0; x < w; ++x) {
      for (int s = 0; s < stripes; ++s) {
        centre[s] = std::clamp(centre[s] + (u(rng) - 0.5) * 0.8, -1.0, static_cast<double>(h));
        if (u(rng) < 0.03) centre[s] = u(rng) * (h - 1);
      }
      const bool gap = u(rng) < 0.08;
      for (int y = 0; y < h; ++y) {
        double v = u(rng) * 0.12 * full;
        if (!gap)
          for (int s = 0; s < stripes; ++s) {
            const double d = (y - centre[s]) / sigma[s];
            if (d > -5.0 && d < 5.0) v += amplitude[s] * std::exp(-0.5 * d * d);
          }
        set_pixel(b, frame0 + static_cast<std::size_t>(y) * w + x, static_cast<std::uint32_t>(std::min(full, std::round(v))));
      }
    }
  }
}

void fill(Batch& b, bool stripes, std::uint64_t seed) {
  if (stripes)
    fill_stripes(b, seed, 1 + static_cast<int>(seed % 3));
  else
    fill_random(b, seed);
}

// ---------------------------------------------------------------------------
// Configurations

struct MethodCase {
  const char* name;
  ColumnMethod method;
  SpotSelection selection;
  SubpixelEstimator estimator = SubpixelEstimator::Centroid;  // adaptive only
};
const MethodCase kMethods[] = {
    {"cog", ColumnMethod::Cog, SpotSelection::Strongest},
    {"max", ColumnMethod::Max, SpotSelection::Strongest},
    {"window", ColumnMethod::Window, SpotSelection::Strongest},
    {"local-max/strongest", ColumnMethod::LocalMax, SpotSelection::Strongest},
    {"local-max/top", ColumnMethod::LocalMax, SpotSelection::Top},
    {"local-max/bottom", ColumnMethod::LocalMax, SpotSelection::Bottom},
    {"local-max/all", ColumnMethod::LocalMax, SpotSelection::All},
    {"all", ColumnMethod::All, SpotSelection::Strongest},
    {"adaptive/centroid", ColumnMethod::Adaptive, SpotSelection::Strongest, SubpixelEstimator::Centroid},
    {"adaptive/gauss", ColumnMethod::Adaptive, SpotSelection::Strongest, SubpixelEstimator::Gauss},
    {"adaptive/parabola", ColumnMethod::Adaptive, SpotSelection::Strongest, SubpixelEstimator::Parabola},
    {"adaptive/steger", ColumnMethod::Adaptive, SpotSelection::Strongest, SubpixelEstimator::Steger},
    {"adaptive/steger/all", ColumnMethod::Adaptive, SpotSelection::All, SubpixelEstimator::Steger},
    {"adaptive/centroid/top", ColumnMethod::Adaptive, SpotSelection::Top, SubpixelEstimator::Centroid},
};
constexpr int kMethodCount = static_cast<int>(sizeof kMethods / sizeof kMethods[0]);
const int kBlurSizes[] = {0, 3, 5, 15};

// `variant` varies the gates: cog width limits, a smaller 'all' slot count
// (overflow), more local-max slots, a wider neighbourhood.
ChainConfig make_config(const MethodCase& m, int blur, bool threshold_stage, PixelFormat f, int frame_height, int variant = 0) {
  ChainConfig c;
  const std::uint32_t scale = f == PixelFormat::Mono8 ? 1u : 257u;
  c.blur_size = blur;
  c.blur_sigma = variant % 2 ? 1.7 : 0.0;
  c.blur_across = variant < 2;  // along the columns only on variants 2, 3; the 2-D blur (the default) on 0, 1
  c.threshold_stage = threshold_stage;
  c.column.method = m.method;
  c.column.selection = m.selection;
  c.column.threshold = 40 * scale;
  c.column.min_peak = 60 * scale;
  c.column.min_width = variant % 3 == 1 ? std::min(2, frame_height) : 1;
  c.column.max_width = variant % 3 == 1 ? std::max(c.column.min_width, 9) : 0;
  c.column.window = std::min(variant % 2 ? 4 : 10, frame_height);
  c.column.neighbours = variant % 2 ? 5 : 3;
  c.max_peaks = variant % 2 ? 7 : 4;
  c.max_points = variant % 2 ? 5 : 0;
  // adaptive: every knob moves with the variant (gates on and off, narrow and wide runs)
  c.adaptive.estimator = m.estimator;
  c.adaptive.min_contrast = variant % 2 ? 10.0 : 24.0;
  c.adaptive.noise_factor = variant % 3 == 1 ? 0.0 : 4.0;
  c.adaptive.max_width = variant % 2 ? 8 : 16;
  c.adaptive.level = variant == 2 ? 0.3 : 0.5;
  c.adaptive.centroid_level = variant == 3 ? 0.0 : 0.125;
  c.adaptive.steger_sigma = variant % 2 ? 1.6 : 1.0;
  c.adaptive.pixel_bits = f == PixelFormat::Mono16 && variant == 3 ? 12 : 0;
  // the neighbour check (single-peak profiles only): on for odd variants
  if (variant % 2 == 1 && m.selection != SpotSelection::All && m.method != ColumnMethod::All) {
    c.neighbour_check.columns = variant == 3 ? 3 : 1;
    c.neighbour_check.step = variant == 3 ? 0.75 : 2.0;
  }
  return c;
}

std::string describe(const Batch& b, const MethodCase& m, const ChainConfig& c, bool stripes) {
  std::ostringstream s;
  s << b.layout.width << "x" << b.layout.frame_height << " " << to_string(b.layout.format) << " frames " << b.frames << "/"
    << b.layout.frames << " " << m.name << " blur " << c.blur_size << (c.blur_across ? " 2-D" : " along columns") << " sigma " << c.blur_sigma << " threshold_stage "
    << c.threshold_stage << " min/max width " << c.column.min_width << "/" << c.column.max_width << " window " << c.column.window
    << " neighbours " << c.column.neighbours << " max_peaks " << c.max_peaks << " max_points " << c.max_points << " neighbour check "
    << c.neighbour_check.columns << "/" << c.neighbour_check.step
    << (stripes ? " stripes" : " random");
  return s.str();
}

// ---------------------------------------------------------------------------
// Exact comparisons

template <class T>
::testing::AssertionResult same_array(const char* name, const T* expected, const T* got, std::size_t n, int width, int slots) {
  if (std::memcmp(expected, got, n * sizeof(T)) == 0) return ::testing::AssertionSuccess();
  for (std::size_t i = 0; i < n; ++i)
    if (std::memcmp(&expected[i], &got[i], sizeof(T)) != 0) {
      const std::size_t per_frame = static_cast<std::size_t>(width) * slots;
      return ::testing::AssertionFailure() << name << " differs at frame " << i / per_frame << " slot " << (i % per_frame) / width
                                           << " column " << i % width << ": cpu " << +expected[i] << ", cuda " << +got[i];
    }
  return ::testing::AssertionFailure() << name << " differs (padding?)";
}

::testing::AssertionResult same_meta(const std::vector<FrameMeta>& a, const std::vector<FrameMeta>& b, int frames) {
  if (static_cast<int>(a.size()) < frames || static_cast<int>(b.size()) < frames) return ::testing::AssertionFailure() << "meta too short";
  for (int i = 0; i < frames; ++i)
    if (a[i].frame_id != b[i].frame_id || a[i].timestamp_ns != b[i].timestamp_ns || a[i].encoder != b[i].encoder ||
        a[i].has_encoder != b[i].has_encoder || a[i].missing != b[i].missing)
      return ::testing::AssertionFailure() << "meta of frame " << i << " differs";
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult same_profiles(const ProfileBatch& cpu, const ProfileBatch& gpu) {
  if (cpu.frames != gpu.frames || cpu.sequence != gpu.sequence || cpu.first_index != gpu.first_index)
    return ::testing::AssertionFailure() << "header differs: frames " << cpu.frames << "/" << gpu.frames << " sequence " << cpu.sequence
                                         << "/" << gpu.sequence;
  if (cpu.width != gpu.width || cpu.slots != gpu.slots) return ::testing::AssertionFailure() << "shape differs";
  const std::size_t n = static_cast<std::size_t>(cpu.frames) * cpu.slots * cpu.width;
  const std::size_t c = static_cast<std::size_t>(cpu.frames) * cpu.width;
  if (auto r = same_array("position", cpu.position, gpu.position, n, cpu.width, cpu.slots); !r) return r;
  if (auto r = same_array("intensity", cpu.intensity, gpu.intensity, n, cpu.width, cpu.slots); !r) return r;
  if (auto r = same_array("width", cpu.stripe_width, gpu.stripe_width, n, cpu.width, cpu.slots); !r) return r;
  if (auto r = same_array("quality", cpu.quality, gpu.quality, n, cpu.width, cpu.slots); !r) return r;
  if (auto r = same_array("count", cpu.count, gpu.count, c, cpu.width, 1); !r) return r;
  return same_meta(cpu.meta, gpu.meta, cpu.frames);
}

::testing::AssertionResult same_pixels(const Batch& cpu, const Batch& gpu) {
  if (cpu.frames != gpu.frames || cpu.sequence != gpu.sequence || cpu.first_index != gpu.first_index)
    return ::testing::AssertionFailure() << "header differs";
  const std::size_t n = cpu.filled_bytes();
  if (std::memcmp(cpu.pixels.data(), gpu.pixels.data(), n) != 0) {
    const int bpp = static_cast<int>(bytes_per_pixel(cpu.layout.format));
    for (std::size_t i = 0; i < n; i += bpp)
      if (std::memcmp(cpu.pixels.data() + i, gpu.pixels.data() + i, bpp) != 0) {
        const std::size_t p = i / bpp;
        const std::size_t row = p / cpu.layout.width;
        return ::testing::AssertionFailure() << "pixel differs at frame " << row / cpu.layout.frame_height << " row "
                                             << row % cpu.layout.frame_height << " column " << p % cpu.layout.width;
      }
  }
  return same_meta(cpu.meta, gpu.meta, cpu.frames);
}

ProfileBatch make_profiles(const Batch& in, int slots, HostAllocator alloc = &allocate_host) {
  ProfileBatch p(in.layout.width, in.layout.frames, slots, alloc);
  p.poison();
  return p;
}

std::unique_ptr<BatchProcessor> make_unfused_processor(const BatchLayout& l, const ChainConfig& c) {
#if STRIPELINE_HAVE_CUDA
  cuda::CudaProcessorOptions o;
  o.allow_fused = false;
  return cuda::make_cuda_processor_ex(l, c, o);
#else
  (void)l;
  (void)c;
  throw ConfigError("no CUDA backend");
#endif
}

// CPU processor vs the CUDA processor (fused where it fits) and, when asked,
// the CUDA per-stage path too.
void check_chain(const Batch& in, const ChainConfig& config, const std::string& what, bool also_unfused) {
  SCOPED_TRACE(what);
  const int slots = output_slots(config, in.layout.frame_height);
  auto cpu = make_processor(Backend::Cpu, in.layout, config);
  ProfileBatch expected = make_profiles(in, slots);
  cpu->process(in, expected);

  auto gpu = make_processor(Backend::Cuda, in.layout, config);
  ProfileBatch got = make_profiles(in, slots);
  gpu->process(in, got);
  ASSERT_TRUE(same_profiles(expected, got)) << "default CUDA processor";

  if (also_unfused) {
    auto per_stage = make_unfused_processor(in.layout, config);
    ProfileBatch got2 = make_profiles(in, slots);
    per_stage->process(in, got2);
    ASSERT_TRUE(same_profiles(expected, got2)) << "per-stage CUDA path";
  }
}

const int kWidths[] = {1, 13, 31, 33, 176, 1936, 2048};
const int kHeights[] = {1, 2, 3, 7, 52, 64, 256};
const PixelFormat kFormats[] = {PixelFormat::Mono8, PixelFormat::Mono16};

}  // namespace

// ===========================================================================
// Every GPU test derives from CudaTest: it skips, with the reason, where no
// usable GPU is present (never passes silently).
using test::CudaTest;
class CudaRuntime : public CudaTest {};
class CudaBlur : public CudaTest {};
class CudaThreshold : public CudaTest {};
class CudaFused : public CudaTest {};
class CudaProcessor : public CudaTest {};
class CudaBench : public CudaTest {};
// Parameterised by method (kMethods).
class CudaExtract : public CudaTest, public ::testing::WithParamInterface<int> {};
class CudaFusedMethod : public CudaTest, public ::testing::WithParamInterface<int> {};
std::string method_name(const ::testing::TestParamInfo<int>& info) {
  std::string n = kMethods[info.param].name;
  for (char& c : n)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
}

// ===========================================================================
// Runtime helpers

TEST_F(CudaRuntime, DeviceStatusDescribesTheDevice) {
#if STRIPELINE_HAVE_CUDA
  const cuda::DeviceStatus& s = cuda::device_status();
  EXPECT_TRUE(s.available);
  EXPECT_EQ(s.device, 0);
  EXPECT_FALSE(s.description.empty());
  EXPECT_NE(s.description.find("compute"), std::string::npos) << s.description;
  EXPECT_GT(s.startup_ms, 0.0);
  EXPECT_EQ(&s, &cuda::device_status()) << "initialised once";
  EXPECT_EQ(stripeline::cuda_status(), s.description);
  EXPECT_EQ(stripeline::cuda_startup_ms(), s.startup_ms);
  EXPECT_EQ(resolve_backend(Backend::Auto), Backend::Cuda);
  std::cout << "[ CUDA     ] " << s.description << ", start-up " << s.startup_ms << " ms\n";
#endif
}

TEST_F(CudaRuntime, PinnedHostBuffers) {
#if STRIPELINE_HAVE_CUDA
  HostBuffer b = cuda::allocate_pinned(1 << 20);
  ASSERT_TRUE(b);
  EXPECT_TRUE(b.pinned());
  EXPECT_EQ(b.size(), std::size_t{1} << 20);
  std::memset(b.data(), 0x5A, b.size());
  cudaPointerAttributes attr{};
  ASSERT_EQ(cudaPointerGetAttributes(&attr, b.data()), cudaSuccess);
  EXPECT_EQ(attr.type, cudaMemoryTypeHost);
  HostBuffer c = host_allocator_for(Backend::Cuda)(4096);
  EXPECT_TRUE(c.pinned());
  HostBuffer moved(std::move(b));
  EXPECT_TRUE(moved.pinned());
  EXPECT_FALSE(b);
#endif
}

TEST_F(CudaRuntime, HandlesAreMoveOnlyAndReleaseOnce) {
#if STRIPELINE_HAVE_CUDA
  cuda::DeviceBuffer a = cuda::DeviceBuffer::allocate(1000, "test");
  ASSERT_TRUE(a);
  EXPECT_EQ(a.size(), 1000u);
  void* p = a.get();
  cuda::DeviceBuffer b(std::move(a));
  EXPECT_FALSE(a);
  EXPECT_EQ(a.size(), 0u);
  EXPECT_EQ(b.get(), p);
  a = std::move(b);
  EXPECT_EQ(a.get(), p);
  EXPECT_EQ(a.size(), 1000u);

  cuda::Stream s = cuda::Stream::create();
  ASSERT_TRUE(s);
  unsigned flags = 0;
  ASSERT_EQ(cudaStreamGetFlags(s, &flags), cudaSuccess);
  EXPECT_EQ(flags, static_cast<unsigned>(cudaStreamNonBlocking));
  cuda::Event start = cuda::Event::create_timing(), stop = cuda::Event::create_timing(), done = cuda::Event::create_sync();
  STRIPELINE_CUDA_CHECK(cudaEventRecord(start, s));
  STRIPELINE_CUDA_CHECK(cudaMemsetAsync(a.data(), 0, a.size(), s));
  STRIPELINE_CUDA_CHECK(cudaEventRecord(stop, s));
  STRIPELINE_CUDA_CHECK(cudaEventRecord(done, s));
  STRIPELINE_CUDA_CHECK(cudaEventSynchronize(done));
  EXPECT_GE(cuda::elapsed_ms(start, stop), 0.0f);
  float ms = 0;
  EXPECT_EQ(cudaEventElapsedTime(&ms, start, done), cudaErrorInvalidResourceHandle) << "sync events carry no timing";
  (void)cudaGetLastError();
#endif
}

TEST_F(CudaRuntime, CheckThrowsCudaErrorNamingTheCallAndClearsIt) {
#if STRIPELINE_HAVE_CUDA
  try {
    STRIPELINE_CUDA_CHECK(cudaSetDevice(12345));
    FAIL() << "expected a CudaError";
  } catch (const CudaError& e) {
    EXPECT_EQ(e.code(), static_cast<int>(cudaErrorInvalidDevice));
    const std::string what = e.what();
    EXPECT_NE(what.find("cudaSetDevice(12345)"), std::string::npos) << what;
    EXPECT_NE(what.find("test_cuda.cpp"), std::string::npos) << what;
  }
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "the error must not resurface at the next launch check";
  EXPECT_NO_THROW(STRIPELINE_CUDA_CHECK_LAUNCH("nothing launched"));
#endif
}

// ===========================================================================
// Stages on their own

TEST_F(CudaBlur, MatchesCpuOnOddSizesEveryBlurSize) {
  std::uint64_t seed = 1;
  for (PixelFormat format : kFormats)
    for (int width : {1, 13, 33, 176, 1936})
      for (int height : {1, 2, 3, 7, 52, 64, 256})
        for (int blur : kBlurSizes) {
          const int capacity = 4, frames = height > 64 ? 2 : 3;
          Batch in = make_batch(width, height, frames, capacity, format);
          fill(in, seed % 2 == 0, seed);
          ++seed;
          auto taps = kernels::make_gaussian_taps(blur, blur == 15 ? 4.0 : 0.0);
          taps.across = seed % 3 != 0;  // along the columns only on every third
          Batch expected = make_batch(width, height, 0, capacity, format);
          Batch got = make_batch(width, height, 0, capacity, format);
          std::memset(got.pixels.data(), 0xA5, got.pixels.size());
          make_blur_stage(Backend::Cpu, in.layout, taps)->run(in, expected);
          make_blur_stage(Backend::Cuda, in.layout, taps)->run(in, got);
          ASSERT_TRUE(same_pixels(expected, got)) << width << "x" << height << " " << to_string(format) << " blur " << blur
                                                  << (taps.across ? " 2-D" : " along columns");
        }
}

TEST_F(CudaBlur, TallFramesAndManyFrames) {
  for (PixelFormat format : kFormats) {
    for (auto [width, height, frames, capacity] : {std::array{176, 1024, 2, 3}, std::array{2048, 52, 300, 300}, std::array{31, 4096, 1, 1}}) {
      Batch in = make_batch(width, height, frames, capacity, format, host_allocator_for(Backend::Cuda));
      fill_stripes(in, 99, 2);
      const auto taps = kernels::make_gaussian_taps(7, 0.0);
      Batch expected = make_batch(width, height, 0, capacity, format);
      Batch got = make_batch(width, height, 0, capacity, format, host_allocator_for(Backend::Cuda));
      std::memset(got.pixels.data(), 0xA5, got.pixels.size());
      make_blur_stage(Backend::Cpu, in.layout, taps)->run(in, expected);
      auto stage = make_blur_stage(Backend::Cuda, in.layout, taps);
      stage->run(in, got);
      ASSERT_TRUE(same_pixels(expected, got)) << width << "x" << height << " " << to_string(format);
      // Same stage, another batch: nothing left over from the first.
      fill_random(in, 5);
      make_blur_stage(Backend::Cpu, in.layout, taps)->run(in, expected);
      std::memset(got.pixels.data(), 0xA5, got.pixels.size());
      stage->run(in, got);
      ASSERT_TRUE(same_pixels(expected, got)) << width << "x" << height << " " << to_string(format) << " second batch";
    }
  }
}

TEST_F(CudaThreshold, MatchesCpuOutOfPlaceAndInPlace) {
  std::uint64_t seed = 10;
  for (PixelFormat format : kFormats)
    for (int width : {1, 13, 176, 2048})
      for (int height : {1, 7, 52})
        for (std::uint32_t t : {1u, 40u, 200u}) {
          const std::uint32_t threshold = format == PixelFormat::Mono8 ? t : t * 257;
          Batch in = make_batch(width, height, 3, 5, format);
          fill_random(in, seed++);
          Batch expected = make_batch(width, height, 0, 5, format);
          Batch got = make_batch(width, height, 0, 5, format);
          std::memset(got.pixels.data(), 0xA5, got.pixels.size());
          make_threshold_stage(Backend::Cpu, in.layout, threshold)->run(in, expected);
          auto stage = make_threshold_stage(Backend::Cuda, in.layout, threshold);
          stage->run(in, got);
          ASSERT_TRUE(same_pixels(expected, got)) << width << "x" << height << " threshold " << threshold;
          stage->run(in, in);  // in place
          ASSERT_TRUE(same_pixels(expected, in)) << width << "x" << height << " threshold " << threshold << " in place";
        }
}

TEST_P(CudaExtract, MatchesCpu) {
  const int m = GetParam();
  std::uint64_t seed = 100 + 1000 * static_cast<std::uint64_t>(m);
  for (PixelFormat format : kFormats)
    for (int width : {1, 33, 176, 2048})
      for (int height : {1, 3, 52, 256})
        for (bool stripes : {true, false}) {
          const ChainConfig config = make_config(kMethods[m], 0, false, format, height, static_cast<int>(seed % 4));
          Batch in = make_batch(width, height, 2, 3, format);
          fill(in, stripes, seed++);
          const kernels::ColumnParams params = validate_chain(config, in.layout);
          ProfileBatch expected = make_profiles(in, params.slots);
          ProfileBatch got = make_profiles(in, params.slots);
          make_extract_stage(Backend::Cpu, in.layout, params)->run(in, expected);
          make_extract_stage(Backend::Cuda, in.layout, params)->run(in, got);
          ASSERT_TRUE(same_profiles(expected, got)) << describe(in, kMethods[m], config, stripes);
        }
}
INSTANTIATE_TEST_SUITE_P(EveryMethod, CudaExtract, ::testing::Range(0, kMethodCount), method_name);

// ===========================================================================
// The processor: fused kernel and per-stage path

TEST_F(CudaFused, MatchesCpuOnEveryGeometry) {
  int i = 0;
  for (PixelFormat format : kFormats)
    for (int width : kWidths)
      for (int height : kHeights) {
        // Cycle method, blur, threshold stage and gate variant over the geometries.
        const MethodCase& m = kMethods[i % kMethodCount];
        const int blur = kBlurSizes[(i / 3) % 4];
        const bool threshold_stage = i % 5 != 0;
        const ChainConfig config = make_config(m, blur, threshold_stage, format, height, i % 4);
        const int capacity = height >= 256 ? 4 : 6;
        Batch in = make_batch(width, height, capacity - 1, capacity, format);
        for (bool stripes : {true, false}) {
          fill(in, stripes, static_cast<std::uint64_t>(1000 + 2 * i + stripes));
          ASSERT_NO_FATAL_FAILURE(check_chain(in, config, describe(in, m, config, stripes), true));
        }
        ++i;
      }
}

// The warp-per-column kernel (kernels/cuda/warp_chain.cu), forced on every
// batch size, against the CPU: every geometry it supports (up to 128 rows),
// each adaptive selection and estimator, blur sizes 0..15 (2-D and along the
// columns), both formats, with and without stripes, from pageable and
// pinned host memory. The processor picks it by itself for batches of at
// most kWarpChainMaxFrames frames.
TEST_F(CudaFused, TheWarpChainMatchesCpuOnEveryGeometry) {
#if STRIPELINE_HAVE_CUDA
  int i = 0;
  int adaptive[kMethodCount], n = 0;
  for (int m = 0; m < kMethodCount; ++m)
    if (kMethods[m].method == ColumnMethod::Adaptive) adaptive[n++] = m;
  ASSERT_GE(n, 4);
  for (PixelFormat format : kFormats)
    for (int width : kWidths)
      for (int height : {1, 2, 3, 7, 31, 33, 52, 64, 100, 128}) {
        const MethodCase& m = kMethods[adaptive[i % n]];
        const int blur = i % 7 == 0 ? 15 : kBlurSizes[(i / 3) % 4];
        const ChainConfig config = make_config(m, blur, i % 5 != 0, format, height, i % 4);
        const int frames = 1 + i % 3;
        const HostAllocator alloc = i % 2 == 0 ? host_allocator_for(Backend::Cuda) : HostAllocator(&allocate_host);
        Batch in = make_batch(width, height, frames, 4, format, alloc);
        cuda::CudaProcessorOptions forced;
        forced.warp_chain_max_frames = 1000;
        auto warp = cuda::make_cuda_processor_ex(in.layout, config, forced);
        auto cpu = make_processor(Backend::Cpu, in.layout, config);
        const int slots = output_slots(config, height);
        for (bool stripes : {true, false}) {
          fill(in, stripes, static_cast<std::uint64_t>(7000 + 2 * i + stripes));
          // A new `got` each time: a freed pinned buffer's address often
          // comes back, and the processor's CUDA graphs must not take the
          // new buffer for the old one (replaying the old one's copies
          // crashed the driver).
          ProfileBatch expected = make_profiles(in, slots), got = make_profiles(in, slots, alloc);
          cpu->process(in, expected);
          warp->process(in, got);
          ASSERT_TRUE(same_profiles(expected, got)) << "warp chain, " << describe(in, m, config, stripes);
        }
        ++i;
      }
#endif
}

// The warp chain's walks taken by the whole warp (kernels/cuda/warp_loops.cuh)
// where they run past one step a lane: stripes up to 12 px sigma and runs and
// search radii up to 256 rows (walks of more than 32 steps, anchors far out,
// valleys between stripes), in columns of one to three stripes (a warp's
// candidates evaluated by the warp) and in noise (a lane each), against the
// CPU.
TEST_F(CudaFused, TheWarpChainsLongWalksMatchCpu) {
#if STRIPELINE_HAVE_CUDA
  int i = 0;
  for (PixelFormat format : kFormats)
    for (int height : {40, 64, 100, 128})
      for (int max_width : {24, 40, 256}) {
        const MethodCase& m = kMethods[kMethodCount - 1 - i % 6];  // the six adaptive methods are last
        ASSERT_EQ(m.method, ColumnMethod::Adaptive);
        ChainConfig config = make_config(m, i % 3 == 0 ? 0 : 5, i % 2 == 0, format, height, i % 4);
        config.adaptive.max_width = max_width;
        config.adaptive.noise_factor = i % 2 == 0 ? 4.0 : 0.0;
        Batch in = make_batch(176, height, 2, 2, format);
        cuda::CudaProcessorOptions forced;
        forced.warp_chain_max_frames = 1000;
        auto warp = cuda::make_cuda_processor_ex(in.layout, config, forced);
        auto cpu = make_processor(Backend::Cpu, in.layout, config);
        const int slots = output_slots(config, height);
        for (int stripes : {0, 1, 2, 3}) {
          const auto seed = static_cast<std::uint64_t>(9100 + 4 * i + stripes);
          if (stripes == 0)
            fill_random(in, seed);
          else
            fill_stripes(in, seed, stripes, 12.0);
          ProfileBatch expected = make_profiles(in, slots), got = make_profiles(in, slots);
          cpu->process(in, expected);
          warp->process(in, got);
          ASSERT_TRUE(same_profiles(expected, got)) << "warp chain, " << describe(in, m, config, stripes > 0) << ", " << stripes
                                                    << " wide stripe(s), stripe_max_width " << max_width;
        }
        ++i;
      }
#endif
}

// The per-frame path as the live pipeline runs it: the default chain (the
// line model on and off), a frame or two of pinned pixels into pinned
// profiles (the warp chain), replayed from the slot's CUDA graphs with new
// pixels each time: the CPU's bits.
TEST_F(CudaFused, LivePathFramesMatchCpu) {
#if STRIPELINE_HAVE_CUDA
  const HostAllocator pinned = host_allocator_for(Backend::Cuda);
  std::uint64_t seed = 901;
  for (PixelFormat format : kFormats)
    for (bool line_model : {true, false}) {
      ChainConfig config;
      config.line_model.enabled = line_model;
      Batch in = make_batch(2048, 52, 1, 8, format, pinned);
      const int slots = output_slots(config, 52);
      auto gpu = make_processor(Backend::Cuda, in.layout, config);
      auto cpu = make_processor(Backend::Cpu, in.layout, config);
      ProfileBatch got = make_profiles(in, slots, pinned);
      for (int frames : {1, 2, 1, 2}) {
        in.frames = frames;
        fill(in, seed % 3 != 0, seed);
        ++seed;
        ProfileBatch expected = make_profiles(in, slots);
        cpu->process(in, expected);
        gpu->process(in, got);
        ASSERT_TRUE(same_profiles(expected, got)) << to_string(format) << (line_model ? " line model" : " no line model") << ", " << frames << " frame(s)";
      }
    }
#endif
}

TEST_P(CudaFusedMethod, MatchesCpuForEveryBlurSizeAndThresholdSetting) {
  const int m = GetParam();
  std::uint64_t seed = 5000 + 1000 * static_cast<std::uint64_t>(m);
  for (PixelFormat format : kFormats)
    for (auto [width, height] : {std::array{176, 52}, std::array{33, 7}, std::array{200, 64}})
      for (int blur : kBlurSizes)
        for (bool threshold_stage : {true, false}) {
          const ChainConfig config = make_config(kMethods[m], blur, threshold_stage, format, height, static_cast<int>(seed % 4));
          Batch in = make_batch(width, height, 17, 20, format);
          const bool stripes = seed % 3 != 0;
          fill(in, stripes, seed++);
          ASSERT_NO_FATAL_FAILURE(check_chain(in, config, describe(in, kMethods[m], config, stripes), true));
        }
}
INSTANTIATE_TEST_SUITE_P(EveryMethod, CudaFusedMethod, ::testing::Range(0, kMethodCount), method_name);

TEST_F(CudaFused, ProductionShapeAndPartialBatches) {
  const HostAllocator pinned = host_allocator_for(Backend::Cuda);
  for (PixelFormat format : kFormats)
    for (int frames : {1, 3, 17, 300}) {
      Batch in = make_batch(2048, 52, frames, 300, format, pinned);
      fill_stripes(in, 77 + frames, 1);
      for (int m : {0, 3, 6}) {
        const ChainConfig config = make_config(kMethods[m], 5, true, format, 52);
        ASSERT_NO_FATAL_FAILURE(check_chain(in, config, describe(in, kMethods[m], config, true), frames != 300));
      }
    }
}

// The default chain with the neighbour check on, production shape, 1 to 300
// frames, 8 and 16 bits, on frames that give it work (random noise columns
// beside the stripes), with a calibration-free and an odd-width batch.
TEST_F(CudaFused, NeighbourCheckMatchesCpuOnTheDefaultChain) {
  const HostAllocator pinned = host_allocator_for(Backend::Cuda);
  std::uint64_t seed = 31;
  for (PixelFormat format : kFormats)
    for (auto [width, frames] : {std::array{2048, 1}, std::array{2048, 17}, std::array{2048, 300}, std::array{1937, 5}}) {
      Batch in = make_batch(width, 52, frames, 300, format, pinned);
      fill(in, seed % 2 == 0, seed);
      ++seed;
      for (int columns : {1, 4, 16}) {
        ChainConfig config;  // the default: adaptive, centroid
        config.neighbour_check.columns = columns;
        config.neighbour_check.step = columns == 4 ? 0.5 : 2.0;
        ASSERT_NO_FATAL_FAILURE(
            check_chain(in, config, std::to_string(width) + "x52 " + to_string(format) + " frames " + std::to_string(frames) +
                                        " neighbour_columns " + std::to_string(columns), frames < 300));
      }
    }
}

// The blur along the columns only (the default) and the 2-D blur
// (blur_across), default chain, production shape and an odd width, 1 to 300
// frames, 8 and 16 bits, every blur size, with occluded gaps beside stripes.
TEST_F(CudaFused, BlurAlongColumnsMatchesCpuOnTheDefaultChain) {
  const HostAllocator pinned = host_allocator_for(Backend::Cuda);
  std::uint64_t seed = 77;
  for (PixelFormat format : kFormats)
    for (auto [width, frames] : {std::array{2048, 1}, std::array{2048, 5}, std::array{1937, 17}, std::array{2048, 300}, std::array{1937, 300}}) {
      Batch in = make_batch(width, 52, frames, 300, format, pinned);
      fill_stripes(in, seed++, 1 + frames % 2);
      for (int blur : {3, 5, 15})
        for (bool across : {false, true}) {
          ChainConfig config;  // the default: adaptive, centroid
          config.blur_size = blur;
          config.blur_across = across;
          ASSERT_NO_FATAL_FAILURE(check_chain(in, config,
                                              std::to_string(width) + "x52 " + to_string(format) + " frames " + std::to_string(frames) +
                                                  " blur " + std::to_string(blur) + (across ? " 2-D" : " along columns"),
                                              frames < 300 || blur == 5));
        }
    }
}

// Clipped cores (the adaptive centre from the unblurred plateau's edges):
// the synthetic scanner's saturated stripe with a one-sided glow, 8 and 16
// bits, the production width and an odd one, 1 to 300 frames, both blurs.
TEST_F(CudaFused, ClippedCoresMatchCpu) {
  const HostAllocator pinned = host_allocator_for(Backend::Cuda);
  for (PixelFormat format : kFormats)
    for (auto [width, frames] : {std::array{2048, 1}, std::array{1937, 5}, std::array{2048, 17}, std::array{1937, 300}}) {
      SyntheticConfig sc;
      sc.width = width;
      sc.format = format;
      sc.peak = 600.0;
      sc.glow = 0.2;
      sc.glow_width = 6.0;
      sc.seed = static_cast<std::uint64_t>(width + frames);
      SyntheticScanner scan(sc);
      BatchLayout l = scan.frame_layout();
      l.frames = 300;
      Batch in(l, pinned);
      in.frames = 0;
      scan.fill(in);
      in.frames = frames;
      for (bool across : {false, true}) {
        ChainConfig config;  // the default: adaptive, centroid
        config.blur_across = across;
        ASSERT_NO_FATAL_FAILURE(check_chain(in, config,
                                            std::to_string(width) + "x52 " + to_string(format) + " frames " + std::to_string(frames) +
                                                (across ? " 2-D blur" : " blur along columns"),
                                            frames < 300));
      }
    }
}

TEST_F(CudaFused, TallFramesFallBackToPerStageKernels) {
#if STRIPELINE_HAVE_CUDA
  // 16-bit frames of 1024 rows blurred need ~290 KB of shared memory per block,
  // the others more: beyond what any GPU offers a block.
  struct Tall {
    PixelFormat format;
    int height, blur;
  };
  for (const Tall& t : {Tall{PixelFormat::Mono16, 1024, 5}, Tall{PixelFormat::Mono16, 2048, 0}, Tall{PixelFormat::Mono8, 4096, 0},
                        Tall{PixelFormat::Mono8, 4096, 15}}) {
    const ChainConfig config = make_config(kMethods[0], t.blur, true, t.format, t.height);
    Batch in = make_batch(176, t.height, 2, 3, t.format);
    fill_stripes(in, 3, 2);
    auto p = cuda::make_cuda_processor_ex(in.layout, config);
    EXPECT_FALSE(p->fused()) << t.height;
    ASSERT_NO_FATAL_FAILURE(check_chain(in, config, describe(in, kMethods[0], config, true), false));
    ASSERT_NO_FATAL_FAILURE(check_chain(in, make_config(kMethods[6], t.blur, false, t.format, t.height), "local-max/all", false));
  }
  // And the usual frame height does run fused.
  Batch small = make_batch(2048, 52, 1, 1, PixelFormat::Mono8);
  EXPECT_TRUE(cuda::make_cuda_processor_ex(small.layout, make_config(kMethods[0], 5, true, PixelFormat::Mono8, 52))->fused());
#endif
}

TEST_F(CudaFused, RandomFramesSaturateCounts) {
  // 'all' on bright random frames finds more than 255 points per column: count saturates at 255.
  for (PixelFormat format : kFormats) {
    Batch in = make_batch(77, 600, 2, 2, format);
    fill_random(in, 42);
    ChainConfig config = make_config(kMethods[7], 0, false, format, 600);
    config.column.threshold = 1;
    ASSERT_NO_FATAL_FAILURE(check_chain(in, config, "all, threshold 1", true));
    config = make_config(kMethods[6], 3, true, format, 600);
    config.max_peaks = 64;
    config.column.neighbours = 1;
    ASSERT_NO_FATAL_FAILURE(check_chain(in, config, "local-max/all, 64 slots", true));
  }
}

// ===========================================================================
// The CudaProcessor interface

TEST_F(CudaProcessor, SubmitWaitComputeOnlyAndReuse) {
#if STRIPELINE_HAVE_CUDA
  const HostAllocator pinned = host_allocator_for(Backend::Cuda);
  const ChainConfig config = make_config(kMethods[0], 5, true, PixelFormat::Mono8, 52);
  Batch in = make_batch(1936, 52, 40, 40, PixelFormat::Mono8, pinned);
  auto cpu = make_processor(Backend::Cpu, in.layout, config);
  auto gpu = cuda::make_cuda_processor_ex(in.layout, config);
  EXPECT_EQ(gpu->backend(), Backend::Cuda);
  EXPECT_NE(gpu->stream(), nullptr);
  EXPECT_TRUE(gpu->fused());
  gpu->wait();  // nothing pending: returns at once
  // Several batches through one processor, of varying fill, each compared.
  for (int round = 0; round < 4; ++round) {
    in.frames = std::array{40, 7, 1, 23}[round];
    in.sequence = 100 + round;
    fill_stripes(in, 300 + round, 1 + round % 2);
    ProfileBatch expected = make_profiles(in, 1), got = make_profiles(in, 1, pinned);
    cpu->process(in, expected);
    gpu->submit(in, got);
    EXPECT_THROW(gpu->submit(in, got), RuntimeFailure) << "one batch at a time";
    gpu->wait();
    ASSERT_TRUE(same_profiles(expected, got)) << "round " << round;
    EXPECT_GT(gpu->last_compute_ms(), 0.0);
  }
  const double ms = gpu->compute_only(40);
  EXPECT_GT(ms, 0.0);
  EXPECT_THROW(gpu->compute_only(41), RuntimeFailure);
  // process() after compute_only: still right.
  ProfileBatch expected = make_profiles(in, 1), got = make_profiles(in, 1);
  cpu->process(in, expected);
  gpu->process(in, got);
  ASSERT_TRUE(same_profiles(expected, got));
  // An empty batch: header only.
  in.frames = 0;
  gpu->process(in, got);
  EXPECT_EQ(got.frames, 0);
  // Wrong shapes are refused.
  ProfileBatch wrong(1935, 40, 1, &allocate_host);
  in.frames = 3;
  EXPECT_THROW(gpu->process(in, wrong), RuntimeFailure);
  Batch other = make_batch(1936, 53, 1, 40, PixelFormat::Mono8);
  EXPECT_THROW(gpu->process(other, got), RuntimeFailure);
#endif
}

// The low-latency mode's CUDA graphs (one per slot, batch size and timing,
// replayed with new pixels each time) give the CPU's bits, as the
// call-by-call path does, with the line model on (writing the pinned host
// profiles itself); the kernel time is the last timed batch's.
TEST_F(CudaProcessor, LowLatencyBatchesReplayedAsGraphsMatchCpu) {
#if STRIPELINE_HAVE_CUDA
  const HostAllocator pinned = host_allocator_for(Backend::Cuda);
  ChainConfig config;  // the default chain (adaptive), with the line model
  config.line_model.enabled = true;
  config.persistent_engine = false;  // frames alone by the graphs too (the engine's own tests: LiveEngineCuda.*)
  Batch in = make_batch(1936, 52, 1, 16, PixelFormat::Mono8, pinned);
  auto cpu = make_processor(Backend::Cpu, in.layout, config);
  cuda::CudaProcessorOptions every_third;
  every_third.time_every = 3;  // rounds 0, 3 and 6 timed: a graph with the timing events and one without
  every_third.time_interval_ms = 0;
  auto graphs = cuda::make_cuda_processor_ex(in.layout, config, every_third);
  ChainConfig calls = config;
  calls.cuda_graphs = false;
  auto direct = cuda::make_cuda_processor_ex(in.layout, calls);
  const int slots = output_slots(config, in.layout.frame_height);
  ProfileBatch got = make_profiles(in, slots, pinned), got_direct = make_profiles(in, slots, pinned);
  const std::array frames{1, 1, 3, 1, 16, 3, 1};
  for (std::size_t round = 0; round < frames.size(); ++round) {
    in.frames = frames[round];
    in.sequence = 200 + static_cast<std::uint64_t>(round);
    fill_stripes(in, 500 + static_cast<int>(round), 1 + static_cast<int>(round % 2));
    ProfileBatch expected = make_profiles(in, slots);
    cpu->process(in, expected);
    got.poison();
    got_direct.poison();
    graphs->process(in, got);
    direct->process(in, got_direct);
    ASSERT_TRUE(same_profiles(expected, got)) << "graph replay, round " << round << ", " << in.frames << " frames";
    ASSERT_TRUE(same_profiles(expected, got_direct)) << "call by call, round " << round;
    EXPECT_GT(graphs->last_compute_ms(), 0.0) << "the last timed batch's, round " << round;
  }
  EXPECT_EQ(graphs->graphs(), 4) << "one graph per batch size seen (1, 3, 16 frames) for the one slot, and 1 frame both timed and not";
  EXPECT_EQ(direct->graphs(), 0);
#endif
}

TEST_F(CudaProcessor, AbsurdAllocationThrowsCudaError) {
  // Accepted by validate_chain (every dimension at its maximum) but 16 TiB of
  // pixels: cudaMalloc must fail and say so, not crash.
  const BatchLayout huge{kMaxWidth, kMaxFrameHeight, kMaxBatchFrames, PixelFormat::Mono8};
  const ChainConfig config = make_config(kMethods[0], 5, true, PixelFormat::Mono8, kMaxFrameHeight);
  ASSERT_NO_THROW(validate_chain(config, huge));
  try {
    auto p = make_processor(Backend::Cuda, huge, config);
    FAIL() << "expected a CudaError";
  } catch (const CudaError& e) {
    EXPECT_NE(std::string(e.what()).find("cudaMalloc"), std::string::npos) << e.what();
  }
  EXPECT_THROW(make_extract_stage(Backend::Cuda, huge, validate_chain(config, huge)), RuntimeFailure);
  // The failure is not sticky: the device still works.
  Batch in = make_batch(64, 8, 2, 2, PixelFormat::Mono8);
  fill_stripes(in, 1, 1);
  ASSERT_NO_FATAL_FAILURE(check_chain(in, make_config(kMethods[0], 3, true, PixelFormat::Mono8, 8), "after the failure", true));
}

// ===========================================================================
// Timing of the production shape (informative: printed, not asserted)

TEST_F(CudaBench, ProductionShapeKernelTime) {
#if STRIPELINE_HAVE_CUDA
  const HostAllocator pinned = host_allocator_for(Backend::Cuda);
  for (PixelFormat format : kFormats) {
    Batch in = make_batch(2048, 52, 300, 300, format, pinned);
    fill_stripes(in, 11, 1);
    for (int m : {0, 1, 3, 6, 7})
      for (int blur : {0, 5, 15}) {
        const ChainConfig config = make_config(kMethods[m], blur, true, format, 52);
        auto gpu = cuda::make_cuda_processor_ex(in.layout, config);
        ProfileBatch out = make_profiles(in, output_slots(config, 52), pinned);
        gpu->process(in, out);  // warm-up, and puts the batch on the device
        std::vector<double> kernel, total;
        for (int r = 0; r < 21; ++r) kernel.push_back(gpu->compute_only(300));
        for (int r = 0; r < 5; ++r) {
          const auto t0 = std::chrono::steady_clock::now();
          gpu->process(in, out);
          total.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        }
        std::sort(kernel.begin(), kernel.end());
        std::sort(total.begin(), total.end());
        std::cout << "[ BENCH    ] 300 x 2048x52 " << to_string(format) << " " << kMethods[m].name << " blur " << blur
                  << (gpu->fused() ? " fused" : " per-stage") << ": kernel median " << kernel[kernel.size() / 2] << " ms (min "
                  << kernel.front() << "), process() with copies median " << total[total.size() / 2] << " ms\n";
        if (m == 0 && blur == 5) {  // the per-stage path, for comparison
          cuda::CudaProcessorOptions o;
          o.allow_fused = false;
          auto per_stage = cuda::make_cuda_processor_ex(in.layout, config, o);
          per_stage->process(in, out);
          std::vector<double> t;
          for (int r = 0; r < 11; ++r) t.push_back(per_stage->compute_only(300));
          std::sort(t.begin(), t.end());
          std::cout << "[ BENCH    ]   same, per-stage kernels (blur + extract): kernel median " << t[t.size() / 2] << " ms\n";
        }
      }
  }
#endif
}
