// The memory budget (pipeline/memory_budget.h, docs/memory.md): sizes,
// the batch geometry derived from a budget, its errors, the slots a
// multi-peak method keeps (and the overflow beyond them), the pool's own
// count against the plan, and a decompression bomb replayed under 1 GiB.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <fcntl.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "core/errors.h"
#include "gpu_test.h"
#include "pipeline/buffer_pool.h"
#include "pipeline/file_sinks.h"
#include "stages/heightmap_filters.h"
#include "pipeline/memory_budget.h"
#include "pipeline/pipeline.h"
#include "crafted_png.h"
#include "test_helpers.h"

#if STRIPELINE_HAVE_CUDA
#include "core/cuda/runtime.h"
#include "stages/cuda/cuda_stages.h"
#endif

namespace stripeline {
namespace {

constexpr std::uint64_t MiB = std::uint64_t{1} << 20, GiB = std::uint64_t{1} << 30;

GeometryRequest request(int width, int frame_height, PixelFormat format, ColumnMethod method, std::uint64_t host_budget) {
  GeometryRequest r;
  r.frame = BatchLayout{width, frame_height, 0, format};
  r.chain.column.method = method;
  r.backend = Backend::Cpu;
  r.budget.host = host_budget;
  return r;
}

// The ConfigError's message, or "" when none was thrown.
template <class F>
std::string config_error(F&& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return {};
}

TEST(MemoryBudget, SizesReadWithBinaryUnits) {
  EXPECT_EQ(parse_memory_size("auto", "memory_budget"), 0u);
  EXPECT_EQ(parse_memory_size("512M", "memory_budget"), 512 * MiB);
  EXPECT_EQ(parse_memory_size("1.5GiB", "memory_budget"), 3 * GiB / 2);
  EXPECT_EQ(parse_memory_size("64 MiB", "memory_budget"), 64 * MiB);
  EXPECT_EQ(parse_memory_size("2g", "memory_budget"), 2 * GiB);
  EXPECT_EQ(parse_memory_size("1048576", "memory_budget"), MiB);
  EXPECT_EQ(parse_memory_size("4096B", "memory_budget"), 4096u);
  for (const char* bad : {"", "M", "12X", "-1", "1.2.3G", "0", "1e30", "5 MBs"}) {
    const std::string e = config_error([&] { parse_memory_size(bad, "memory_budget"); });
    EXPECT_NE(e.find("memory_budget = \"" + std::string(bad) + "\""), std::string::npos) << bad << ": " << e;
  }
  EXPECT_EQ(memory_size_text(0), "auto");
  EXPECT_EQ(memory_size_text(512 * MiB), "512M");
  EXPECT_EQ(memory_size_text(3 * GiB / 2), "1536M");
  EXPECT_EQ(memory_size_text(1000), "1000");
  EXPECT_EQ(parse_memory_size(memory_size_text(7 * GiB), "k"), 7 * GiB);
}

TEST(MemoryBudget, TheDefaultsComeFromTheMachine) {
  EXPECT_GT(machine_memory_bytes(), 64 * MiB);
  EXPECT_EQ(default_host_budget(), machine_memory_bytes() / kHostBudgetDivisor);
  EXPECT_EQ(default_device_budget(Backend::Cpu), 0u);
}

TEST(MemoryBudget, TheProductionShapeKeepsItsBatch) {
  GeometryRequest r = request(2048, 52, PixelFormat::Mono8, ColumnMethod::Adaptive, 1 * GiB);
  const BatchGeometry g = plan_batch_geometry(r);
  EXPECT_EQ(g.frames, kDefaultBatchFrames);
  EXPECT_EQ(g.buffers, 4);
  EXPECT_EQ(g.lanes, 3);
  EXPECT_EQ(g.slots, 1);
  EXPECT_FALSE(g.frames_from_budget);
  EXPECT_EQ(g.host_bytes, memory_need(r, g.frames, g.slots, g.buffers, g.lanes).host);
  EXPECT_LE(g.host_bytes, r.budget.host);
  // 4 batches of 2048 x 52 x 300 pixels at least
  EXPECT_GE(g.host_bytes, 4ull * 2048 * 52 * 300);
}

TEST(MemoryBudget, FramesShrinkToTheLargestCountThatFits) {
  for (const ColumnMethod m : {ColumnMethod::Adaptive, ColumnMethod::All, ColumnMethod::LocalMax}) {
    for (const std::uint64_t budget : {1 * GiB, 4 * GiB}) {
      GeometryRequest r = request(65536, 128, PixelFormat::Mono16, m, budget);
      r.chain.column.selection = SpotSelection::All;
      const BatchGeometry g = plan_batch_geometry(r);
      ASSERT_GE(g.frames, 1);
      EXPECT_LT(g.frames, kDefaultBatchFrames) << to_string(m) << " " << budget;
      EXPECT_TRUE(g.frames_from_budget);
      EXPECT_EQ(g.slots, g.requested_slots) << "one frame fits: the slots stay";
      EXPECT_LE(g.host_bytes, budget);
      EXPECT_GT(memory_need(r, g.frames + 1, g.slots, g.buffers, g.lanes).host, budget) << "one more frame would fit: not the largest";
    }
  }
}

TEST(MemoryBudget, AFileCapsTheFramesAndTheBuffers) {
  GeometryRequest r = request(65536, 16, PixelFormat::Mono16, ColumnMethod::All, 6 * GiB);
  r.source_frames = 8;  // the decompression bomb: 65536 x 128 rows claimed, 16-row frames
  BatchGeometry g = plan_batch_geometry(r);
  EXPECT_EQ(g.frames, 8);
  EXPECT_EQ(g.buffers, 1);
  EXPECT_EQ(g.lanes, 1);
  EXPECT_LT(g.host_bytes, 128 * MiB);
  r.source_frames = 700;
  r.chain.column.method = ColumnMethod::Adaptive;  // one slot: 300 frames fit 6 GiB
  g = plan_batch_geometry(r);
  EXPECT_EQ(g.frames, kDefaultBatchFrames);
  EXPECT_EQ(g.buffers, 3);  // 3 batches hold 700 frames
  r.batch_frames = 1000;    // explicit, beyond the file: the file's frames
  r.source_frames = 9;
  r.even_frames = true;     // alternate: pairs
  g = plan_batch_geometry(r);
  EXPECT_EQ(g.frames, 10);
}

TEST(MemoryBudget, AlternateFramesStayEven) {
  GeometryRequest r = request(65536, 128, PixelFormat::Mono16, ColumnMethod::Adaptive, 200 * MiB);
  r.chain.line_model.enabled = false;  // its candidates would not fit two frames in 200 MiB
  r.even_frames = true;
  const BatchGeometry g = plan_batch_geometry(r);
  EXPECT_EQ(g.frames % 2, 0) << g.frames;
  EXPECT_GE(g.frames, 2);
  EXPECT_LE(g.host_bytes, r.budget.host);
}

TEST(MemoryBudget, AnExplicitBatchThatDoesNotFitIsRefusedNamingBothKeys) {
  GeometryRequest r = request(65536, 128, PixelFormat::Mono16, ColumnMethod::All, 1 * GiB);
  r.batch_frames = 300;
  const std::string e = config_error([&] { plan_batch_geometry(r); });
  EXPECT_NE(e.find("batch_frames = 300 does not fit memory_budget = 1.0 GiB"), std::string::npos) << e;
  EXPECT_NE(e.find("frames fit"), std::string::npos) << e;
  EXPECT_NE(e.find("65536x128 Mono16"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << "one line: " << e;
  r.batch_frames = plan_batch_geometry(request(65536, 128, PixelFormat::Mono16, ColumnMethod::All, 1 * GiB)).frames;
  EXPECT_EQ(plan_batch_geometry(r).frames, r.batch_frames) << "the largest automatic count is accepted when given";
}

TEST(MemoryBudget, ABudgetTooSmallForOneFrameIsOneLine) {
  const GeometryRequest r = request(65536, 128, PixelFormat::Mono16, ColumnMethod::Adaptive, 1 * MiB);
  const std::string e = config_error([&] { plan_batch_geometry(r); });
  EXPECT_NE(e.find("memory_budget = 1.0 MiB is too small for one frame"), std::string::npos) << e;
  EXPECT_NE(e.find("of host memory"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
}

TEST(MemoryBudget, AMultiPeakMethodKeepsTheSlotsThatFit) {
  // method all on 4096-row frames: 4096 slots per column would take 2.7 GB a frame
  GeometryRequest r = request(65536, 4096, PixelFormat::Mono8, ColumnMethod::All, 2 * GiB);
  r.buffers = 2;
  const BatchGeometry g = plan_batch_geometry(r);
  EXPECT_EQ(g.frames, 1);
  EXPECT_EQ(g.requested_slots, 4096);
  EXPECT_GE(g.slots, 1);
  EXPECT_LT(g.slots, 4096);
  EXPECT_LE(g.host_bytes, r.budget.host);
  EXPECT_GT(memory_need(r, 1, g.slots + 1, g.buffers, g.lanes).host, r.budget.host);
  EXPECT_EQ(output_slots(with_output_slots(r.chain, g.slots), 4096), g.slots);
  // selection all: max_peaks is what is cut
  ChainConfig peaks;
  peaks.column.method = ColumnMethod::LocalMax;
  peaks.column.selection = SpotSelection::All;
  peaks.max_peaks = 64;
  EXPECT_EQ(with_output_slots(peaks, 5).max_peaks, 5);
  // single-slot methods are never cut: too small is too small
  r.chain.column.method = ColumnMethod::Cog;
  r.budget.host = 64 * MiB;
  EXPECT_NE(config_error([&] { plan_batch_geometry(r); }).find("too small for one frame"), std::string::npos);
}

TEST(MemoryBudget, TheLineModelsCandidatesCount) {
  GeometryRequest off = request(16384, 64, PixelFormat::Mono8, ColumnMethod::Adaptive, 256 * MiB);
  off.chain.line_model.enabled = false;
  GeometryRequest on = off;
  on.chain.line_model.enabled = true;
  on.chain.line_model.candidates = 8;
  const MemoryNeed a = memory_need(off, 100, 1, 4, 3), b = memory_need(on, 100, 1, 4, 3);
  // three lanes of 8 candidates x 100 frames x 16384 columns, 10 bytes each at least
  EXPECT_GE(b.host - a.host, 3ull * 8 * 100 * 16384 * 10);
  EXPECT_LT(plan_batch_geometry(on).frames, plan_batch_geometry(off).frames);
}

TEST(MemoryBudget, TheCudaGeometryHonoursTheDeviceBudget) {
  // Arithmetic only (an explicit device budget): runs without a GPU.
  GeometryRequest r = request(16384, 128, PixelFormat::Mono16, ColumnMethod::Adaptive, 8 * GiB);
  r.chain.line_model.enabled = false;  // the lane's memory below is that of the chain without the model's candidates
  r.backend = Backend::Cuda;
  r.budget.device = 512 * MiB;
  const BatchGeometry g = plan_batch_geometry(r);
  EXPECT_EQ(g.device_budget, 512 * MiB);
  EXPECT_LE(g.device_bytes, 512 * MiB);
  EXPECT_GT(g.device_bytes, 0u);
  EXPECT_LT(g.frames, kDefaultBatchFrames) << "the device, not the host, limits it";
  EXPECT_GT(memory_need(r, g.frames + 1, g.slots, g.buffers, g.lanes).device, 512 * MiB);
  // per lane: the pixels twice (input, per-stage scratch) and the profiles
  BatchLayout l{16384, 128, g.frames, PixelFormat::Mono16};
  EXPECT_EQ(lane_memory(Backend::Cuda, l, r.chain).device, 2 * l.bytes() + ProfileLayout::make(16384, g.frames, 1).bytes);
  r.budget.device = 1 * MiB;
  const std::string e = config_error([&] { plan_batch_geometry(r); });
  EXPECT_NE(e.find("device_memory_budget = 1.0 MiB is too small for one frame"), std::string::npos) << e;
}

TEST(MemoryBudget, ThePoolTakesNoMoreThanThePlan) {
  GeometryRequest r = request(4096, 64, PixelFormat::Mono16, ColumnMethod::All, 64 * MiB);
  const BatchGeometry g = plan_batch_geometry(r);
  BatchLayout l{4096, 64, g.frames, PixelFormat::Mono16};
  BufferPool pool(l, g.slots, g.buffers, &allocate_host);
  EXPECT_EQ(pool.size(), g.buffers);
  EXPECT_LE(pool.bytes(), g.host_bytes);
  EXPECT_GE(pool.bytes(), g.host_bytes / 2) << "the plan counts what the pool holds, not ten times more";
}

// Frames whose every pixel is `value`: with method all, every row of every
// column is a point.
class UniformSource final : public FrameSource {
 public:
  UniformSource(int width, int height, int frames, std::uint8_t value) : layout_{width, height, 0, PixelFormat::Mono8}, left_(frames), value_(value) {}
  BatchLayout frame_layout() const override { return layout_; }
  std::optional<std::uint64_t> total_frames() const override { return static_cast<std::uint64_t>(total_); }
  bool fill(Batch& b) override {
    b.frames = std::min(left_, b.layout.frames);
    std::memset(b.pixels.data(), value_, b.filled_bytes());
    for (int i = 0; i < b.frames; ++i) b.meta[i] = FrameMeta{};
    left_ -= b.frames;
    return b.frames > 0;
  }
  std::string describe() const override { return "uniform"; }

 private:
  BatchLayout layout_;
  int left_, total_ = left_;
  std::uint8_t value_;
};

class SlotSink final : public ProfileSink {
 public:
  void begin(const ScanInfo& info) override { slots = info.profile_slots; }
  void consume(const ProfileSpan& p) override {
    span_slots = p.slots;
    for (int f = 0; f < p.frames; ++f)
      for (int x = 0; x < p.width; ++x) max_count = std::max<int>(max_count, p.count[static_cast<std::size_t>(f) * p.width + x]);
  }
  void finish() override {}
  int slots = 0, span_slots = 0, max_count = 0;
};

TEST(MemoryBudget, PointsBeyondTheBudgetedSlotsAreCountedNotWritten) {
  constexpr int kWidth = 64, kHeight = 16, kFrames = 10;
  PipelineOptions o;
  o.backend = Backend::Cpu;
  o.buffers = 2;
  o.chain.blur_size = 0;
  o.chain.column.method = ColumnMethod::All;
  o.chain.column.threshold = 40;
  // The budget of one frame with 3 slots: the 16 the method asks for do not fit.
  GeometryRequest r = request(kWidth, kHeight, PixelFormat::Mono8, ColumnMethod::All, 0);
  r.chain = o.chain;
  r.buffers = o.buffers;
  r.source_frames = kFrames;
  o.memory.host = memory_need(r, 1, 3, 2, 1).host;
  UniformSource src(kWidth, kHeight, kFrames, 200);
  SlotSink sink;
  const PipelineStats s = Pipeline(o).run(src, {&sink});
  EXPECT_EQ(s.geometry.frames, 1);
  EXPECT_EQ(s.geometry.requested_slots, kHeight);
  ASSERT_EQ(s.geometry.slots, 3);
  EXPECT_EQ(sink.slots, 3);
  EXPECT_EQ(sink.span_slots, 3);
  EXPECT_EQ(sink.max_count, kHeight) << "the count still says how many were found";
  EXPECT_EQ(s.points, 3ull * kWidth * kFrames);
  EXPECT_EQ(s.overflow, static_cast<std::uint64_t>(kHeight - 3) * kWidth * kFrames);
  EXPECT_LE(s.geometry.host_bytes, o.memory.host);
}

TEST(MemoryBudget, APipelineRefusesABudgetTooSmallBeforeAnySinkBegins) {
  PipelineOptions o;
  o.backend = Backend::Cpu;
  o.memory.host = 4096;
  UniformSource src(640, 64, 10, 200);
  SlotSink sink;
  const std::string e = config_error([&] { Pipeline(o).run(src, {&sink}); });
  EXPECT_NE(e.find("too small for one frame"), std::string::npos) << e;
  EXPECT_EQ(sink.slots, 0) << "no sink began";
}

// ---------------------------------------------------------------------------
// The height-map filters on large maps: their memory counted, a map the host
// budget cannot filter refused before any frame is read.

TEST(MemoryBudget, HeightMapFilterMemoryIsCounted) {
  const std::vector<FilterStep> steps = parse_filter_step_list({"median 3", "dilate-h 9"});
  const std::size_t px = 4096ull * 1000;
  EXPECT_GE(heightmap_filter_memory(Backend::Cpu, 4096, 1000, steps).host, 4 * px);
  EXPECT_EQ(heightmap_filter_memory(Backend::Cpu, 4096, 1000, steps).device, 0u);
  EXPECT_GE(heightmap_filter_memory(Backend::Cuda, 4096, 1000, steps).device, 7 * px);
  EXPECT_EQ(heightmap_filter_memory(Backend::Cuda, 4096, 1000, steps).host, 0u);
}

TEST(MemoryBudget, HeightMapFiltersBeyondTheBudgetAreRefusedBeforeAnyFrame) {
  test::TempDir dir;
  ScanInfo info;
  info.layout = BatchLayout{65536, 16, 10, PixelFormat::Mono8};
  info.host_budget = 64 * MiB;
  HeightMapSink big(dir / "h.png", "", 6, 100000);  // 65536 x 100000 codes: 12 GiB with the filters
  big.set_filters({"median 3"}, Backend::Cpu);
  const std::string e = config_error([&] { big.begin(info); });
  EXPECT_NE(e.find("height map filters: a 65536x100000 map needs"), std::string::npos) << e;
  EXPECT_NE(e.find("memory_budget is 64.0 MiB"), std::string::npos) << e;
  HeightMapSink small(dir / "s.png", "", 6, 100);
  small.set_filters({"median 3"}, Backend::Cpu);
  EXPECT_NO_THROW(small.begin(info));
  info.host_budget = 0;  // outside a pipeline: not checked
  EXPECT_NO_THROW(big.begin(info));
}

// ---------------------------------------------------------------------------
// The decompression bomb of issue 29: a PNG of about 20 KB whose header
// claims 65,536 x 128 16-bit pixels (Deflate expands that far), replayed
// with 16-row frames, every method, PLY and height map: under 1 GiB.

// 16-bit grey, width x height, all zero but a bright row every 16 (a stripe
// per frame); `corrupt`: bytes of the zlib stream near its end garbled (the
// chunk's CRC matches them: the data is what is corrupt).
std::string bomb_png(std::uint32_t width, std::uint32_t height, bool corrupt) {
  std::string raw;
  raw.reserve((width * 2 + 1) * static_cast<std::size_t>(height));
  for (std::uint32_t y = 0; y < height; ++y) {
    raw += '\0';  // filter: none
    raw.append(width * 2, y % 16 == 8 ? '\x80' : '\0');
  }
  uLongf n = compressBound(static_cast<uLong>(raw.size()));
  std::string z(n, '\0');
  EXPECT_EQ(::compress2(reinterpret_cast<Bytef*>(z.data()), &n, reinterpret_cast<const Bytef*>(raw.data()), static_cast<uLong>(raw.size()), 9), Z_OK);
  z.resize(n);
  if (corrupt)
    for (std::size_t i = n * 9 / 10; i < n * 9 / 10 + 64 && i < n; ++i) z[i] = static_cast<char>(z[i] ^ 0x5a);
  return test::grey16_png(width, height, z);
}

struct Measured {
  int exit_code = -1;
  long max_rss_kib = 0;
  std::string output;
};

// The stripeline binary run as a child (no shell between): its exit code and
// its peak resident memory (wait4's rusage). An upper bound: ru_maxrss keeps
// the high-water mark across exec, so the pages this test process shared
// with the child at fork count too.
Measured run_measured(const std::vector<std::string>& args, const std::filesystem::path& log) {
  Measured m;
  std::vector<std::string> argv_s = {test::binary_path()};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) ::dup2(fd, 1), ::dup2(fd, 2);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  int status = 0;
  rusage usage{};
  if (pid < 0 || ::wait4(pid, &status, 0, &usage) != pid) return m;
  m.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  m.max_rss_kib = usage.ru_maxrss;
  std::ifstream in(log);
  m.output.assign(std::istreambuf_iterator<char>(in), {});
  return m;
}

TEST(MemoryBudget, TheDecompressionBombStaysUnderOneGiBWithEveryMethod) {
  test::TempDir dir;
  const std::string cut = bomb_png(65536, 128, true), whole = bomb_png(65536, 128, false);
  ASSERT_LT(cut.size(), 40000u);
  ASSERT_LT(whole.size(), 40000u);
  {
    std::ofstream(dir / "bomb.png", std::ios::binary) << cut;
    std::ofstream(dir / "whole.png", std::ios::binary) << whole;
  }
  const std::vector<std::vector<std::string>> methods = {
      {"--method", "adaptive"}, {"--method", "cog"},       {"--method", "max"},
      {"--method", "window"},   {"--method", "local-max", "--selection", "all"}, {"--method", "all"},
      {"--method", "adaptive", "--selection", "all"}};
  for (const char* file : {"bomb.png", "whole.png"}) {
    for (const auto& method : methods) {
      std::vector<std::string> args = {"replay", (dir / file).string(), "-H", "16", "--backend", "cpu", "-q",
                                       "--ply", (dir / "o.ply").string(), "--heightmap", (dir / "h.png").string()};
      args.insert(args.end(), method.begin(), method.end());
      const Measured m = run_measured(args, dir / "log.txt");
      const std::string what = std::string(file) + " " + method[1] + (method.size() > 2 ? " selection all" : "");
      if (std::string(file) == "bomb.png") {
        EXPECT_EQ(m.exit_code, 2) << what << "\n" << m.output;
        EXPECT_NE(m.output.find("PNG"), std::string::npos) << what << ": the data is reported\n" << m.output;
        EXPECT_FALSE(std::filesystem::exists(dir / "o.ply")) << what;
      } else {
        EXPECT_EQ(m.exit_code, 0) << what << "\n" << m.output;
        std::filesystem::remove(dir / "o.ply");
        std::filesystem::remove(dir / "h.png");
      }
      EXPECT_GT(m.max_rss_kib, 0) << what;
      EXPECT_LT(m.max_rss_kib, 1024 * 1024) << what << ": peak RSS " << m.max_rss_kib / 1024 << " MiB";
    }
  }
}

TEST(MemoryBudget, TheCommandLineRefusesABudgetTooSmallWithExitTwo) {
  test::TempDir dir;
  std::ofstream(dir / "whole.png", std::ios::binary) << bomb_png(4096, 64, false);
  std::string out;
  EXPECT_EQ(test::run_cli("replay " + (dir / "whole.png").string() + " -H 16 --backend cpu -q --memory-budget 64K --heightmap " +
                              (dir / "h.png").string(),
                          &out),
            2)
      << out;
  EXPECT_NE(out.find("memory_budget = 64.0 KiB is too small for one frame"), std::string::npos) << out;
  EXPECT_FALSE(std::filesystem::exists(dir / "h.png"));
  EXPECT_EQ(test::run_cli("replay " + (dir / "whole.png").string() + " -H 16 --backend cpu -q --memory-budget lots", &out), 2) << out;
  EXPECT_NE(out.find("is not a memory size"), std::string::npos) << out;
  EXPECT_EQ(test::run_cli("replay " + (dir / "whole.png").string() + " -H 16 --backend cpu -q --memory-budget 64M --batch-frames 4 --summary " +
                              (dir / "s.json").string(),
                          &out),
            0)
      << out;
  std::ifstream in(dir / "s.json");
  const std::string summary((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(summary.find("\"batch_frames\": 4"), std::string::npos) << summary;
  EXPECT_NE(summary.find("\"host_budget_bytes\": 67108864"), std::string::npos) << summary;
}

// ---------------------------------------------------------------------------
// CUDA: what a lane allocates is what lane_memory() says (at most, within the
// allocator's granularity), and a run keeps to the device budget.

class MemoryBudgetCuda : public test::CudaTest {};

TEST_F(MemoryBudgetCuda, ALaneAllocatesNoMoreThanLaneMemorySays) {
#if STRIPELINE_HAVE_CUDA
  for (const ColumnMethod m : {ColumnMethod::Adaptive, ColumnMethod::All}) {
    for (const bool line : {false, true}) {
      if (line && m != ColumnMethod::Adaptive) continue;
      ChainConfig c;
      c.column.method = m;
      c.line_model.enabled = line;
      const BatchLayout l{4099, 52, 37, PixelFormat::Mono16};
      const std::size_t planned = lane_memory(Backend::Cuda, l, c).device;
      auto warm = cuda::make_cuda_processor_ex(l, c);  // the context and module loaded
      warm.reset();
      const std::size_t before = cuda::device_free_bytes();
      auto p = cuda::make_cuda_processor_ex(l, c);
      const std::size_t after = cuda::device_free_bytes();
      EXPECT_LE(before - after, planned + 8 * MiB) << to_string(m) << (line ? " line model" : "");
      EXPECT_GE(before - after + 8 * MiB, planned / 2) << "lane_memory counts what the lane holds, not ten times more";
    }
  }
#endif
}

TEST_F(MemoryBudgetCuda, HeightMapFiltersFallBackToTheCpuWhenTheDeviceBudgetIsShort) {
  test::TempDir dir;
  // The same profiles through a CPU-filtered sink and a CUDA one whose device budget is 1 KiB.
  ProfileBatch p(512, 40, 1, &allocate_host);
  p.frames = 40;
  for (int f = 0; f < 40; ++f)
    for (int x = 0; x < 512; ++x) {
      p.count[static_cast<std::size_t>(f) * 512 + x] = (x * 7 + f) % 5 != 0;
      p.position[p.slot_index(f, 0, x)] = ((x * 31 + f * 17) % 40) * kPositionOne;
    }
  p.meta.assign(40, FrameMeta{});
  ScanInfo info;
  info.layout = BatchLayout{512, 52, 40, PixelFormat::Mono8};
  info.host_budget = 1 * GiB;
  HeightMapSink cpu(dir / "cpu.png", "", 6), gpu(dir / "gpu.png", "", 6);
  cpu.set_filters({"median 5", "erode-v 3"}, Backend::Cpu);
  gpu.set_filters({"median 5", "erode-v 3"}, Backend::Cuda);
  cpu.begin(info);
  info.device_budget = 1024;
  gpu.begin(info);
  cpu.consume(p.span());
  gpu.consume(p.span());
  cpu.finish();
  gpu.finish();
  ASSERT_EQ(cpu.codes().size(), 512u * 40);
  EXPECT_EQ(cpu.codes(), gpu.codes()) << "the CPU fallback gives the CUDA filters' codes (bit-identical)";
  EXPECT_TRUE(std::filesystem::exists(dir / "gpu.png"));
}

TEST_F(MemoryBudgetCuda, ARunKeepsToTheDeviceBudget) {
  PipelineOptions o;
  o.backend = Backend::Cuda;
  o.chain.column.method = ColumnMethod::All;
  o.memory.device = 64 * MiB;
  UniformSource src(8192, 64, 400, 200);
  SlotSink sink;
  const PipelineStats s = Pipeline(o).run(src, {&sink});
  EXPECT_LE(s.geometry.device_bytes, 64 * MiB);
  EXPECT_EQ(s.geometry.device_budget, 64 * MiB);
  EXPECT_LT(s.geometry.frames, kDefaultBatchFrames);
  EXPECT_EQ(s.frames, 400u);
  EXPECT_EQ(s.points + s.overflow, 400ull * 8192 * 64);
}

}  // namespace
}  // namespace stripeline
