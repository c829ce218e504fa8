// GenTL: the simulated producer through its C interface, and the consumer
// (GenTLCamera) against it: zero-copy batches, the copy path, losses counted
// and marked exactly, configuration and read-back, no producer installed.
// STRIPELINE_GENTL_SIM_CTI is the producer built beside these tests.
#include <dlfcn.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "acquisition/gentl/genicam_zip.h"
#include "acquisition/gentl/gentl_api.h"
#include "acquisition/gentl/gentl_camera.h"
#include "acquisition/gentl/gentl_loader.h"
#include "acquisition/gentl/port_node_map.h"
#include "acquisition/synthetic_scanner.h"
#include "core/errors.h"
#include "io/image_reader.h"
#include "pipeline/buffer_pool.h"
#include "../camera_checks.h"
#include "../test_helpers.h"

namespace stripeline {
namespace {

const char* kCti = STRIPELINE_GENTL_SIM_CTI;

// Synthetic frames 0..n-1 as the producer renders them (seed 1).
class Frames {
 public:
  Frames(int width, int height, int count, PixelFormat format = PixelFormat::Mono8)
      : bytes_(static_cast<std::size_t>(width) * height * bytes_per_pixel(format)), data_(bytes_ * count), count_(count) {
    SyntheticConfig c;
    c.width = width;
    c.frame_height = height;
    c.frames = 0;
    c.format = format;
    SyntheticScanner s(c);
    for (int f = 0; f < count; ++f) s.render(f, data_.data() + bytes_ * f);
  }
  const std::byte* frame(std::uint64_t id) const { return data_.data() + bytes_ * (id % count_); }
  std::size_t bytes() const { return bytes_; }

 private:
  std::size_t bytes_;
  std::vector<std::byte> data_;
  std::uint64_t count_;
};

CameraConfig camera_2048x52() {
  CameraConfig c;
  c.width = 2048;
  c.height = 52;
  c.pixel_format = "Mono8";
  c.frame_rate = 1e6;  // the simulator's maximum: as fast as buffers come back
  return c;
}

GenTLConfig sim(int frames_per_buffer, std::vector<std::string> grabber = {}) {
  GenTLConfig g;
  g.cti = kCti;
  g.frames_per_buffer = frames_per_buffer;
  g.grabber_features = std::move(grabber);
  return g;
}

bool all_zero(const std::byte* p, std::size_t n) {
  return std::all_of(p, p + n, [](std::byte b) { return b == std::byte{0}; });
}

// Batches as a pool would hold them, with room for the producer's payload.
std::vector<std::unique_ptr<Batch>> make_batches(int count, BatchLayout layout, std::size_t bytes) {
  std::vector<std::unique_ptr<Batch>> v;
  for (int i = 0; i < count; ++i) {
    auto b = std::make_unique<Batch>();
    b->layout = layout;
    b->pixels = allocate_host(bytes);
    b->meta.resize(static_cast<std::size_t>(layout.frames));
    v.push_back(std::move(b));
  }
  return v;
}

// ---------------------------------------------------------------------------
// The producer through its C interface, as any consumer sees it.
TEST(GenTLProducer, CInterfaceEnumeratesAndServesItsZippedNodeMap) {
  void* lib = dlopen(kCti, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  // Every call of the standard, looked up as any consumer does (the
  // simulated producer has them all).
  gentl::Api api;
#define GENTL_LOAD(name, params)                             \
  api.name = reinterpret_cast<P##name>(dlsym(lib, #name)); \
  EXPECT_NE(api.name, nullptr) << #name;
  GENTL_CALLS(GENTL_LOAD)
#undef GENTL_LOAD

  TL_HANDLE tl = nullptr;
  EXPECT_EQ(api.TLOpen(&tl), GC_ERR_NOT_INITIALIZED);
  ASSERT_EQ(api.GCInitLib(), GC_ERR_SUCCESS);
  EXPECT_EQ(api.GCInitLib(), GC_ERR_RESOURCE_IN_USE);
  ASSERT_EQ(api.TLOpen(&tl), GC_ERR_SUCCESS);
  std::uint32_t n = 0;
  ASSERT_EQ(api.TLGetNumInterfaces(tl, &n), GC_ERR_SUCCESS);
  ASSERT_EQ(n, 1u);
  char id[64];
  std::size_t size = sizeof id;
  ASSERT_EQ(api.TLGetInterfaceID(tl, 0, id, &size), GC_ERR_SUCCESS);
  EXPECT_STREQ(id, "SL-SIM-IF0");
  IF_HANDLE iface = nullptr;
  ASSERT_EQ(api.TLOpenInterface(tl, id, &iface), GC_ERR_SUCCESS);
  size = sizeof id;
  ASSERT_EQ(api.IFGetDeviceID(iface, 0, id, &size), GC_ERR_SUCCESS);
  DEV_HANDLE dev = nullptr;
  ASSERT_EQ(api.IFOpenDevice(iface, id, DEVICE_ACCESS_EXCLUSIVE, &dev), GC_ERR_SUCCESS);
  DEV_HANDLE again = nullptr;
  EXPECT_EQ(api.IFOpenDevice(iface, id, DEVICE_ACCESS_EXCLUSIVE, &again), GC_ERR_RESOURCE_IN_USE);
  GC_ERROR code = 0;
  char text[256];
  size = sizeof text;
  ASSERT_EQ(api.GCGetLastError(&code, text, &size), GC_ERR_SUCCESS);
  EXPECT_EQ(code, GC_ERR_RESOURCE_IN_USE);
  EXPECT_NE(std::string(text).find("already open"), std::string::npos) << text;

  PORT_HANDLE port = nullptr;
  ASSERT_EQ(api.DevGetPort(dev, &port), GC_ERR_SUCCESS);
  char url[256];
  size = sizeof url;
  INFO_DATATYPE type = 0;
  ASSERT_EQ(api.GCGetPortURLInfo(port, 0, URL_INFO_URL, &type, url, &size), GC_ERR_SUCCESS);
  EXPECT_EQ(type, INFO_DATATYPE_STRING);
  const auto u = gentl::parse_genicam_url(url);
  ASSERT_EQ(u.scheme, gentl::GenICamUrl::Scheme::Local) << url;
  EXPECT_TRUE(u.zipped) << url;
  std::vector<std::uint8_t> zip(u.length);
  size = zip.size();
  ASSERT_EQ(api.GCReadPort(port, u.address, zip.data(), &size), GC_ERR_SUCCESS);
  const std::string xml = gentl::unzip_genicam_xml(zip.data(), zip.size());
  for (const char* node : {"\"Width\"", "\"PixelFormat\"", "\"ExposureTime\"", "\"TriggerSoftware\"", "\"ChunkEncoderValue\"", "<ChunkID>53544c46</ChunkID>"})
    EXPECT_NE(xml.find(node), std::string::npos) << node;
  EXPECT_EQ(api.GCReadPort(reinterpret_cast<PORT_HANDLE>(&size), 0, zip.data(), &size), GC_ERR_INVALID_HANDLE);
  ASSERT_EQ(api.GCCloseLib(), GC_ERR_SUCCESS);
  dlclose(lib);
}

// ---------------------------------------------------------------------------
TEST(GenTLConsumer, ListsTheSimulatedGrabber) {
  const auto devices = list_gentl_devices(kCti);
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_EQ(devices[0].id, "SL-SIM-0");
  EXPECT_EQ(devices[0].vendor, "stripeline");
  EXPECT_EQ(devices[0].interface_id, "SL-SIM-IF0");
  EXPECT_EQ(devices[0].tltype, "Custom");
  EXPECT_EQ(devices[0].serial, "SLSIM1000");
  EXPECT_EQ(devices[0].access, "available");
}

TEST(GenTLConsumer, NoProducerSaysHowToGetOne) {
  test::TempDir empty;
  const char* old = std::getenv("GENICAM_GENTL64_PATH");
  const std::string saved = old ? old : "";
  ::unsetenv("GENICAM_GENTL64_PATH");
  EXPECT_TRUE(gentl::producer_paths("").empty());
  try {
    list_gentl_devices("");
    ADD_FAILURE() << "no exception";
  } catch (const ConfigError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("GENICAM_GENTL64_PATH is not set"), std::string::npos) << m;
    EXPECT_NE(m.find(".cti"), std::string::npos) << m;
    EXPECT_NE(m.find("stripeline-sim.cti"), std::string::npos) << m;
  }
  ::setenv("GENICAM_GENTL64_PATH", empty.path().c_str(), 1);
  EXPECT_THROW(
      {
        try {
          open_gentl_camera(camera_2048x52(), GenTLConfig{}, 300);
        } catch (const ConfigError& e) {
          EXPECT_NE(std::string(e.what()).find("holds no .cti file"), std::string::npos) << e.what();
          throw;
        }
      },
      ConfigError);
  // The variable's folders are where producers are found.
  ::setenv("GENICAM_GENTL64_PATH", (empty.path().string() + ":" + std::filesystem::path(kCti).parent_path().string()).c_str(), 1);
  EXPECT_EQ(gentl::producer_paths(""), std::vector<std::string>{kCti});
  if (old)
    ::setenv("GENICAM_GENTL64_PATH", saved.c_str(), 1);
  else
    ::unsetenv("GENICAM_GENTL64_PATH");
}

// ---------------------------------------------------------------------------
// The acceptance run: 10,000 frames in buffers of 300 into the pipeline's own
// BufferPool, the grabber writing into the pool's buffers: every batch's
// pixels are the buffer the producer filled, nothing copied, every frame
// equal to the synthetic scanner's.
TEST(GenTLConsumer, TenThousandFramesInBuffersOf300WithoutACopy) {
  constexpr int kPerBuffer = 300, kFrames = 10000, kCached = 700;
  const Frames truth(2048, 52, kCached);
  CameraConfig cam = camera_2048x52();
  cam.frames = kFrames;
  GenTLConfig g = sim(kPerBuffer, {"SimCachedFrames=" + std::to_string(kCached), "SimWaitForBuffers=1"});
  g.frame_info_chunk = false;  // payload = pixels: the pool's own buffers fit
  auto source = open_gentl_camera(cam, g, kPerBuffer);
  ASSERT_EQ(source->direct_buffer_bytes(), static_cast<std::size_t>(2048) * 52 * kPerBuffer);

  const BatchLayout layout{2048, 52, kPerBuffer, PixelFormat::Mono8};
  BufferPool pool(layout, 4, 4, &allocate_host);
  std::vector<Slot*> slots;
  for (int i = 0; i < pool.size(); ++i) slots.push_back(pool.acquire());
  std::vector<Batch*> batches;
  std::set<const std::byte*> pool_memory;
  for (Slot* s : slots) {
    batches.push_back(&s->batch);
    pool_memory.insert(s->batch.pixels.data());
  }
  for (Slot* s : slots) pool.release(s);
  source->attach_buffers(batches, &allocate_host);

  std::uint64_t rows = 0;
  std::set<const std::byte*> seen;
  while (true) {
    Slot* s = pool.acquire();
    const bool got = source->fill(s->batch);
    if (!got) {
      pool.release(s);
      break;
    }
    const auto stats = source->gentl_stats();
    ASSERT_TRUE(stats.direct);
    // The batch's host pointer IS the buffer the producer reports filling.
    ASSERT_EQ(static_cast<const void*>(s->batch.pixels.data()), stats.last_direct_base);
    ASSERT_GE(s->batch.pixels.size(), layout.bytes());
    seen.insert(s->batch.pixels.data());
    for (int k = 0; k < s->batch.frames; ++k) {
      const FrameMeta& m = s->batch.meta[k];
      ASSERT_EQ(m.frame_id, rows) << "row " << rows;
      ASSERT_FALSE(m.missing) << "row " << rows;
      ASSERT_EQ(std::memcmp(s->batch.frame_data(k), truth.frame(m.frame_id), truth.bytes()), 0) << "frame " << m.frame_id;
      ++rows;
    }
    pool.release(s);
  }
  EXPECT_EQ(rows, static_cast<std::uint64_t>(kFrames));
  const auto stats = source->gentl_stats();
  EXPECT_EQ(stats.frames_copied, 0u);
  EXPECT_EQ(stats.buffers_direct, 34u);  // 33 buffers of 300 and the first 100 frames of a 34th
  const auto c = *source->acquisition_counters();
  EXPECT_EQ(c.frames_complete, static_cast<std::uint64_t>(kFrames));
  EXPECT_EQ(c.lost_total(), 0u);
  EXPECT_EQ(c.underruns, 0u);
  // The grabber wrote into the pool's memory as well as into the source's spares.
  EXPECT_GT(std::count_if(seen.begin(), seen.end(), [&](const std::byte* p) { return pool_memory.count(p) > 0; }), 0);
  source->detach_buffers();
  EXPECT_FALSE(source->fill(*batches[0]));
  EXPECT_EQ(source->end_reason(), SourceEnd::Stopped);
}

// Per-frame chunk, lost buffers, incomplete buffers and corrupt frames on
// the zero-copy path: every row is frame `row`, every loss counted by cause
// and marked, valid frames equal to the scanner's.
TEST(GenTLConsumer, ZeroCopyCountsAndMarksInjectedLossesExactly) {
  constexpr int kPerBuffer = 300, kRows = 3000, kCached = 600;
  const Frames truth(2048, 52, kCached);
  CameraConfig cam = camera_2048x52();
  cam.frames = kRows;
  GenTLConfig g = sim(kPerBuffer, {"SimCachedFrames=" + std::to_string(kCached), "SimWaitForBuffers=1", "SimDropBufferEvery=5",
                                   "SimIncompleteBufferEvery=4", "SimFailFrameEvery=700"});
  auto source = open_gentl_camera(cam, g, kPerBuffer);
  const std::size_t fb = truth.bytes();
  ASSERT_EQ(source->direct_buffer_bytes(), fb * kPerBuffer + 32 * kPerBuffer);  // pixels + the frame information chunk

  auto owned = make_batches(3, {2048, 52, kPerBuffer, PixelFormat::Mono8}, source->direct_buffer_bytes());
  std::vector<Batch*> batches;
  for (auto& b : owned) batches.push_back(b.get());
  source->attach_buffers(batches, &allocate_host);

  // Buffers 4 and 9 are lost (ids 1200-1499, 2700-2999), 3 and 7 arrive
  // half (ids 1050-1199, 2250-2399 never come), frames 699 and 2099 are
  // corrupt (1399 and 2799 were in lost buffers).
  auto expect_missing = [](std::uint64_t id) {
    return (id >= 1200 && id < 1500) || (id >= 2700 && id < 3000) || (id >= 1050 && id < 1200) || (id >= 2250 && id < 2400) || id == 699 ||
           id == 2099;
  };
  std::uint64_t rows = 0;
  int i = 0, gap_batches = 0;
  while (true) {
    Batch& b = *batches[i++ % batches.size()];
    // Poison: a row the source forgets to write fails below.
    std::fill(b.meta.begin(), b.meta.end(), FrameMeta{~0ull, -1, -1, true, false});
    if (!source->fill(b)) break;
    const auto stats = source->gentl_stats();
    const bool gap_batch = b.meta[0].missing && (b.meta[0].frame_id == 1200 || b.meta[0].frame_id == 2700);
    if (gap_batch)
      ++gap_batches;
    else
      ASSERT_EQ(static_cast<const void*>(b.pixels.data()), stats.last_direct_base);
    for (int k = 0; k < b.frames; ++k, ++rows) {
      const FrameMeta& m = b.meta[k];
      ASSERT_EQ(m.frame_id, rows);
      ASSERT_EQ(m.missing, expect_missing(rows)) << "frame " << rows;
      if (m.missing) {
        ASSERT_TRUE(all_zero(b.frame_data(k), fb)) << "missing frame " << rows << " has pixels";
        continue;
      }
      // An incomplete buffer lost its chunk (it follows the pixels): ids and
      // timestamps are derived, the encoder count is unknown.
      const bool in_incomplete_buffer = (rows >= 900 && rows < 1050) || (rows >= 2100 && rows < 2250);
      ASSERT_EQ(m.has_encoder, !in_incomplete_buffer) << "frame " << rows;
      if (m.has_encoder) ASSERT_EQ(m.encoder, static_cast<std::int64_t>(rows) * 4);
      ASSERT_EQ(std::memcmp(b.frame_data(k), truth.frame(rows), fb), 0) << "frame " << rows;
    }
  }
  EXPECT_EQ(rows, static_cast<std::uint64_t>(kRows));
  EXPECT_EQ(gap_batches, 2);
  const auto c = *source->acquisition_counters();
  EXPECT_EQ(c.lost_gap, 600u);
  EXPECT_EQ(c.gap_not_inserted, 0u);
  EXPECT_EQ(c.lost_incomplete, 300u);
  EXPECT_EQ(c.lost_failed, 2u);
  EXPECT_EQ(c.frames_complete, static_cast<std::uint64_t>(kRows) - 600 - 300 - 2);
  EXPECT_EQ(c.device_errors, 2u);  // one EVENT_ERROR per lost buffer
  EXPECT_EQ(source->gentl_stats().frames_copied, 0u);
  EXPECT_NE(source->gentl_stats().last_error_event.find("simulated link error"), std::string::npos);
  source->detach_buffers();
}

// Without attached buffers (or when a batch is not one buffer) frames are
// copied through the BatchAssembler, with the same accounting.
TEST(GenTLConsumer, CopyPathCountsAndMarksLossesExactly) {
  constexpr int kPerBuffer = 300, kBatch = 128, kRows = 1500, kCached = 300;
  const Frames truth(2048, 52, kCached);
  CameraConfig cam = camera_2048x52();
  cam.frames = kRows;
  cam.gap_fill_limit = 1000;
  GenTLConfig g = sim(kPerBuffer, {"SimCachedFrames=" + std::to_string(kCached), "SimWaitForBuffers=1", "SimDropBufferEvery=3",
                                   "SimIncompleteBufferEvery=4"});
  auto source = open_gentl_camera(cam, g, kBatch);
  Batch b({2048, 52, kBatch, PixelFormat::Mono8}, &allocate_host);
  // Buffer 2 lost (ids 600-899), buffer 3 arrives half (1050-1199 never come).
  std::uint64_t rows = 0;
  while (source->fill(b)) {
    for (int k = 0; k < b.frames; ++k, ++rows) {
      const FrameMeta& m = b.meta[k];
      ASSERT_EQ(m.frame_id, rows);
      const bool missing = (rows >= 600 && rows < 900) || (rows >= 1050 && rows < 1200);
      ASSERT_EQ(m.missing, missing) << "frame " << rows;
      if (!missing) {
        ASSERT_EQ(m.has_encoder, !(rows >= 900 && rows < 1050)) << "frame " << rows;  // buffer 3 lost its chunk
        if (m.has_encoder) ASSERT_EQ(m.encoder, static_cast<std::int64_t>(rows) * 4);
        ASSERT_EQ(std::memcmp(b.frame_data(k), truth.frame(rows), truth.bytes()), 0) << "frame " << rows;
      } else {
        ASSERT_TRUE(all_zero(b.frame_data(k), truth.bytes()));
      }
    }
  }
  EXPECT_EQ(rows, static_cast<std::uint64_t>(kRows));
  const auto c = *source->acquisition_counters();
  EXPECT_EQ(c.lost_gap, 300u);
  EXPECT_EQ(c.lost_incomplete, 150u);
  EXPECT_EQ(c.frames_complete, 1050u);
  const auto stats = source->gentl_stats();
  EXPECT_FALSE(stats.direct);
  EXPECT_EQ(stats.frames_copied, 1050u);
  EXPECT_EQ(stats.buffers_direct, 0u);
}

// One frame per buffer (a camera behind a grabber that does not
// concatenate), 16-bit pixels, and a grabber that runs out of buffers:
// frames it had nowhere to put are underruns, counted as gaps, never rows
// of data.
TEST(GenTLConsumer, SingleFrameBuffersMono16AndUnderruns) {
  constexpr int kBatch = 64, kRows = 640;
  const Frames truth(512, 20, 1, PixelFormat::Mono16);
  CameraConfig cam;
  cam.width = 512;
  cam.height = 20;
  cam.pixel_format = "Mono16";
  cam.frame_rate = 20000;
  cam.frames = kRows;
  cam.gap_fill_limit = 100000;
  GenTLConfig g = sim(1, {"SimCachedFrames=1"});
  g.buffers = 2;
  auto source = open_gentl_camera(cam, g, kBatch);
  EXPECT_EQ(source->frame_layout().format, PixelFormat::Mono16);
  Batch b({512, 20, kBatch, PixelFormat::Mono16}, &allocate_host);
  std::uint64_t rows = 0, missing = 0;
  while (source->fill(b)) {
    for (int k = 0; k < b.frames; ++k, ++rows) {
      ASSERT_EQ(b.meta[k].frame_id, rows);
      if (b.meta[k].missing) {
        ++missing;
        ASSERT_TRUE(all_zero(b.frame_data(k), truth.bytes()));
      } else {
        ASSERT_EQ(std::memcmp(b.frame_data(k), truth.frame(0), truth.bytes()), 0) << "frame " << rows;
      }
    }
    // Slow consumer: the grabber's two buffers run out.
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const auto c = *source->acquisition_counters();
  EXPECT_EQ(rows, static_cast<std::uint64_t>(kRows));
  EXPECT_EQ(c.frames_complete + missing, rows);
  // Every missing row is a frame the grabber had no buffer for (the last gap
  // may run past the rows asked for: counted, not all inserted).
  EXPECT_GE(c.lost_gap, missing);
  EXPECT_EQ(c.lost_incomplete + c.lost_failed + c.lost_timeout, 0u);
  EXPECT_GT(missing, 0u);
  EXPECT_GT(c.underruns, 0u);
}

// ---------------------------------------------------------------------------
// Configuration through GenApi, read back.
TEST(GenTLConsumer, ConfiguresAndReadsBack) {
  const CameraConfig cam{.width = 1024, .height = 40, .offset_x = 100, .offset_y = 8, .exposure_us = 250, .gain = 6, .frame_rate = 500};
  auto source = open_gentl_camera(cam, sim(10), 10);
  const CameraSettings& s = source->settings();
  test::expect_region_as_asked(s, cam);
  EXPECT_DOUBLE_EQ(s.exposure_us, 250);
  EXPECT_DOUBLE_EQ(s.gain, 6);
  EXPECT_DOUBLE_EQ(s.frame_rate, 500);
  EXPECT_EQ(s.trigger, "free-run");
  EXPECT_EQ(s.vendor, "stripeline");
  EXPECT_EQ(s.protocol, "GenTL Custom");
  EXPECT_EQ(source->gentl_stats().frames_per_buffer, 10);
  EXPECT_EQ(source->frame_layout(), (BatchLayout{1024, 40, 0, PixelFormat::Mono8}));
}

TEST(GenTLConsumer, RefusedSettingsNameTheKeyAndWhatIsAllowed) {
  auto refused = [](CameraConfig cam, GenTLConfig g, const std::string& expect) {
    try {
      open_gentl_camera(cam, g, 10);
      ADD_FAILURE() << "accepted; expected: " << expect;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(expect), std::string::npos) << e.what();
    }
  };
  CameraConfig wide;
  wide.width = 5000;
  refused(wide, sim(1), "camera.width: 5000 is not accepted by the camera (Width 16..4096");
  CameraConfig mono12;
  mono12.pixel_format = "Mono12";
  refused(mono12, sim(1), "camera.pixel_format: the camera refused pixel format Mono12");
  refused(mono12, sim(1), "(it offers Mono8, Mono16)");
  refused(CameraConfig{}, sim(1, {"NoSuchFeature=1"}), "camera.gentl.grabber_features: the grabber's Device module has no feature 'NoSuchFeature'");
  CameraConfig bad_feature;
  bad_feature.features = {"ExposureTime=5"};
  refused(bad_feature, sim(1), "camera.features: the camera refused 'ExposureTime=5'");
  refused(bad_feature, sim(1), "[ExposureTime] Value '5' lower than allowed minimum '10'");
  GenTLConfig g = sim(1);
  g.frames_per_buffer_feature = "Stream.FramesPerBuffer";
  g.frames_per_buffer = 10;
  refused(CameraConfig{}, g, "camera.gentl.frames_per_buffer: the grabber's Stream module has no feature 'FramesPerBuffer'");
  refused(CameraConfig{}, [] {
    GenTLConfig x = sim(1);
    x.buffers = 0;
    return x;
  }(), "camera.gentl.buffers: 0 is out of range");
}

TEST(GenTLConsumer, TriggersReadBackAndSoftwareTriggerDeliversFrames) {
  CameraConfig ext;
  ext.trigger = TriggerMode::External;
  ext.trigger_source = "Line1";
  ext.trigger_activation = "FallingEdge";
  {
    auto source = open_gentl_camera(ext, sim(1), 10);
    EXPECT_EQ(source->settings().trigger, "external Line1 FallingEdge");
  }
  ext.trigger_source = "Line7";
  EXPECT_THROW(open_gentl_camera(ext, sim(1), 10), ConfigError);

  CameraConfig soft;
  soft.width = 256;
  soft.height = 16;
  soft.trigger = TriggerMode::Software;
  soft.frame_rate = 400;
  soft.frames = 20;
  auto source = open_gentl_camera(soft, sim(5), 10);
  Batch b({256, 16, 10, PixelFormat::Mono8}, &allocate_host);
  std::uint64_t rows = 0;
  while (source->fill(b)) rows += static_cast<std::uint64_t>(b.frames);
  EXPECT_EQ(rows, 20u);
  EXPECT_EQ(source->acquisition_counters()->frames_complete, 20u);
}

TEST(GenTLConsumer, StopReturnsPromptly) {
  CameraConfig cam;
  cam.frame_rate = 1;  // a buffer of 10 frames takes 9 s
  auto source = open_gentl_camera(cam, sim(10), 10);
  Batch b({source->frame_layout().width, source->frame_layout().frame_height, 10, PixelFormat::Mono8}, &allocate_host);
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    source->request_stop();
  });
  const auto t0 = std::chrono::steady_clock::now();
  source->fill(b);
  stopper.join();
  EXPECT_EQ(source->end_reason(), SourceEnd::Stopped);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
}

// ---------------------------------------------------------------------------
TEST(GenTLXml, UrlsParse) {
  auto u = gentl::parse_genicam_url("local:///Cam.zip;8000;1A2b?SchemaVersion=1.1.0");
  EXPECT_EQ(u.scheme, gentl::GenICamUrl::Scheme::Local);
  EXPECT_EQ(u.file_name, "Cam.zip");
  EXPECT_EQ(u.address, 0x8000u);
  EXPECT_EQ(u.length, 0x1a2bu);
  EXPECT_TRUE(u.zipped);
  u = gentl::parse_genicam_url("Local:cam.xml;0x10;0x20");
  EXPECT_EQ(u.address, 0x10u);
  EXPECT_FALSE(u.zipped);
  u = gentl::parse_genicam_url("file:///opt/vendor/My%20Cam.xml?SchemaVersion=1.0.0");
  EXPECT_EQ(u.scheme, gentl::GenICamUrl::Scheme::File);
  EXPECT_EQ(u.file_name, "/opt/vendor/My Cam.xml");
  EXPECT_EQ(gentl::parse_genicam_url("http://example.invalid/cam.zip").scheme, gentl::GenICamUrl::Scheme::Http);
  EXPECT_THROW(gentl::parse_genicam_url("local:cam.xml;10"), InputError);
  EXPECT_THROW(gentl::parse_genicam_url("local:cam.xml;zz;10"), InputError);
  EXPECT_THROW(gentl::parse_genicam_url("ftp://x/cam.xml"), InputError);
}

TEST(GenTLXml, ZipRoundTripAndDamage) {
  std::string xml = "<?xml version=\"1.0\"?><RegisterDescription>";
  for (int i = 0; i < 500; ++i) xml += "<Integer Name=\"F" + std::to_string(i) + "\"/>";
  xml += "</RegisterDescription>";
  auto zip = gentl::zip_one_file("Camera.xml", xml);
  EXPECT_LT(zip.size(), xml.size());
  EXPECT_EQ(gentl::unzip_genicam_xml(zip.data(), zip.size()), xml);
  auto damaged = zip;
  damaged[40] ^= 0xff;  // inside the deflated data
  EXPECT_THROW(gentl::unzip_genicam_xml(damaged.data(), damaged.size()), std::runtime_error);
  auto other = gentl::zip_one_file("readme.txt", "hello");
  EXPECT_THROW(gentl::unzip_genicam_xml(other.data(), other.size()), std::runtime_error);
  const std::uint8_t junk[30] = {};
  EXPECT_THROW(gentl::unzip_genicam_xml(junk, sizeof junk), std::runtime_error);
}

// ---------------------------------------------------------------------------
// The product: `stripeline run -c CONFIG` on the simulated grabber, 10,000
// frames, with the grabber writing into the pipeline's batches (the direct
// path, nothing copied) and with camera.direct_buffers = false (every frame
// copied). Both give the files a replay of the same frames gives: the
// producer renders the synthetic scanner's frames of seed 1, which
// `stripeline synth --seed 1` records.
namespace {

// What the files hold, without the header lines that name the source: a PLY's
// body after end_header, a height map's decoded pixels.
std::string ply_body(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  const std::string all{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
  const auto end = all.find("end_header\n");
  return end == std::string::npos ? std::string() : all.substr(end);
}
std::string image_pixels(const std::filesystem::path& p) {
  auto reader = io::open_image(p.string());
  const io::ImageInfo& info = reader->info();
  std::string px(static_cast<std::size_t>(info.width) * static_cast<std::size_t>(info.height) * bytes_per_pixel(info.format), '\0');
  reader->read_rows(reinterpret_cast<std::byte*>(px.data()), info.height);
  return px;
}

constexpr int kRunWidth = 256, kRunHeight = 32, kRunFrames = 10000;

// How the grabber's buffers reach the batches in a run.
enum class RunPath {
  Direct,          // the grabber writes into the pipeline's batches
  Copy,            // camera.direct_buffers = false: our spare buffers, frames copied
  ProducerMemory,  // SimAllocOnly: the producer refuses our memory; its own buffers, frames copied
};
const char* name_of(RunPath p) { return p == RunPath::Direct ? "direct" : p == RunPath::Copy ? "copy" : "producer-memory"; }

// Writes a run configuration for a grabber source; returns its path.
std::filesystem::path grabber_config(const std::filesystem::path& dir, int per_buffer, RunPath run_path) {
  const std::string name = name_of(run_path);
  const auto path = dir / (name + ".toml");
  std::ofstream f(path);
  f << "[source]\nkind = \"camera\"\n"
    << "[camera]\ntransport = \"gentl\"\nwidth = " << kRunWidth << "\nheight = " << kRunHeight << "\nframe_rate = 1000000\n"
    << "frames = " << kRunFrames << "\ndirect_buffers = " << (run_path == RunPath::Copy ? "false" : "true") << "\n"
    << "[camera.gentl]\ncti = \"" << kCti << "\"\nframes_per_buffer = " << per_buffer << "\n"
    << "grabber_features = [\"SimWaitForBuffers=1\"" << (run_path == RunPath::ProducerMemory ? ", \"SimAllocOnly=1\"" : "") << "]\n"
    << "[processing]\nbackend = \"cpu\"\nbatch_frames = " << per_buffer << "\n"
    << "[output]\ndir = \"" << (dir / name).string() << "\"\npreview = \"\"\nheightmap = \"heightmap.png\"\n"
    << "ply = \"scan.ply\"\nsummary = \"summary.json\"\n";
  return path;
}

class GenTLRun : public ::testing::TestWithParam<int> {};

}  // namespace

TEST_P(GenTLRun, DirectPathCopiesNothingAndGivesTheFilesOfAReplay) {
  const int per_buffer = GetParam();
  test::TempDir dir;
  const auto recording = dir.path() / "frames.tiff";
  std::string out;
  ASSERT_EQ(test::run_cli(fmt::format("synth {} --width {} --frame-height {} --frames {} --seed 1", recording.string(), kRunWidth,
                                      kRunHeight, kRunFrames),
                          &out),
            0)
      << out;
  {
    std::ofstream f(dir.path() / "replay.toml");
    f << "[source]\nkind = \"file\"\npath = \"" << recording.string() << "\"\nframe_height = " << kRunHeight << "\n"
      << "[processing]\nbackend = \"cpu\"\nbatch_frames = " << per_buffer << "\n"
      << "[output]\ndir = \"" << (dir.path() / "replay").string() << "\"\npreview = \"\"\nheightmap = \"heightmap.png\"\n"
      << "ply = \"scan.ply\"\nsummary = \"summary.json\"\n";
  }
  ASSERT_EQ(test::run_cli("run -q -c " + (dir.path() / "replay.toml").string(), &out), 0) << out;

  for (const RunPath run_path : {RunPath::Direct, RunPath::Copy, RunPath::ProducerMemory}) {
    SCOPED_TRACE(name_of(run_path));
    const bool direct = run_path == RunPath::Direct;
    ASSERT_EQ(test::run_cli("run -q -c " + grabber_config(dir.path(), per_buffer, run_path).string(), &out), 0) << out;
    const auto run_dir = dir.path() / name_of(run_path);
    const auto summary = nlohmann::json::parse(std::ifstream(run_dir / "summary.json"));
    ASSERT_TRUE(summary.contains("acquisition")) << summary.dump(2);
    const auto& a = summary["acquisition"];
    EXPECT_EQ(summary["frames"], kRunFrames);
    EXPECT_EQ(a["lost_total"], 0) << a.dump();
    EXPECT_EQ(a["frames_complete"], kRunFrames) << a.dump();
    if (direct) {
      EXPECT_EQ(a["path"], "direct") << a.dump();
      EXPECT_EQ(a["bytes_copied"], 0) << a.dump();
    } else {
      EXPECT_EQ(a["path"], "copy") << a.dump();
      EXPECT_EQ(a["bytes_copied"], std::uint64_t{kRunFrames} * kRunWidth * kRunHeight) << a.dump();
      EXPECT_NE(out.find("copy path, "), std::string::npos) << out;
      if (run_path == RunPath::ProducerMemory)  // said once, as the fallback it is
        EXPECT_NE(out.find("its own buffers (DSAllocAndAnnounceBuffer)"), std::string::npos) << out;
    }
    // The same frames give the same profiles: identical points and heights
    // (only the header lines naming the source differ).
    const std::string got_ply = ply_body(run_dir / "scan.ply"), want_ply = ply_body(dir.path() / "replay" / "scan.ply");
    EXPECT_GT(want_ply.size(), 1000u);
    EXPECT_TRUE(got_ply == want_ply) << "scan.ply differs from the replay's (" << got_ply.size() << " vs " << want_ply.size() << " bytes)";
    const std::string got_hm = image_pixels(run_dir / "heightmap.png"), want_hm = image_pixels(dir.path() / "replay" / "heightmap.png");
    EXPECT_EQ(want_hm.size(), std::size_t{kRunFrames} * kRunWidth * 2);
    EXPECT_TRUE(got_hm == want_hm) << "heightmap.png differs from the replay's";
  }
}

INSTANTIATE_TEST_SUITE_P(FramesPerBuffer, GenTLRun, ::testing::Values(100, 300));

}  // namespace
}  // namespace stripeline
