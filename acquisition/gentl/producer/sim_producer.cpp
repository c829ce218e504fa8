// stripeline's simulated GenTL producer (stripeline-sim.cti): a frame grabber
// with one "camera" that films the synthetic scanner's stripe. Any GenTL
// consumer can load it. What it simulates (docs/cameras.md, "GenTL"):
//   - System "stripeline-sim" -> Interface "SL-SIM-IF0" -> Device(s) "SL-SIM-<n>"
//     (STRIPELINE_GENTL_SIM_DEVICES, 1..8, default 1) -> DataStream "Stream0";
//   - the camera's node map (remote port, served zipped): Width, Height,
//     OffsetX/Y, PixelFormat (Mono8, Mono16), ExposureTime, Gain,
//     AcquisitionFrameRate, TriggerSelector/Mode/Source/Activation,
//     TriggerSoftware, AcquisitionStart/Stop, chunk mode with a per-frame
//     information chunk (frame_info_chunk.h) and ChunkFrameID/Timestamp/
//     EncoderValue of the buffer's first frame;
//   - the grabber's node map (the Device module's own port): FramesPerBuffer
//     (the grabber concatenates that many frames into one buffer), the
//     scene (SimSceneSeed, SimEncoderStep, SimCachedFrames), back-pressure
//     (SimWaitForBuffers) and loss injection (SimDropBufferEvery: the buffer
//     is lost and an EVENT_ERROR fired; SimIncompleteBufferEvery: only half
//     its frames arrive; SimFailFrameEvery: a frame flagged corrupt) and a
//     device that goes away (SimUnplugAfterBuffers: after that many buffers
//     the stream stops and every wait for a new buffer fails with
//     GC_ERR_IO, as a grabber whose camera link is lost; a new DevOpen
//     brings it back).
// Frame n of the stream (buffer n / N, slot n % N) shows synthetic frame n.
//
// Threading: one library lock guards the object graph and every register;
// each stream has its own lock for its queues and a thread that fills
// buffers and never takes the library lock. EventGetData waits on the
// event's own lock only.
#include <tbb/parallel_for.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "acquisition/gentl/frame_info_chunk.h"
#include "acquisition/gentl/gentl_api.h"
#include "acquisition/gentl/producer/node_map.h"
#include "acquisition/synthetic_scanner.h"

namespace stripeline::gentl_sim {
namespace {

using clock = std::chrono::steady_clock;
using gentl::FrameInfoRecord;

constexpr std::int64_t kMono8 = 0x01080001, kMono16 = 0x01100007;  // PFNC
constexpr int kSensorWidth = 4096, kSensorHeight = 2048;
constexpr const char* kVendor = "stripeline";
constexpr const char* kTlType = "Custom";

std::int64_t now_ns() { return std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now().time_since_epoch()).count(); }

// ---------------------------------------------------------------------------
// Errors: GCGetLastError reports the last failure of the calling thread.
struct LastError {
  GC_ERROR code = GC_ERR_SUCCESS;
  std::string text;
};
thread_local LastError t_last_error;

GC_ERROR fail(GC_ERROR code, std::string text) {
  t_last_error = {code, std::move(text)};
  return code;
}

// ---------------------------------------------------------------------------
// Objects behind the handles.
enum class Kind : std::uint32_t { System = 1, Interface, Device, Remote, Stream, Buffer, Event };

struct Object {
  explicit Object(Kind k) : kind(k) {}
  virtual ~Object() = default;
  Kind kind;
};

struct Stream;
struct Device;

struct Event : Object {
  explicit Event(EVENT_TYPE t) : Object(Kind::Event), type(t) {}
  EVENT_TYPE type;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::vector<std::uint8_t>> queue;
  int kills = 0;  // EventKill: that many waits return GC_ERR_ABORT
  std::uint64_t fired = 0;
  bool unregistered = false;
  bool device_gone = false;  // SimUnplugAfterBuffers: waits fail with GC_ERR_IO

  void push(std::vector<std::uint8_t> data) {
    {
      std::lock_guard l(mu);
      queue.push_back(std::move(data));
      ++fired;
    }
    cv.notify_all();
  }
};

struct Module : Object {
  using Object::Object;
  std::unique_ptr<NodeMap> map;
  std::string id;
  virtual std::string module_name() const = 0;
};

struct Buffer : Object {
  Buffer() : Object(Kind::Buffer) {}
  enum class State { Announced, Queued, Filling, Output, Delivered };
  Stream* stream = nullptr;
  std::uint8_t* base = nullptr;
  std::size_t size = 0;
  void* user = nullptr;
  bool allocated = false;  // DSAllocAndAnnounceBuffer: ours to free
  State state = State::Announced;
  // What the last fill left (valid from Output on).
  std::uint64_t frame_id = 0;
  std::int64_t timestamp_ns = 0;
  std::size_t width = 0, height = 0, delivered_height = 0, filled = 0, chunk_bytes = 0;
  std::int64_t pixel_format = kMono8;
  bool incomplete = false, new_data = false;
  ~Buffer() override {
    if (allocated) std::free(base);
  }
};

// What the camera and the grabber are set to (registers).
struct Settings {
  int width = 2048, height = 52, offset_x = 0, offset_y = 0;
  std::int64_t pixel_format = kMono8;
  double exposure_us = 1000, gain_db = 0, frame_rate = 1000;
  std::int64_t trigger_mode = 0, trigger_source = 2, trigger_activation = 0;  // Off, Line1, RisingEdge
  bool chunk_mode = false;
  std::int64_t frames_per_buffer = 1;
  std::int64_t scene_seed = 1, encoder_step = 4, cached_frames = 0;
  bool wait_for_buffers = false;
  bool write_pixels = true;
};

struct Stream : Module {
  Stream() : Module(Kind::Stream) {}
  Device* device = nullptr;
  std::mutex mu;  // queues, buffer states, counters
  std::condition_variable cv;
  std::vector<std::unique_ptr<Buffer>> buffers;  // announced
  std::deque<Buffer*> input, output;
  std::shared_ptr<Event> new_buffer_event, error_event;
  std::thread worker;
  bool running = false, stop = false;
  std::uint64_t delivered = 0, underruns = 0, started = 0, to_acquire = GENTL_INFINITE;
  Settings snapshot;  // what the worker runs with (taken at DSStartAcquisition)
  std::string module_name() const override { return "TLDataStream"; }
  std::size_t frame_bytes() const;
  std::size_t payload_size() const;
  void run();
  void deliver(Buffer* b);
  void stop_worker();
};

struct Remote : Module {
  Remote() : Module(Kind::Remote) {}
  Device* device = nullptr;
  std::string module_name() const override { return "Device"; }
};

struct Interface;

struct Device : Module {
  Device() : Module(Kind::Device) {}
  Interface* parent = nullptr;
  int index = 0;
  bool open = false;
  std::unique_ptr<Remote> remote;
  std::unique_ptr<Stream> stream;
  Settings settings;
  // Live controls the worker reads while it runs.
  std::atomic<bool> acquiring{false};
  std::atomic<std::int64_t> trigger_credits{0};
  std::atomic<double> frame_rate{1000};
  std::atomic<std::int64_t> drop_every{0}, incomplete_every{0}, fail_every{0}, unplug_after{0};
  std::string serial() const { return "SLSIM" + std::to_string(1000 + index); }
  std::string module_name() const override { return "TLDevice"; }
  bool streaming() const { return stream && stream->running; }
};

struct Interface : Module {
  Interface() : Module(Kind::Interface) {}
  bool open = false;
  std::vector<std::unique_ptr<Device>> devices;
  std::string module_name() const override { return "TLInterface"; }
};

struct System : Module {
  System() : Module(Kind::System) {}
  std::unique_ptr<Interface> iface;
  std::string module_name() const override { return "TLSystem"; }
};

// ---------------------------------------------------------------------------
// Library state.
struct Library {
  std::mutex mu;
  bool initialized = false;
  std::unique_ptr<System> system;  // while the TL is open
  std::unordered_set<const Object*> live;
};
Library& lib() {
  static Library l;
  return l;
}

template <class T>
T* as(void* h, Kind k) {
  auto* o = static_cast<Object*>(h);
  if (!h || !lib().live.count(o) || o->kind != k) return nullptr;
  return static_cast<T*>(o);
}
Module* as_port(void* h) {
  auto* o = static_cast<Object*>(h);
  if (!h || !lib().live.count(o) || o->kind == Kind::Event || o->kind == Kind::Buffer) return nullptr;
  return static_cast<Module*>(o);
}

// ---------------------------------------------------------------------------
// Info answers: a null buffer asks for the size.
GC_ERROR put_bytes(INFO_DATATYPE type, const void* data, std::size_t n, INFO_DATATYPE* piType, void* pBuffer, std::size_t* piSize) {
  if (!piSize) return fail(GC_ERR_INVALID_PARAMETER, "piSize is null");
  if (piType) *piType = type;
  if (!pBuffer) {
    *piSize = n;
    return GC_ERROR{GC_ERR_SUCCESS};
  }
  if (*piSize < n) return fail(GC_ERR_BUFFER_TOO_SMALL, "the buffer holds " + std::to_string(*piSize) + " bytes, " + std::to_string(n) + " needed");
  std::memcpy(pBuffer, data, n);
  *piSize = n;
  return GC_ERROR{GC_ERR_SUCCESS};
}
GC_ERROR put_string(const std::string& s, INFO_DATATYPE* t, void* b, std::size_t* n) { return put_bytes(INFO_DATATYPE_STRING, s.c_str(), s.size() + 1, t, b, n); }
template <class T>
GC_ERROR put(INFO_DATATYPE type, T v, INFO_DATATYPE* t, void* b, std::size_t* n) {
  return put_bytes(type, &v, sizeof v, t, b, n);
}
GC_ERROR put_bool(bool v, INFO_DATATYPE* t, void* b, std::size_t* n) { return put<bool8_t>(INFO_DATATYPE_BOOL8, v ? 1 : 0, t, b, n); }
GC_ERROR put_size(std::size_t v, INFO_DATATYPE* t, void* b, std::size_t* n) { return put<std::size_t>(INFO_DATATYPE_SIZET, v, t, b, n); }
GC_ERROR put_u64(std::uint64_t v, INFO_DATATYPE* t, void* b, std::size_t* n) { return put<std::uint64_t>(INFO_DATATYPE_UINT64, v, t, b, n); }
GC_ERROR put_i32(std::int32_t v, INFO_DATATYPE* t, void* b, std::size_t* n) { return put<std::int32_t>(INFO_DATATYPE_INT32, v, t, b, n); }
GC_ERROR put_ptr(const void* v, INFO_DATATYPE* t, void* b, std::size_t* n) { return put<const void*>(INFO_DATATYPE_PTR, v, t, b, n); }

// ---------------------------------------------------------------------------
// Node maps.
Feature text_feature(std::string name, std::string category, std::function<std::string()> get) {
  Feature f;
  f.name = std::move(name);
  f.kind = Feature::Kind::String;
  f.category = std::move(category);
  f.writable = false;
  f.get_string = std::move(get);
  return f;
}

Feature int_feature(std::string name, std::string category, std::int64_t lo, std::int64_t hi, std::function<std::int64_t()> get,
                    std::function<GC_ERROR(std::int64_t)> set, std::string tip = {}) {
  Feature f;
  f.name = std::move(name);
  f.category = std::move(category);
  f.min = lo;
  f.max = hi;
  f.get_int = std::move(get);
  f.set_int = std::move(set);
  f.writable = static_cast<bool>(f.set_int);
  f.tooltip = std::move(tip);
  return f;
}

Feature float_feature(std::string name, std::string category, double lo, double hi, std::string unit, std::function<double()> get,
                      std::function<GC_ERROR(double)> set) {
  Feature f;
  f.name = std::move(name);
  f.kind = Feature::Kind::Float;
  f.category = std::move(category);
  f.fmin = lo;
  f.fmax = hi;
  f.unit = std::move(unit);
  f.get_float = std::move(get);
  f.set_float = std::move(set);
  return f;
}

Feature enum_feature(std::string name, std::string category, std::vector<std::pair<std::string, std::int64_t>> entries,
                     std::function<std::int64_t()> get, std::function<GC_ERROR(std::int64_t)> set) {
  Feature f = int_feature(std::move(name), std::move(category), 0, 0, std::move(get), std::move(set));
  f.kind = Feature::Kind::Enumeration;
  f.entries = std::move(entries);
  return f;
}

Feature command_feature(std::string name, std::string category, std::function<GC_ERROR(std::int64_t)> run) {
  Feature f = int_feature(std::move(name), std::move(category), 0, 1, [] { return std::int64_t{0}; }, std::move(run));
  f.kind = Feature::Kind::Command;
  return f;
}

// A setter that refuses while the stream runs (geometry and buffer layout).
template <class F>
std::function<GC_ERROR(std::int64_t)> while_idle(Device* d, F apply) {
  return [d, apply](std::int64_t v) -> GC_ERROR {
    if (d->streaming()) return fail(GC_ERR_BUSY, "cannot change this while the stream is acquiring");
    return apply(v);
  };
}

void build_camera_map(Device* d) {
  auto m = std::make_unique<NodeMap>(kVendor, "StripelineSimCamera", "stripeline_sim_camera.zip");
  Settings& s = d->settings;
  const std::string info = "DeviceControl", fmt = "ImageFormatControl", acq = "AcquisitionControl", chunk = "ChunkDataControl";
  m->add(text_feature("DeviceVendorName", info, [] { return std::string(kVendor); }));
  m->add(text_feature("DeviceModelName", info, [] { return std::string("Simulated laser line camera"); }));
  m->add(text_feature("DeviceSerialNumber", info, [d] { return d->serial(); }));
  m->add(text_feature("DeviceVersion", info, [] { return std::string(STRIPELINE_VERSION); }));
  m->add(int_feature("SensorWidth", fmt, 0, 0, [] { return std::int64_t{kSensorWidth}; }, nullptr));
  m->add(int_feature("SensorHeight", fmt, 0, 0, [] { return std::int64_t{kSensorHeight}; }, nullptr));
  m->add(int_feature("WidthMax", fmt, 0, 0, [&s] { return std::int64_t{kSensorWidth - s.offset_x}; }, nullptr));
  m->add(int_feature("HeightMax", fmt, 0, 0, [&s] { return std::int64_t{std::min(kSensorHeight - s.offset_y, 4096)}; }, nullptr));
  m->add(int_feature("OffsetXMax", fmt, 0, 0, [&s] { return std::int64_t{kSensorWidth - s.width}; }, nullptr));
  m->add(int_feature("OffsetYMax", fmt, 0, 0, [&s] { return std::int64_t{kSensorHeight - s.height}; }, nullptr));
  auto bounded = [&](const char* name, int* field, int lo, std::function<int()> hi) {
    Feature f = int_feature(name, fmt, lo, 0, [field] { return std::int64_t{*field}; },
                            while_idle(d, [field, lo, hi, name = std::string(name)](std::int64_t v) -> GC_ERROR {
                              if (v < lo || v > hi()) return fail(GC_ERR_INVALID_VALUE, name + " = " + std::to_string(v) + " is out of range");
                              *field = static_cast<int>(v);
                              return GC_ERROR{GC_ERR_SUCCESS};
                            }));
    f.p_max = std::string(name) + "Max";
    m->add(std::move(f));
  };
  bounded("Width", &s.width, 16, [&s] { return kSensorWidth - s.offset_x; });
  bounded("Height", &s.height, 1, [&s] { return std::min(kSensorHeight - s.offset_y, 4096); });
  bounded("OffsetX", &s.offset_x, 0, [&s] { return kSensorWidth - s.width; });
  bounded("OffsetY", &s.offset_y, 0, [&s] { return kSensorHeight - s.height; });
  m->add(enum_feature("PixelFormat", fmt, {{"Mono8", kMono8}, {"Mono16", kMono16}}, [&s] { return s.pixel_format; },
                      while_idle(d, [&s](std::int64_t v) {
                        s.pixel_format = v;
                        return GC_ERROR{GC_ERR_SUCCESS};
                      })));
  m->add(int_feature("PayloadSize", fmt, 0, 0,
                     [&s] { return std::int64_t{s.width} * s.height * (s.pixel_format == kMono8 ? 1 : 2); }, nullptr,
                     "Bytes of one camera frame (the grabber's buffer size is the data stream's payload size)"));
  m->add(float_feature("ExposureTime", acq, 10, 1e6, "us", [&s] { return s.exposure_us; }, [&s](double v) {
    s.exposure_us = v;
    return GC_ERROR{GC_ERR_SUCCESS};
  }));
  m->add(float_feature("Gain", acq, 0, 24, "dB", [&s] { return s.gain_db; }, [&s](double v) {
    s.gain_db = v;
    return GC_ERROR{GC_ERR_SUCCESS};
  }));
  m->add(float_feature("AcquisitionFrameRate", acq, 1, 1e6, "Hz", [&s] { return s.frame_rate; }, [d, &s](double v) {
    s.frame_rate = v;
    d->frame_rate.store(v);
    return GC_ERROR{GC_ERR_SUCCESS};
  }));
  m->add(enum_feature("AcquisitionMode", acq, {{"Continuous", 0}}, [] { return std::int64_t{0}; }, [](std::int64_t) { return GC_ERROR{GC_ERR_SUCCESS}; }));
  m->add(command_feature("AcquisitionStart", acq, [d](std::int64_t) {
    d->acquiring.store(true);
    if (d->stream) d->stream->cv.notify_all();
    return GC_ERROR{GC_ERR_SUCCESS};
  }));
  m->add(command_feature("AcquisitionStop", acq, [d](std::int64_t) {
    d->acquiring.store(false);
    return GC_ERROR{GC_ERR_SUCCESS};
  }));
  m->add(enum_feature("TriggerSelector", acq, {{"FrameStart", 0}}, [] { return std::int64_t{0}; }, [](std::int64_t) { return GC_ERROR{GC_ERR_SUCCESS}; }));
  m->add(enum_feature("TriggerMode", acq, {{"Off", 0}, {"On", 1}}, [&s] { return s.trigger_mode; }, while_idle(d, [&s](std::int64_t v) {
                        s.trigger_mode = v;
                        return GC_ERROR{GC_ERR_SUCCESS};
                      })));
  m->add(enum_feature("TriggerSource", acq, {{"Software", 0}, {"Line1", 2}}, [&s] { return s.trigger_source; },
                      while_idle(d, [&s](std::int64_t v) {
                        s.trigger_source = v;
                        return GC_ERROR{GC_ERR_SUCCESS};
                      })));
  m->add(enum_feature("TriggerActivation", acq, {{"RisingEdge", 0}, {"FallingEdge", 1}}, [&s] { return s.trigger_activation; },
                      [&s](std::int64_t v) {
                        s.trigger_activation = v;
                        return GC_ERROR{GC_ERR_SUCCESS};
                      }));
  m->add(command_feature("TriggerSoftware", acq, [d](std::int64_t) {
    d->trigger_credits.fetch_add(1);
    if (d->stream) d->stream->cv.notify_all();
    return GC_ERROR{GC_ERR_SUCCESS};
  }));
  Feature mode = int_feature("ChunkModeActive", chunk, 0, 1, [&s] { return std::int64_t{s.chunk_mode}; }, while_idle(d, [&s](std::int64_t v) {
                               s.chunk_mode = v != 0;
                               return GC_ERROR{GC_ERR_SUCCESS};
                             }));
  mode.kind = Feature::Kind::Boolean;
  mode.tooltip = "Each buffer carries the per-frame information chunk (id 0x53544C46): id, timestamp, encoder, status of every frame";
  m->add(std::move(mode));
  // The first frame's values, read from the chunk (GenICam chunk port).
  for (auto [name, offset] : {std::pair{"ChunkFrameID", 0}, {"ChunkTimestamp", 8}, {"ChunkEncoderValue", 16}}) {
    Feature f = int_feature(name, chunk, 0, 0, nullptr, nullptr);
    f.writable = false;
    f.chunk_id = gentl::kFrameInfoChunkId;
    f.chunk_offset = static_cast<std::uint64_t>(offset);
    m->add(std::move(f));
  }
  m->finish();
  d->remote->map = std::move(m);
}

void build_grabber_map(Device* d) {
  auto m = std::make_unique<NodeMap>(kVendor, "StripelineSimGrabber", "stripeline_sim_grabber.xml");
  Settings& s = d->settings;
  const std::string info = "DeviceInformation", buf = "BufferControl", sim = "Simulation";
  m->add(text_feature("DeviceID", info, [d] { return d->id; }));
  m->add(text_feature("DeviceVendorName", info, [] { return std::string(kVendor); }));
  m->add(text_feature("DeviceModelName", info, [] { return std::string("Simulated frame grabber"); }));
  m->add(int_feature("FramesPerBuffer", buf, 1, 65536, [&s] { return s.frames_per_buffer; }, while_idle(d, [&s](std::int64_t v) {
                       if (v < 1 || v > 65536) return fail(GC_ERR_INVALID_VALUE, "FramesPerBuffer out of range");
                       s.frames_per_buffer = v;
                       return GC_ERROR{GC_ERR_SUCCESS};
                     }),
                     "Frames concatenated vertically into one buffer (one buffer = frames x Height lines)"));
  auto setting = [&](const char* name, std::int64_t* field, std::int64_t lo, std::int64_t hi, const char* tip) {
    m->add(int_feature(name, sim, lo, hi, [field] { return *field; }, while_idle(d, [field, lo, hi](std::int64_t v) {
                         if (v < lo || v > hi) return fail(GC_ERR_INVALID_VALUE, "out of range");
                         *field = v;
                         return GC_ERROR{GC_ERR_SUCCESS};
                       }),
                       tip));
  };
  setting("SimSceneSeed", &s.scene_seed, 0, (std::int64_t{1} << 40), "Seed of the synthetic scene");
  setting("SimEncoderStep", &s.encoder_step, -1000000, 1000000, "Encoder counts per frame (0 = no encoder)");
  setting("SimCachedFrames", &s.cached_frames, 0, 100000, "0: render every frame; N: render frames 0..N-1 once, frame n shows n mod N");
  Feature wait = int_feature("SimWaitForBuffers", sim, 0, 1, [&s] { return std::int64_t{s.wait_for_buffers}; },
                             while_idle(d, [&s](std::int64_t v) {
                               s.wait_for_buffers = v != 0;
                               return GC_ERROR{GC_ERR_SUCCESS};
                             }),
                             "1: wait for a queued buffer instead of losing frames (an underrun), to measure a consumer");
  wait.kind = Feature::Kind::Boolean;
  m->add(std::move(wait));
  Feature pixels = int_feature("SimWritePixels", sim, 0, 1, [&s] { return std::int64_t{s.write_pixels}; },
                               while_idle(d, [&s](std::int64_t v) {
                                 s.write_pixels = v != 0;
                                 return GC_ERROR{GC_ERR_SUCCESS};
                               }),
                               "0: leave the pixels of each buffer as they are (a grabber's DMA costs the host nothing: this "
                               "measures a consumer alone)");
  pixels.kind = Feature::Kind::Boolean;
  m->add(std::move(pixels));
  auto live = [&](const char* name, std::atomic<std::int64_t>* field, const char* tip) {
    m->add(int_feature(name, sim, 0, 1000000, [field] { return field->load(); }, [field](std::int64_t v) {
      if (v < 0 || v > 1000000) return fail(GC_ERR_INVALID_VALUE, "out of range");
      field->store(v);
      return GC_ERROR{GC_ERR_SUCCESS};
    }, tip));
  };
  live("SimDropBufferEvery", &d->drop_every, "Every Nth buffer is lost (its id skipped, an EVENT_ERROR fired); 0 = never");
  live("SimIncompleteBufferEvery", &d->incomplete_every, "Every Nth buffer arrives incomplete (its first half of frames only); 0 = never");
  live("SimFailFrameEvery", &d->fail_every, "Every Nth frame is flagged corrupt in the frame information chunk; 0 = never");
  live("SimUnplugAfterBuffers", &d->unplug_after,
       "After this many buffers the device goes away: the stream stops and waits for a buffer fail (GC_ERR_IO) until the device is "
       "opened again; 0 = never");
  m->finish();
  d->map = std::move(m);
}

void build_plain_map(Module* mod, const std::string& model, std::vector<Feature> features) {
  auto m = std::make_unique<NodeMap>(kVendor, model, model + ".xml");
  for (auto& f : features) m->add(std::move(f));
  m->finish();
  mod->map = std::move(m);
}

// ---------------------------------------------------------------------------
// Streaming.
std::size_t Stream::frame_bytes() const {
  const Settings& s = device->settings;
  return static_cast<std::size_t>(s.width) * s.height * (s.pixel_format == kMono8 ? 1 : 2);
}
std::size_t Stream::payload_size() const {
  const Settings& s = device->settings;
  const auto n = static_cast<std::size_t>(s.frames_per_buffer);
  return n * frame_bytes() + (s.chunk_mode ? n * sizeof(FrameInfoRecord) : 0);
}

void Stream::deliver(Buffer* b) {
  // Under mu. With a NEW_BUFFER event registered the buffer goes to the
  // consumer through the event queue; otherwise it waits in the output queue.
  ++delivered;
  b->new_data = true;
  if (new_buffer_event) {
    b->state = Buffer::State::Delivered;
    EVENT_NEW_BUFFER_DATA data{b, b->user};
    std::vector<std::uint8_t> bytes(sizeof data);
    std::memcpy(bytes.data(), &data, sizeof data);
    new_buffer_event->push(std::move(bytes));
  } else {
    b->state = Buffer::State::Output;
    output.push_back(b);
  }
}

void fire_error(const std::shared_ptr<Event>& ev, GC_ERROR code, const std::string& text) {
  if (!ev) return;
  std::vector<std::uint8_t> bytes(sizeof(GC_ERROR) + text.size() + 1);
  std::memcpy(bytes.data(), &code, sizeof code);
  std::memcpy(bytes.data() + sizeof code, text.c_str(), text.size() + 1);
  ev->push(std::move(bytes));
}

void Stream::run() {
  const Settings s = snapshot;
  Device* d = device;
  const auto n = static_cast<std::uint64_t>(s.frames_per_buffer);
  const std::size_t fb = static_cast<std::size_t>(s.width) * s.height * (s.pixel_format == kMono8 ? 1 : 2);
  SyntheticConfig scene;
  scene.width = s.width;
  scene.frame_height = s.height;
  scene.frames = 0;
  scene.format = s.pixel_format == kMono8 ? PixelFormat::Mono8 : PixelFormat::Mono16;
  scene.seed = static_cast<std::uint64_t>(s.scene_seed);
  const SyntheticScanner scanner(scene);
  std::vector<std::uint8_t> cache(static_cast<std::size_t>(s.cached_frames) * fb);
  tbb::parallel_for(std::int64_t{0}, s.cached_frames, [&](std::int64_t f) {
    scanner.render(static_cast<std::uint64_t>(f), reinterpret_cast<std::byte*>(cache.data() + static_cast<std::size_t>(f) * fb));
  });
  const bool software = s.trigger_mode == 1 && s.trigger_source == 0;

  std::unique_lock lock(mu);
  // Frames flow once the camera is told to start (AcquisitionStart).
  while (!stop && !d->acquiring.load()) cv.wait_for(lock, std::chrono::milliseconds(5));
  const auto t0 = clock::now();
  const std::int64_t t0_ns = now_ns();
  std::uint64_t frame = 0, buffer_id = 0;
  auto frame_time = [&](std::uint64_t f) {
    return t0 + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(static_cast<double>(f) / d->frame_rate.load()));
  };
  std::vector<FrameInfoRecord> records(n);

  while (!stop && delivered < to_acquire) {
    if (const std::int64_t unplug = d->unplug_after.load(); unplug > 0 && buffer_id >= static_cast<std::uint64_t>(unplug)) {
      // The link is gone: no more buffers, and the consumer's next wait
      // fails (under mu, then the event's lock: deliver()'s order).
      if (new_buffer_event) {
        {
          std::lock_guard e(new_buffer_event->mu);
          new_buffer_event->device_gone = true;
        }
        new_buffer_event->cv.notify_all();
      }
      break;
    }
    Buffer* b = nullptr;
    if (input.empty() && s.wait_for_buffers) cv.wait(lock, [&] { return stop || !input.empty(); });
    if (stop) break;
    if (!input.empty()) {
      b = input.front();
      input.pop_front();
      b->state = Buffer::State::Filling;
    }
    const std::int64_t drop = d->drop_every.load(), incomplete = d->incomplete_every.load(), fail_every = d->fail_every.load();
    const bool lost = drop > 0 && buffer_id % static_cast<std::uint64_t>(drop) == static_cast<std::uint64_t>(drop) - 1;
    const std::uint64_t frames = b && !lost && incomplete > 0 &&
                                         buffer_id % static_cast<std::uint64_t>(incomplete) == static_cast<std::uint64_t>(incomplete) - 1
                                     ? n / 2
                                     : n;
    // The camera exposes the buffer's frames: wait for their time (or triggers).
    lock.unlock();
    for (std::uint64_t i = 0; i < n; ++i) {
      const std::uint64_t f = frame + i;
      std::int64_t ts = 0;
      if (software) {
        std::unique_lock wait(mu);
        cv.wait(wait, [&] { return stop || d->trigger_credits.load() > 0; });
        if (stop) break;
        d->trigger_credits.fetch_sub(1);
        ts = now_ns();
      } else {
        ts = t0_ns + std::chrono::duration_cast<std::chrono::nanoseconds>(frame_time(f) - t0).count();
      }
      records[i] = FrameInfoRecord{f, ts, static_cast<std::int64_t>(f) * s.encoder_step,
                                   fail_every > 0 && f % static_cast<std::uint64_t>(fail_every) == static_cast<std::uint64_t>(fail_every) - 1
                                       ? gentl::kFrameFailed
                                       : gentl::kFrameComplete,
                                   s.encoder_step != 0 ? gentl::kFrameHasEncoder : 0u};
    }
    if (b && !lost && s.write_pixels) {
      tbb::parallel_for(std::uint64_t{0}, frames, [&](std::uint64_t i) {
        std::uint8_t* dst = b->base + i * fb;
        if (s.cached_frames > 0)
          std::memcpy(dst, cache.data() + ((frame + i) % static_cast<std::uint64_t>(s.cached_frames)) * fb, fb);
        else
          scanner.render(frame + i, reinterpret_cast<std::byte*>(dst));
      });
    }
    if (b && !lost) {
      if (s.chunk_mode && frames == n) std::memcpy(b->base + n * fb, records.data(), n * sizeof(FrameInfoRecord));
    }
    lock.lock();
    // The buffer is complete when its last frame is exposed (a stop wakes us).
    if (!software) cv.wait_until(lock, frame_time(frame + n - 1), [&] { return stop; });
    if (stop) {
      if (b) {
        b->state = Buffer::State::Queued;
        input.push_front(b);
      }
      break;
    }
    if (!b) {
      ++underruns;  // the grabber had no buffer: these frames are gone
    } else if (lost) {
      b->state = Buffer::State::Queued;
      input.push_front(b);
      fire_error(error_event, GC_ERR_IO, "buffer " + std::to_string(buffer_id) + " lost (simulated link error)");
    } else {
      b->frame_id = buffer_id;
      b->timestamp_ns = records[0].timestamp_ns;
      b->width = static_cast<std::size_t>(s.width);
      b->height = n * static_cast<std::size_t>(s.height);
      b->delivered_height = frames * static_cast<std::size_t>(s.height);
      b->incomplete = frames < n;
      b->chunk_bytes = s.chunk_mode && frames == n ? n * sizeof(FrameInfoRecord) : 0;
      b->filled = frames * fb + b->chunk_bytes;
      b->pixel_format = s.pixel_format;
      deliver(b);
    }
    frame += n;
    ++buffer_id;
  }
}

void Stream::stop_worker() {
  {
    std::lock_guard l(mu);
    stop = true;
  }
  cv.notify_all();
  if (worker.joinable()) worker.join();
  std::lock_guard l(mu);
  running = false;
}

// ---------------------------------------------------------------------------
// Building and tearing down the object graph (under the library lock).
void forget(const Object* o) { lib().live.erase(o); }

void close_stream(Device* d) {
  if (!d->stream) return;
  d->stream->stop_worker();
  for (auto& b : d->stream->buffers) forget(b.get());
  for (auto* ev : {d->stream->new_buffer_event.get(), d->stream->error_event.get()})
    if (ev) {
      forget(ev);
      std::lock_guard l(ev->mu);
      ev->unregistered = true;
      ev->cv.notify_all();
    }
  forget(d->stream.get());
  d->stream.reset();
}

void close_device(Device* d) {
  close_stream(d);
  d->acquiring.store(false);
  if (d->remote) forget(d->remote.get());
  d->remote.reset();
  forget(d);
  d->open = false;
}

void close_interface(Interface* i) {
  for (auto& d : i->devices)
    if (d->open) close_device(d.get());
  forget(i);
  i->open = false;
}

void close_system() {
  auto& l = lib();
  if (!l.system) return;
  if (l.system->iface->open) close_interface(l.system->iface.get());
  forget(l.system.get());
  l.system.reset();
}

std::unique_ptr<System> make_system() {
  auto sys = std::make_unique<System>();
  sys->id = "stripeline-sim";
  build_plain_map(sys.get(), "StripelineSimSystem",
                  {text_feature("TLVendorName", "SystemInformation", [] { return std::string(kVendor); }),
                   text_feature("TLModelName", "SystemInformation", [] { return std::string("stripeline simulated producer"); }),
                   text_feature("TLID", "SystemInformation", [] { return std::string("stripeline-sim"); }),
                   text_feature("TLType", "SystemInformation", [] { return std::string(kTlType); })});
  auto iface = std::make_unique<Interface>();
  iface->id = "SL-SIM-IF0";
  build_plain_map(iface.get(), "StripelineSimInterface",
                  {text_feature("InterfaceID", "InterfaceInformation", [] { return std::string("SL-SIM-IF0"); }),
                   text_feature("InterfaceType", "InterfaceInformation", [] { return std::string(kTlType); })});
  int count = 1;
  if (const char* e = std::getenv("STRIPELINE_GENTL_SIM_DEVICES")) count = std::clamp(std::atoi(e), 1, 8);
  for (int i = 0; i < count; ++i) {
    auto d = std::make_unique<Device>();
    d->parent = iface.get();
    d->index = i;
    d->id = "SL-SIM-" + std::to_string(i);
    iface->devices.push_back(std::move(d));
  }
  sys->iface = std::move(iface);
  return sys;
}

std::string device_info_string(const Device* d, DEVICE_INFO_CMD cmd) {
  switch (cmd) {
    case DEVICE_INFO_ID: return d->id;
    case DEVICE_INFO_VENDOR: return kVendor;
    case DEVICE_INFO_MODEL: return "Simulated laser line grabber";
    case DEVICE_INFO_TLTYPE: return kTlType;
    case DEVICE_INFO_DISPLAYNAME: return "stripeline simulated grabber " + std::to_string(d->index);
    case DEVICE_INFO_USER_DEFINED_NAME: return "";
    case DEVICE_INFO_SERIAL_NUMBER: return d->serial();
    case DEVICE_INFO_VERSION: return STRIPELINE_VERSION;
    default: return {};
  }
}

GC_ERROR device_info(const Device* d, DEVICE_INFO_CMD cmd, INFO_DATATYPE* t, void* b, std::size_t* n) {
  if (cmd == DEVICE_INFO_ACCESS_STATUS)
    return put_i32(d->open ? DEVICE_ACCESS_STATUS_OPEN_READWRITE : DEVICE_ACCESS_STATUS_READWRITE, t, b, n);
  if (cmd == DEVICE_INFO_TIMESTAMP_FREQUENCY) return put_u64(1000000000ull, t, b, n);
  if (cmd < DEVICE_INFO_ID || cmd > DEVICE_INFO_VERSION) return fail(GC_ERR_NOT_IMPLEMENTED, "device info " + std::to_string(cmd));
  return put_string(device_info_string(d, cmd), t, b, n);
}

Device* find_device(Interface* i, const char* id) {
  if (!id) return nullptr;
  for (auto& d : i->devices)
    if (d->id == id) return d.get();
  return nullptr;
}

}  // namespace
}  // namespace stripeline::gentl_sim

// ---------------------------------------------------------------------------
// The C ABI.
using namespace stripeline::gentl_sim;

#define LOCKED                        \
  std::lock_guard guard(lib().mu);    \
  if (!lib().initialized) return fail(GC_ERR_NOT_INITIALIZED, "GCInitLib was not called")

extern "C" {

GC_ERROR GCInitLib(void) {
  std::lock_guard guard(lib().mu);
  if (lib().initialized) return fail(GC_ERR_RESOURCE_IN_USE, "GCInitLib was already called");
  lib().initialized = true;
  return GC_ERROR{GC_ERR_SUCCESS};
}

GC_ERROR GCCloseLib(void) {
  LOCKED;
  close_system();
  lib().initialized = false;
  return GC_ERROR{GC_ERR_SUCCESS};
}

GC_ERROR GCGetLastError(GC_ERROR* piErrorCode, char* sErrorText, size_t* piSize) {
  if (!piErrorCode || !piSize) return GC_ERR_INVALID_PARAMETER;
  *piErrorCode = t_last_error.code;
  const std::string& s = t_last_error.text;
  if (!sErrorText) {
    *piSize = s.size() + 1;
    return GC_ERROR{GC_ERR_SUCCESS};
  }
  if (*piSize < s.size() + 1) return GC_ERR_BUFFER_TOO_SMALL;
  std::memcpy(sErrorText, s.c_str(), s.size() + 1);
  *piSize = s.size() + 1;
  return GC_ERROR{GC_ERR_SUCCESS};
}

static GC_ERROR tl_info(TL_INFO_CMD cmd, INFO_DATATYPE* t, void* b, size_t* n) {
  switch (cmd) {
    case TL_INFO_ID: return put_string("stripeline-sim", t, b, n);
    case TL_INFO_VENDOR: return put_string(kVendor, t, b, n);
    case TL_INFO_MODEL: return put_string("stripeline simulated producer", t, b, n);
    case TL_INFO_VERSION: return put_string(STRIPELINE_VERSION, t, b, n);
    case TL_INFO_TLTYPE: return put_string(kTlType, t, b, n);
    case TL_INFO_NAME: return put_string("stripeline-sim.cti", t, b, n);
    case TL_INFO_PATHNAME: return put_string("stripeline-sim.cti", t, b, n);
    case TL_INFO_DISPLAYNAME: return put_string("stripeline simulated laser line grabber", t, b, n);
    case TL_INFO_CHAR_ENCODING: return put_i32(TL_CHAR_ENCODING_ASCII, t, b, n);
    case TL_INFO_GENTL_VER_MAJOR: return put<std::uint32_t>(INFO_DATATYPE_UINT32, GENTL_API_VERSION_MAJOR, t, b, n);
    case TL_INFO_GENTL_VER_MINOR: return put<std::uint32_t>(INFO_DATATYPE_UINT32, GENTL_API_VERSION_MINOR, t, b, n);
    default: return fail(GC_ERR_NOT_IMPLEMENTED, "TL info " + std::to_string(cmd));
  }
}

GC_ERROR GCGetInfo(TL_INFO_CMD iInfoCmd, INFO_DATATYPE* piType, void* pBuffer, size_t* piSize) {
  return tl_info(iInfoCmd, piType, pBuffer, piSize);  // allowed before GCInitLib
}

GC_ERROR GCReadPort(PORT_HANDLE hPort, uint64_t iAddress, void* pBuffer, size_t* piSize) {
  LOCKED;
  Module* m = as_port(hPort);
  if (!m) return fail(GC_ERR_INVALID_HANDLE, "not a port");
  if (!pBuffer || !piSize) return fail(GC_ERR_INVALID_PARAMETER, "null buffer or size");
  if (!m->map) return fail(GC_ERR_NOT_IMPLEMENTED, "this module has no registers");
  const GC_ERROR rc = m->map->read(iAddress, pBuffer, *piSize);
  return rc == GC_ERR_SUCCESS ? rc : fail(rc, m->map->last_error());
}

GC_ERROR GCWritePort(PORT_HANDLE hPort, uint64_t iAddress, const void* pBuffer, size_t* piSize) {
  LOCKED;
  Module* m = as_port(hPort);
  if (!m) return fail(GC_ERR_INVALID_HANDLE, "not a port");
  if (!pBuffer || !piSize) return fail(GC_ERR_INVALID_PARAMETER, "null buffer or size");
  if (!m->map) return fail(GC_ERR_NOT_IMPLEMENTED, "this module has no registers");
  t_last_error = {};
  const GC_ERROR rc = m->map->write(iAddress, pBuffer, *piSize);
  if (rc == GC_ERR_SUCCESS) return rc;
  // A setter's own message (set through fail()) is more precise than the map's.
  return t_last_error.code == rc ? rc : fail(rc, m->map->last_error());
}

GC_ERROR GCReadPortStacked(PORT_HANDLE hPort, PORT_REGISTER_STACK_ENTRY* pEntries, size_t* piNumEntries) {
  if (!pEntries || !piNumEntries) return fail(GC_ERR_INVALID_PARAMETER, "null entries");
  for (size_t i = 0; i < *piNumEntries; ++i) {
    size_t size = pEntries[i].Size;
    const GC_ERROR rc = GCReadPort(hPort, pEntries[i].Address, pEntries[i].pBuffer, &size);
    if (rc != GC_ERR_SUCCESS) {
      *piNumEntries = i;
      return rc;
    }
  }
  return GC_ERROR{GC_ERR_SUCCESS};
}

GC_ERROR GCWritePortStacked(PORT_HANDLE hPort, PORT_REGISTER_STACK_ENTRY* pEntries, size_t* piNumEntries) {
  if (!pEntries || !piNumEntries) return fail(GC_ERR_INVALID_PARAMETER, "null entries");
  for (size_t i = 0; i < *piNumEntries; ++i) {
    size_t size = pEntries[i].Size;
    const GC_ERROR rc = GCWritePort(hPort, pEntries[i].Address, pEntries[i].pBuffer, &size);
    if (rc != GC_ERR_SUCCESS) {
      *piNumEntries = i;
      return rc;
    }
  }
  return GC_ERROR{GC_ERR_SUCCESS};
}

GC_ERROR GCGetPortURL(PORT_HANDLE hPort, char* sURL, size_t* piSize) {
  LOCKED;
  Module* m = as_port(hPort);
  if (!m) return fail(GC_ERR_INVALID_HANDLE, "not a port");
  if (!m->map) return fail(GC_ERR_NOT_AVAILABLE, "this module has no node map");
  return put_string(m->map->url(), nullptr, sURL, piSize);
}

GC_ERROR GCGetNumPortURLs(PORT_HANDLE hPort, uint32_t* piNumURLs) {
  LOCKED;
  Module* m = as_port(hPort);
  if (!m) return fail(GC_ERR_INVALID_HANDLE, "not a port");
  if (!piNumURLs) return fail(GC_ERR_INVALID_PARAMETER, "null count");
  *piNumURLs = m->map ? 1 : 0;
  return GC_ERROR{GC_ERR_SUCCESS};
}

GC_ERROR GCGetPortURLInfo(PORT_HANDLE hPort, uint32_t iURLIndex, URL_INFO_CMD iInfoCmd, INFO_DATATYPE* piType, void* pBuffer,
                          size_t* piSize) {
  LOCKED;
  Module* m = as_port(hPort);
  if (!m) return fail(GC_ERR_INVALID_HANDLE, "not a port");
  if (!m->map || iURLIndex != 0) return fail(GC_ERR_INVALID_INDEX, "URL index " + std::to_string(iURLIndex));
  switch (iInfoCmd) {
    case URL_INFO_URL: return put_string(m->map->url(), piType, pBuffer, piSize);
    case URL_INFO_SCHEMA_VER_MAJOR: return put_i32(1, piType, pBuffer, piSize);
    case URL_INFO_SCHEMA_VER_MINOR: return put_i32(1, piType, pBuffer, piSize);
    case URL_INFO_FILE_VER_MAJOR: return put_i32(1, piType, pBuffer, piSize);
    case URL_INFO_FILE_VER_MINOR:
    case URL_INFO_FILE_VER_SUBMINOR: return put_i32(0, piType, pBuffer, piSize);
    case URL_INFO_FILE_REGISTER_ADDRESS: return put_u64(NodeMap::kFileAddress, piType, pBuffer, piSize);
    case URL_INFO_SCHEME: return put_i32(URL_SCHEME_LOCAL, piType, pBuffer, piSize);
    case URL_INFO_FILENAME: return put_string(m->map->file_name(), piType, pBuffer, piSize);
    default: return fail(GC_ERR_NOT_IMPLEMENTED, "URL info " + std::to_string(iInfoCmd));
  }
}

GC_ERROR GCGetPortInfo(PORT_HANDLE hPort, PORT_INFO_CMD iInfoCmd, INFO_DATATYPE* piType, void* pBuffer, size_t* piSize) {
  LOCKED;
  Module* m = as_port(hPort);
  if (!m) return fail(GC_ERR_INVALID_HANDLE, "not a port");
  switch (iInfoCmd) {
    case PORT_INFO_ID: return put_string(m->id, piType, pBuffer, piSize);
    case PORT_INFO_VENDOR: return put_string(kVendor, piType, pBuffer, piSize);
    case PORT_INFO_MODEL: return put_string(m->kind == Kind::Remote ? "Simulated laser line camera" : "stripeline simulated producer", piType, pBuffer, piSize);
    case PORT_INFO_TLTYPE: return put_string(kTlType, piType, pBuffer, piSize);
    case PORT_INFO_MODULE: return put_string(m->module_name(), piType, pBuffer, piSize);
    case PORT_INFO_LITTLE_ENDIAN: return put_bool(true, piType, pBuffer, piSize);
    case PORT_INFO_BIG_ENDIAN: return put_bool(false, piType, pBuffer, piSize);
    case PORT_INFO_ACCESS_READ:
    case PORT_INFO_ACCESS_WRITE: return put_bool(m->map != nullptr, piType, pBuffer, piSize);
    case PORT_INFO_ACCESS_NA: return put_bool(false, piType, pBuffer, piSize);
    case PORT_INFO_ACCESS_NI: return put_bool(m->map == nullptr, piType, pBuffer, piSize);
    case PORT_INFO_VERSION: return put_string("1.0", piType, pBuffer, piSize);
    case PORT_INFO_PORTNAME: return put_string("Device", piType, pBuffer, piSize);
    default: return fail(GC_ERR_NOT_IMPLEMENTED, "port info " + std::to_string(iInfoCmd));
  }
}

// --- events ---
GC_ERROR GCRegisterEvent(EVENTSRC_HANDLE hEventSrc, EVENT_TYPE iEventID, EVENT_HANDLE* phEvent) {
  LOCKED;
  Stream* s = as<Stream>(hEventSrc, Kind::Stream);
  if (!s) return fail(GC_ERR_NOT_IMPLEMENTED, "only data streams raise events here");
  if (!phEvent) return fail(GC_ERR_INVALID_PARAMETER, "null event handle");
  std::shared_ptr<Event>* slot = iEventID == EVENT_NEW_BUFFER ? &s->new_buffer_event : iEventID == EVENT_ERROR ? &s->error_event : nullptr;
  if (!slot) return fail(GC_ERR_NOT_IMPLEMENTED, "event type " + std::to_string(iEventID));
  std::lock_guard l(s->mu);
  if (*slot) return fail(GC_ERR_RESOURCE_IN_USE, "this event is already registered");
  *slot = std::make_shared<Event>(iEventID);
  lib().live.insert(slot->get());
  *phEvent = slot->get();
  return GC_ERROR{GC_ERR_SUCCESS};
}

GC_ERROR GCUnregisterEvent(EVENTSRC_HANDLE hEventSrc, EVENT_TYPE iEventID) {
  LOCKED;
  Stream* s = as<Stream>(hEventSrc, Kind::Stream);
  if (!s) return fail(GC_ERR_INVALID_HANDLE, "not a data stream");
  std::lock_guard l(s->mu);
  std::shared_ptr<Event>* slot = iEventID == EVENT_NEW_BUFFER ? &s->new_buffer_event : iEventID == EVENT_ERROR ? &s->error_event : nullptr;
  if (!slot || !*slot) return fail(GC_ERR_NOT_AVAILABLE, "this event is not registered");
  {
    std::lock_guard e((*slot)->mu);
    (*slot)->unregistered = true;
  }
  (*slot)->cv.notify_all();
  forget(slot->get());
  slot->reset();
  return GC_ERROR{GC_ERR_SUCCESS};
}

GC_ERROR EventGetData(EVENT_HANDLE hEvent, void* pBuffer, size_t* piSize, uint64_t iTimeout) {
  std::shared_ptr<Event> ev;
  {
    LOCKED;
    Event* e = as<Event>(hEvent, Kind::Event);
    if (!e) return fail(GC_ERR_INVALID_HANDLE, "not an event");
    // Hold it alive while waiting (its stream may close meanwhile).
    if (lib().system)
      for (auto& d : lib().system->iface->devices)
        if (d->stream) {
          if (d->stream->new_buffer_event.get() == e) ev = d->stream->new_buffer_event;
          if (d->stream->error_event.get() == e) ev = d->stream->error_event;
        }
    if (!ev) return fail(GC_ERR_INVALID_HANDLE, "not an event");
  }
  if (!piSize) return fail(GC_ERR_INVALID_PARAMETER, "null size");
  std::unique_lock l(ev->mu);
  auto ready = [&] { return !ev->queue.empty() || ev->kills > 0 || ev->unregistered || ev->device_gone; };
  if (iTimeout == GENTL_INFINITE)
    ev->cv.wait(l, ready);
  else if (!ev->cv.wait_for(l, std::chrono::milliseconds(iTimeout), ready))
    return fail(GC_ERR_TIMEOUT, "no event within " + std::to_string(iTimeout) + " ms");
  if (ev->kills > 0) {
    --ev->kills;
    return fail(GC_ERR_ABORT, "EventKill");
  }
  if (ev->device_gone && ev->queue.empty()) return fail(GC_ERR_IO, "the device is gone (SimUnplugAfterBuffers)");
  if (ev->queue.empty()) return fail(GC_ERR_ABORT, "the event was unregistered");
  const auto& data = ev->queue.front();
  if (!pBuffer || *piSize < data.size()) {
    *piSize = data.size();
    return pBuffer ? fail(GC_ERR_BUFFER_TOO_SMALL, "event data needs " + std::to_string(data.size()) + " bytes") : GC_ERR_SUCCESS;
  }
  std::memcpy(pBuffer, data.data(), data.size());
  *piSize = data.size();
  ev->queue.pop_front();
  return GC_ERROR{GC_ERR_SUCCESS};
}

GC_ERROR EventGetDataInfo(EVENT_HANDLE hEvent, const void* pInBuffer, size_t iInSize, EVENT_DATA_INFO_CMD iInfoCmd, INFO_DATATYPE* piType,
                          void* pOutBuffer, size_t* piOutSize) {
  LOCKED;
  Event* e = as<Event>(hEvent, Kind::Event);
  if (!e) return fail(GC_ERR_INVALID_HANDLE, "not an event");
  if (!pInBuffer) return fail(GC_ERR_INVALID_PARAMETER, "null event data");
  if (e->type == EVENT_NEW_BUFFER) {
    if (iInSize < sizeof(EVENT_NEW_BUFFER_DATA)) return fail(GC_ERR_INVALID_PARAMETER, "event data too short");
    EVENT_NEW_BUFFER_DATA d;
    std::memcpy(&d, pInBuffer, sizeof d);
    if (iInfoCmd == EVENT_DATA_ID) return put_ptr(d.BufferHandle, piType, pOutBuffer, piOutSize);
    if (iInfoCmd == EVENT_DATA_VALUE) return put_ptr(d.pUserPointer, piType, pOutBuffer, piOutSize);
  } else {
    if (iInSize < sizeof(GC_ERROR) + 1) return fail(GC_ERR_INVALID_PARAMETER, "event data too short");
    GC_ERROR code;
    std::memcpy(&code, pInBuffer, sizeof code);
    if (iInfoCmd == EVENT_DATA_ID) return put_i32(code, piType, pOutBuffer, piOutSize);
    if (iInfoCmd == EVENT_DATA_VALUE)
      return put_string(std::string(static_cast<const char*>(pInBuffer) + sizeof code, strnlen(static_cast<const char*>(pInBuffer) + sizeof code, iInSize - sizeof code)),
                        piType, pOutBuffer, piOutSize);
  }
  return fail(GC_ERR_NOT_IMPLEMENTED, "event data info " + std::to_string(iInfoCmd));
}

GC_ERROR EventGetInfo(EVENT_HANDLE hEvent, EVENT_INFO_CMD iInfoCmd, INFO_DATATYPE* piType, void* pBuffer, size_t* piSize) {
  LOCKED;
  Event* e = as<Event>(hEvent, Kind::Event);
  if (!e) return fail(GC_ERR_INVALID_HANDLE, "not an event");
  std::lock_guard l(e->mu);
  switch (iInfoCmd) {
    case EVENT_EVENT_TYPE: return put_i32(e->type, piType, pBuffer, piSize);
    case EVENT_NUM_IN_QUEUE: return put_size(e->queue.size(), piType, pBuffer, piSize);
    case EVENT_NUM_FIRED: return put_u64(e->fired, piType, pBuffer, piSize);
    case EVENT_SIZE_MAX: return put_size(e->type == EVENT_NEW_BUFFER ? sizeof(EVENT_NEW_BUFFER_DATA) : 1024, piType, pBuffer, piSize);
    case EVENT_INFO_DATA_SIZE_MAX: return put_size(1024, piType, pBuffer, piSize);
    default: return fail(GC_ERR_NOT_IMPLEMENTED, "event info " + std::to_string(iInfoCmd));
  }
}

GC_ERROR EventFlush(EVENT_HANDLE hEvent) {
  LOCKED;
  Event* e = as<Event>(hEvent, Kind::Event);
  if (!e) return fail(GC_ERR_INVALID_HANDLE, "not an event");
  std::lock_guard l(e->mu);
  e->queue.clear();
  return GC_ERROR{GC_ERR_SUCCESS};
}

GC_ERROR EventKill(EVENT_HANDLE hEvent) {
  LOCKED;
  Event* e = as<Event>(hEvent, Kind::Event);
  if (!e) return fail(GC_ERR_INVALID_HANDLE, "not an event");
  {
    std::lock_guard l(e->mu);
    ++e->kills;
  }
  e->cv.notify_all();
  return GC_ERROR{GC_ERR_SUCCESS};
}

// --- system ---
GC_ERROR TLOpen(TL_HANDLE* phTL) {
  LOCKED;
  if (!phTL) return fail(GC_ERR_INVALID_PARAMETER, "null handle");
  if (lib().system) return fail(GC_ERR_RESOURCE_IN_USE, "the system module is already open");
  lib().system = make_system();
  lib().live.insert(lib().system.get());
  *phTL = lib().system.get();
  return GC_ERROR{GC_ERR_SUCCESS};
}

GC_ERROR TLClose(TL_HANDLE hTL) {
  LOCKED;
  if (!as<System>(hTL, Kind::System)) return fail(GC_ERR_INVALID_HANDLE, "not the system module");
  close_system();
  return GC_ERROR{GC_ERR_SUCCESS};
}

GC_ERROR TLGetInfo(TL_HANDLE hTL, TL_INFO_CMD iInfoCmd, INFO_DATATYPE* piType, void* pBuffer, size_t* piSize) {
  LOCKED;
  if (!as<System>(hTL, Kind::System)) return fail(GC_ERR_INVALID_HANDLE, "not the system module");
  return tl_info(iInfoCmd, piType, pBuffer, piSize);
}

GC_ERROR TLGetNumInterfaces(TL_HANDLE hTL, uint32_t* piNumIfaces) {
  LOCKED;
  if (!as<System>(hTL, Kind::System)) return fail(GC_ERR_INVALID_HANDLE, "not the system module");
  if (!piNumIfaces) return fail(GC_ERR_INVALID_PARAMETER, "null count");
  *piNumIfaces = 1;
  return GC_ERROR{GC_ERR_SUCCESS};
}

GC_ERROR TLGetInterfaceID(TL_HANDLE hTL, uint32_t iIndex, char* sID, size_t* piSize) {
  LOCKED;
  System* s = as<System>(hTL, Kind::System);
  if (!s) return fail(GC_ERR_INVALID_HANDLE, "not the system module");
  if (iIndex != 0) return fail(GC_ERR_INVALID_INDEX, "interface index " + std::to_string(iIndex));
  return put_string(s->iface->id, nullptr, sID, piSize);
}

GC_ERROR TLGetInterfaceInfo(TL_HANDLE hTL, const char* sIfaceID, INTERFACE_INFO_CMD iInfoCmd, INFO_DATATYPE* piType, void* pBuffer,
                            size_t* piSize) {
  LOCKED;
  System* s = as<System>(hTL, Kind::System);
  if (!s) return fail(GC_ERR_INVALID_HANDLE, "not the system module");
  if (!sIfaceID || s->iface->id != sIfaceID) return fail(GC_ERR_INVALID_ID, "no interface '" + std::string(sIfaceID ? sIfaceID : "") + "'");
  switch (iInfoCmd) {
    case INTERFACE_INFO_ID: return put_string(s->iface->id, piType, pBuffer, piSize);
    case INTERFACE_INFO_DISPLAYNAME: return put_string("stripeline simulated grabber board", piType, pBuffer, piSize);
    case INTERFACE_INFO_TLTYPE: return put_string(kTlType, piType, pBuffer, piSize);
    default: return fail(GC_ERR_NOT_IMPLEMENTED, "interface info " + std::to_string(iInfoCmd));
  }
}

GC_ERROR TLOpenInterface(TL_HANDLE hTL, const char* sIfaceID, IF_HANDLE* phIface) {
  LOCKED;
  System* s = as<System>(hTL, Kind::System);
  if (!s) return fail(GC_ERR_INVALID_HANDLE, "not the system module");
  if (!phIface) return fail(GC_ERR_INVALID_PARAMETER, "null handle");
  if (!sIfaceID || s->iface->id != sIfaceID) return fail(GC_ERR_INVALID_ID, "no interface '" + std::string(sIfaceID ? sIfaceID : "") + "'");
  if (s->iface->open) return fail(GC_ERR_RESOURCE_IN_USE, "the interface is already open");
  s->iface->open = true;
  lib().live.insert(s->iface.get());
  *phIface = s->iface.get();
  return GC_ERROR{GC_ERR_SUCCESS};
}

GC_ERROR TLUpdateInterfaceList(TL_HANDLE hTL, bool8_t* pbChanged, uint64_t) {
  LOCKED;
  if (!as<System>(hTL, Kind::System)) return fail(GC_ERR_INVALID_HANDLE, "not the system module");
  if (pbChanged) *pbChanged = 0;
  return GC_ERROR{GC_ERR_SUCCESS};
}

GC_ERROR IFGetParentTL(IF_HANDLE hIface, TL_HANDLE* phSystem) {
  LOCKED;
  if (!as<Interface>(hIface, Kind::Interface) || !phSystem) return fail(GC_ERR_INVALID_HANDLE, "not an interface");
  *phSystem = lib().system.get();
  return GC_ERROR{GC_ERR_SUCCESS};
}

// --- interface ---
GC_ERROR IFClose(IF_HANDLE hIface) {
  LOCKED;
  Interface* i = as<Interface>(hIface, Kind::Interface);
  if (!i) return fail(GC_ERR_INVALID_HANDLE, "not an interface");
  close_interface(i);
  return GC_ERROR{GC_ERR_SUCCESS};
}

GC_ERROR IFGetInfo(IF_HANDLE hIface, INTERFACE_INFO_CMD iInfoCmd, INFO_DATATYPE* piType, void* pBuffer, size_t* piSize) {
  Interface* i = nullptr;
  {
    LOCKED;
    i = as<Interface>(hIface, Kind::Interface);
    if (!i) return fail(GC_ERR_INVALID_HANDLE, "not an interface");
  }
  return TLGetInterfaceInfo(lib().system.get(), i->id.c_str(), iInfoCmd, piType, pBuffer, piSize);
}

GC_ERROR IFGetNumDevices(IF_HANDLE hIface, uint32_t* piNumDevices) {
  LOCKED;
  Interface* i = as<Interface>(hIface, Kind::Interface);
  if (!i) return fail(GC_ERR_INVALID_HANDLE, "not an interface");
  if (!piNumDevices) return fail(GC_ERR_INVALID_PARAMETER, "null count");
  *piNumDevices = static_cast<uint32_t>(i->devices.size());
  return GC_ERROR{GC_ERR_SUCCESS};
}

GC_ERROR IFGetDeviceID(IF_HANDLE hIface, uint32_t iIndex, char* sIDeviceID, size_t* piSize) {
  LOCKED;
  Interface* i = as<Interface>(hIface, Kind::Interface);
  if (!i) return fail(GC_ERR_INVALID_HANDLE, "not an interface");
  if (iIndex >= i->devices.size()) return fail(GC_ERR_INVALID_INDEX, "device index " + std::to_string(iIndex));
  return put_string(i->devices[iIndex]->id, nullptr, sIDeviceID, piSize);
}

GC_ERROR IFUpdateDeviceList(IF_HANDLE hIface, bool8_t* pbChanged, uint64_t) {
  LOCKED;
  if (!as<Interface>(hIface, Kind::Interface)) return fail(GC_ERR_INVALID_HANDLE, "not an interface");
  if (pbChanged) *pbChanged = 0;
  return GC_ERROR{GC_ERR_SUCCESS};
}

GC_ERROR IFGetDeviceInfo(IF_HANDLE hIface, const char* sDeviceID, DEVICE_INFO_CMD iInfoCmd, INFO_DATATYPE* piType, void* pBuffer,
                         size_t* piSize) {
  LOCKED;
  Interface* i = as<Interface>(hIface, Kind::Interface);
  if (!i) return fail(GC_ERR_INVALID_HANDLE, "not an interface");
  Device* d = find_device(i, sDeviceID);
  if (!d) return fail(GC_ERR_INVALID_ID, "no device '" + std::string(sDeviceID ? sDeviceID : "") + "'");
  return device_info(d, iInfoCmd, piType, pBuffer, piSize);
}

GC_ERROR IFOpenDevice(IF_HANDLE hIface, const char* sDeviceID, DEVICE_ACCESS_FLAGS iOpenFlag, DEV_HANDLE* phDevice) {
  LOCKED;
  Interface* i = as<Interface>(hIface, Kind::Interface);
  if (!i) return fail(GC_ERR_INVALID_HANDLE, "not an interface");
  if (!phDevice) return fail(GC_ERR_INVALID_PARAMETER, "null handle");
  Device* d = find_device(i, sDeviceID);
  if (!d) return fail(GC_ERR_INVALID_ID, "no device '" + std::string(sDeviceID ? sDeviceID : "") + "'");
  if (iOpenFlag != DEVICE_ACCESS_CONTROL && iOpenFlag != DEVICE_ACCESS_EXCLUSIVE && iOpenFlag != DEVICE_ACCESS_READONLY)
    return fail(GC_ERR_INVALID_PARAMETER, "access flag " + std::to_string(iOpenFlag));
  if (d->open) return fail(GC_ERR_RESOURCE_IN_USE, "device '" + d->id + "' is already open");
  d->settings = Settings{};
  d->frame_rate.store(d->settings.frame_rate);
  d->drop_every.store(0);
  d->incomplete_every.store(0);
  d->fail_every.store(0);
  d->unplug_after.store(0);
  d->trigger_credits.store(0);
  d->acquiring.store(false);
  d->remote = std::make_unique<Remote>();
  d->remote->device = d;
  d->remote->id = d->id + "-camera";
  build_camera_map(d);
  build_grabber_map(d);
  d->open = true;
  lib().live.insert(d);
  lib().live.insert(d->remote.get());
  *phDevice = d;
  return GC_ERROR{GC_ERR_SUCCESS};
}

// --- device ---
GC_ERROR DevGetPort(DEV_HANDLE hDevice, PORT_HANDLE* phRemoteDevice) {
  LOCKED;
  Device* d = as<Device>(hDevice, Kind::Device);
  if (!d) return fail(GC_ERR_INVALID_HANDLE, "not a device");
  if (!phRemoteDevice) return fail(GC_ERR_INVALID_PARAMETER, "null handle");
  *phRemoteDevice = d->remote.get();
  return GC_ERROR{GC_ERR_SUCCESS};
}

GC_ERROR DevGetNumDataStreams(DEV_HANDLE hDevice, uint32_t* piNumDataStreams) {
  LOCKED;
  if (!as<Device>(hDevice, Kind::Device)) return fail(GC_ERR_INVALID_HANDLE, "not a device");
  if (!piNumDataStreams) return fail(GC_ERR_INVALID_PARAMETER, "null count");
  *piNumDataStreams = 1;
  return GC_ERROR{GC_ERR_SUCCESS};
}

GC_ERROR DevGetDataStreamID(DEV_HANDLE hDevice, uint32_t iIndex, char* sDataStreamID, size_t* piSize) {
  LOCKED;
  if (!as<Device>(hDevice, Kind::Device)) return fail(GC_ERR_INVALID_HANDLE, "not a device");
  if (iIndex != 0) return fail(GC_ERR_INVALID_INDEX, "stream index " + std::to_string(iIndex));
  return put_string("Stream0", nullptr, sDataStreamID, piSize);
}

GC_ERROR DevOpenDataStream(DEV_HANDLE hDevice, const char* sDataStreamID, DS_HANDLE* phDataStream) {
  LOCKED;
  Device* d = as<Device>(hDevice, Kind::Device);
  if (!d) return fail(GC_ERR_INVALID_HANDLE, "not a device");
  if (!phDataStream) return fail(GC_ERR_INVALID_PARAMETER, "null handle");
  if (!sDataStreamID || std::string(sDataStreamID) != "Stream0") return fail(GC_ERR_INVALID_ID, "no data stream '" + std::string(sDataStreamID ? sDataStreamID : "") + "'");
  if (d->stream) return fail(GC_ERR_RESOURCE_IN_USE, "the data stream is already open");
  d->stream = std::make_unique<Stream>();
  Stream* s = d->stream.get();
  s->device = d;
  s->id = "Stream0";
  build_plain_map(s, "StripelineSimStream",
                  {text_feature("StreamID", "StreamInformation", [] { return std::string("Stream0"); }),
                   int_feature("StreamAnnouncedBufferCount", "BufferHandlingControl", 0, 0,
                               [s] {
                                 std::lock_guard l(s->mu);
                                 return static_cast<std::int64_t>(s->buffers.size());
                               },
                               nullptr),
                   int_feature("StreamDeliveredFrameCount", "StreamInformation", 0, 0,
                               [s] {
                                 std::lock_guard l(s->mu);
                                 return static_cast<std::int64_t>(s->delivered);
                               },
                               nullptr)});
  lib().live.insert(s);
  *phDataStream = s;
  return GC_ERROR{GC_ERR_SUCCESS};
}

GC_ERROR DevGetInfo(DEV_HANDLE hDevice, DEVICE_INFO_CMD iInfoCmd, INFO_DATATYPE* piType, void* pBuffer, size_t* piSize) {
  LOCKED;
  Device* d = as<Device>(hDevice, Kind::Device);
  if (!d) return fail(GC_ERR_INVALID_HANDLE, "not a device");
  return device_info(d, iInfoCmd, piType, pBuffer, piSize);
}

GC_ERROR DevGetParentIF(DEV_HANDLE hDevice, IF_HANDLE* phIface) {
  LOCKED;
  Device* d = as<Device>(hDevice, Kind::Device);
  if (!d || !phIface) return fail(GC_ERR_INVALID_HANDLE, "not a device");
  *phIface = d->parent;
  return GC_ERROR{GC_ERR_SUCCESS};
}

GC_ERROR DevClose(DEV_HANDLE hDevice) {
  LOCKED;
  Device* d = as<Device>(hDevice, Kind::Device);
  if (!d) return fail(GC_ERR_INVALID_HANDLE, "not a device");
  close_device(d);
  return GC_ERROR{GC_ERR_SUCCESS};
}

// --- data stream ---
#define STREAM(h)                                            \
  LOCKED;                                                    \
  Stream* s = as<Stream>(h, Kind::Stream);                   \
  if (!s) return fail(GC_ERR_INVALID_HANDLE, "not a data stream")

static GC_ERROR announce(Stream* s, std::uint8_t* base, size_t size, void* priv, bool allocated, BUFFER_HANDLE* phBuffer) {
  auto b = std::make_unique<Buffer>();
  b->stream = s;
  b->base = base;
  b->size = size;
  b->user = priv;
  b->allocated = allocated;
  *phBuffer = b.get();
  lib().live.insert(b.get());
  std::lock_guard l(s->mu);
  s->buffers.push_back(std::move(b));
  return GC_ERROR{GC_ERR_SUCCESS};
}

GC_ERROR DSAnnounceBuffer(DS_HANDLE hDataStream, void* pBuffer, size_t iSize, void* pPrivate, BUFFER_HANDLE* phBuffer) {
  STREAM(hDataStream);
  if (!pBuffer || !phBuffer || iSize == 0) return fail(GC_ERR_INVALID_PARAMETER, "null buffer or handle, or size 0");
  {
    std::lock_guard l(s->mu);
    for (auto& b : s->buffers)
      if (b->base == pBuffer) return fail(GC_ERR_RESOURCE_IN_USE, "this memory is already announced");
  }
  return announce(s, static_cast<std::uint8_t*>(pBuffer), iSize, pPrivate, false, phBuffer);
}

GC_ERROR DSAllocAndAnnounceBuffer(DS_HANDLE hDataStream, size_t iSize, void* pPrivate, BUFFER_HANDLE* phBuffer) {
  STREAM(hDataStream);
  if (!phBuffer || iSize == 0) return fail(GC_ERR_INVALID_PARAMETER, "null handle or size 0");
  void* p = std::aligned_alloc(4096, (iSize + 4095) / 4096 * 4096);
  if (!p) return fail(GC_ERR_OUT_OF_MEMORY, "cannot allocate " + std::to_string(iSize) + " bytes");
  return announce(s, static_cast<std::uint8_t*>(p), iSize, pPrivate, true, phBuffer);
}

GC_ERROR DSFlushQueue(DS_HANDLE hDataStream, ACQ_QUEUE_TYPE iOperation) {
  STREAM(hDataStream);
  std::lock_guard l(s->mu);
  auto to_input = [&](Buffer* b) {
    b->state = Buffer::State::Queued;
    s->input.push_back(b);
  };
  switch (iOperation) {
    case ACQ_QUEUE_INPUT_TO_OUTPUT:
      for (Buffer* b : s->input) {
        b->state = Buffer::State::Output;
        b->new_data = false;
        s->output.push_back(b);
      }
      s->input.clear();
      break;
    case ACQ_QUEUE_OUTPUT_DISCARD:
      for (Buffer* b : s->output) b->state = Buffer::State::Announced;
      s->output.clear();
      break;
    case ACQ_QUEUE_ALL_TO_INPUT:
      for (Buffer* b : s->output) to_input(b);
      s->output.clear();
      [[fallthrough]];
    case ACQ_QUEUE_UNQUEUED_TO_INPUT:
      for (auto& b : s->buffers)
        if (b->state == Buffer::State::Announced || b->state == Buffer::State::Delivered) to_input(b.get());
      break;
    case ACQ_QUEUE_ALL_DISCARD:
      for (Buffer* b : s->input) b->state = Buffer::State::Announced;
      for (Buffer* b : s->output) b->state = Buffer::State::Announced;
      s->input.clear();
      s->output.clear();
      if (s->new_buffer_event) {
        std::lock_guard e(s->new_buffer_event->mu);
        s->new_buffer_event->queue.clear();
      }
      for (auto& b : s->buffers)
        if (b->state == Buffer::State::Delivered) b->state = Buffer::State::Announced;
      break;
    default: return fail(GC_ERR_INVALID_PARAMETER, "flush operation " + std::to_string(iOperation));
  }
  s->cv.notify_all();
  return GC_ERROR{GC_ERR_SUCCESS};
}

GC_ERROR DSStartAcquisition(DS_HANDLE hDataStream, ACQ_START_FLAGS, uint64_t iNumToAcquire) {
  STREAM(hDataStream);
  std::lock_guard l(s->mu);
  if (s->running) return fail(GC_ERR_RESOURCE_IN_USE, "the stream is already acquiring");
  if (s->buffers.empty()) return fail(GC_ERR_RESOURCE_EXHAUSTED, "no buffer announced");
  const std::size_t need = s->payload_size();
  for (auto& b : s->buffers)
    if (b->size < need)
      return fail(GC_ERR_INVALID_BUFFER, "a buffer of " + std::to_string(b->size) + " bytes is smaller than the payload size " + std::to_string(need));
  s->snapshot = s->device->settings;
  s->to_acquire = iNumToAcquire == 0 ? GENTL_INFINITE : iNumToAcquire;
  s->delivered = 0;
  s->stop = false;
  s->running = true;
  ++s->started;
  try {
    s->worker = std::thread([s] { s->run(); });
  } catch (const std::exception& e) {
    s->running = false;
    return fail(GC_ERR_ERROR, std::string("cannot start the acquisition thread: ") + e.what());
  }
  return GC_ERROR{GC_ERR_SUCCESS};
}

GC_ERROR DSStopAcquisition(DS_HANDLE hDataStream, ACQ_STOP_FLAGS) {
  STREAM(hDataStream);
  {
    std::lock_guard l(s->mu);
    if (!s->running) return fail(GC_ERR_RESOURCE_IN_USE, "the stream is not acquiring");
  }
  s->stop_worker();
  return GC_ERROR{GC_ERR_SUCCESS};
}

GC_ERROR DSGetInfo(DS_HANDLE hDataStream, STREAM_INFO_CMD iInfoCmd, INFO_DATATYPE* piType, void* pBuffer, size_t* piSize) {
  STREAM(hDataStream);
  std::lock_guard l(s->mu);
  switch (iInfoCmd) {
    case STREAM_INFO_ID: return put_string(s->id, piType, pBuffer, piSize);
    case STREAM_INFO_NUM_DELIVERED: return put_u64(s->delivered, piType, pBuffer, piSize);
    case STREAM_INFO_NUM_UNDERRUN: return put_u64(s->underruns, piType, pBuffer, piSize);
    case STREAM_INFO_NUM_ANNOUNCED: return put_size(s->buffers.size(), piType, pBuffer, piSize);
    case STREAM_INFO_NUM_QUEUED: return put_size(s->input.size(), piType, pBuffer, piSize);
    case STREAM_INFO_NUM_AWAIT_DELIVERY: return put_size(s->output.size(), piType, pBuffer, piSize);
    case STREAM_INFO_NUM_STARTED: return put_u64(s->started, piType, pBuffer, piSize);
    case STREAM_INFO_PAYLOAD_SIZE: return put_size(s->payload_size(), piType, pBuffer, piSize);
    case STREAM_INFO_IS_GRABBING: return put_bool(s->running, piType, pBuffer, piSize);
    case STREAM_INFO_DEFINES_PAYLOADSIZE: return put_bool(true, piType, pBuffer, piSize);
    case STREAM_INFO_TLTYPE: return put_string(kTlType, piType, pBuffer, piSize);
    case STREAM_INFO_NUM_CHUNKS_MAX: return put_size(1, piType, pBuffer, piSize);
    case STREAM_INFO_BUF_ANNOUNCE_MIN: return put_size(1, piType, pBuffer, piSize);
    case STREAM_INFO_BUF_ALIGNMENT: return put_size(1, piType, pBuffer, piSize);
    default: return fail(GC_ERR_NOT_IMPLEMENTED, "stream info " + std::to_string(iInfoCmd));
  }
}

GC_ERROR DSGetBufferID(DS_HANDLE hDataStream, uint32_t iIndex, BUFFER_HANDLE* phBuffer) {
  STREAM(hDataStream);
  std::lock_guard l(s->mu);
  if (!phBuffer) return fail(GC_ERR_INVALID_PARAMETER, "null handle");
  if (iIndex >= s->buffers.size()) return fail(GC_ERR_INVALID_INDEX, "buffer index " + std::to_string(iIndex));
  *phBuffer = s->buffers[iIndex].get();
  return GC_ERROR{GC_ERR_SUCCESS};
}

GC_ERROR DSGetParentDev(DS_HANDLE hDataStream, DEV_HANDLE* phDevice) {
  STREAM(hDataStream);
  if (!phDevice) return fail(GC_ERR_INVALID_PARAMETER, "null handle");
  *phDevice = s->device;
  return GC_ERROR{GC_ERR_SUCCESS};
}

GC_ERROR DSClose(DS_HANDLE hDataStream) {
  STREAM(hDataStream);
  close_stream(s->device);
  return GC_ERROR{GC_ERR_SUCCESS};
}

GC_ERROR DSRevokeBuffer(DS_HANDLE hDataStream, BUFFER_HANDLE hBuffer, void** pBuffer, void** pPrivate) {
  STREAM(hDataStream);
  Buffer* b = as<Buffer>(hBuffer, Kind::Buffer);
  if (!b || b->stream != s) return fail(GC_ERR_INVALID_HANDLE, "not a buffer of this stream");
  std::lock_guard l(s->mu);
  if (b->state == Buffer::State::Queued || b->state == Buffer::State::Filling || b->state == Buffer::State::Output)
    return fail(GC_ERR_BUSY, "the buffer is queued: flush the queues first");
  if (pBuffer) *pBuffer = b->allocated ? nullptr : b->base;
  if (pPrivate) *pPrivate = b->user;
  forget(b);
  s->buffers.erase(std::find_if(s->buffers.begin(), s->buffers.end(), [b](const auto& p) { return p.get() == b; }));
  return GC_ERROR{GC_ERR_SUCCESS};
}

GC_ERROR DSQueueBuffer(DS_HANDLE hDataStream, BUFFER_HANDLE hBuffer) {
  STREAM(hDataStream);
  Buffer* b = as<Buffer>(hBuffer, Kind::Buffer);
  if (!b || b->stream != s) return fail(GC_ERR_INVALID_HANDLE, "not a buffer of this stream");
  {
    std::lock_guard l(s->mu);
    if (b->state == Buffer::State::Queued || b->state == Buffer::State::Filling)
      return fail(GC_ERR_RESOURCE_IN_USE, "the buffer is already queued");
    if (b->state == Buffer::State::Output) s->output.erase(std::find(s->output.begin(), s->output.end(), b));
    b->state = Buffer::State::Queued;
    b->new_data = false;
    s->input.push_back(b);
  }
  s->cv.notify_all();
  return GC_ERROR{GC_ERR_SUCCESS};
}

GC_ERROR DSGetBufferInfo(DS_HANDLE hDataStream, BUFFER_HANDLE hBuffer, BUFFER_INFO_CMD iInfoCmd, INFO_DATATYPE* piType, void* pBuffer,
                         size_t* piSize) {
  STREAM(hDataStream);
  Buffer* b = as<Buffer>(hBuffer, Kind::Buffer);
  if (!b || b->stream != s) return fail(GC_ERR_INVALID_HANDLE, "not a buffer of this stream");
  std::lock_guard l(s->mu);
  const bool has_data = b->state == Buffer::State::Output || b->state == Buffer::State::Delivered;
  switch (iInfoCmd) {
    case BUFFER_INFO_BASE: return put_ptr(b->base, piType, pBuffer, piSize);
    case BUFFER_INFO_SIZE: return put_size(b->size, piType, pBuffer, piSize);
    case BUFFER_INFO_USER_PTR: return put_ptr(b->user, piType, pBuffer, piSize);
    case BUFFER_INFO_TIMESTAMP:
    case BUFFER_INFO_TIMESTAMP_NS: return put_u64(static_cast<std::uint64_t>(b->timestamp_ns), piType, pBuffer, piSize);
    case BUFFER_INFO_NEW_DATA: return put_bool(b->new_data, piType, pBuffer, piSize);
    case BUFFER_INFO_IS_QUEUED: return put_bool(b->state == Buffer::State::Queued || b->state == Buffer::State::Filling, piType, pBuffer, piSize);
    case BUFFER_INFO_IS_ACQUIRING: return put_bool(b->state == Buffer::State::Filling, piType, pBuffer, piSize);
    case BUFFER_INFO_IS_INCOMPLETE: return put_bool(has_data && b->incomplete, piType, pBuffer, piSize);
    case BUFFER_INFO_TLTYPE: return put_string(kTlType, piType, pBuffer, piSize);
    case BUFFER_INFO_SIZE_FILLED:
    case BUFFER_INFO_DATA_SIZE: return put_size(has_data ? b->filled : 0, piType, pBuffer, piSize);
    case BUFFER_INFO_WIDTH: return put_size(b->width, piType, pBuffer, piSize);
    case BUFFER_INFO_HEIGHT: return put_size(b->height, piType, pBuffer, piSize);
    case BUFFER_INFO_XOFFSET:
    case BUFFER_INFO_YOFFSET:
    case BUFFER_INFO_XPADDING:
    case BUFFER_INFO_YPADDING:
    case BUFFER_INFO_IMAGEOFFSET: return put_size(0, piType, pBuffer, piSize);
    case BUFFER_INFO_FRAMEID: return put_u64(b->frame_id, piType, pBuffer, piSize);
    case BUFFER_INFO_IMAGEPRESENT: return put_bool(has_data && b->delivered_height > 0, piType, pBuffer, piSize);
    case BUFFER_INFO_PAYLOADTYPE: return put_size(PAYLOAD_TYPE_IMAGE, piType, pBuffer, piSize);
    case BUFFER_INFO_PIXELFORMAT: return put_u64(static_cast<std::uint64_t>(b->pixel_format), piType, pBuffer, piSize);
    case BUFFER_INFO_PIXELFORMAT_NAMESPACE: return put_u64(PIXELFORMAT_NAMESPACE_PFNC_32BIT, piType, pBuffer, piSize);
    case BUFFER_INFO_DELIVERED_IMAGEHEIGHT: return put_size(b->delivered_height, piType, pBuffer, piSize);
    case BUFFER_INFO_DELIVERED_CHUNKPAYLOADSIZE: return put_size(b->chunk_bytes, piType, pBuffer, piSize);
    case BUFFER_INFO_PIXEL_ENDIANNESS: return put_i32(PIXELENDIANNESS_LITTLE, piType, pBuffer, piSize);
    case BUFFER_INFO_DATA_LARGER_THAN_BUFFER: return put_bool(false, piType, pBuffer, piSize);
    case BUFFER_INFO_CONTAINS_CHUNKDATA: return put_bool(has_data && b->chunk_bytes > 0, piType, pBuffer, piSize);
    default: return fail(GC_ERR_NOT_IMPLEMENTED, "buffer info " + std::to_string(iInfoCmd));
  }
}

GC_ERROR DSGetBufferChunkData(DS_HANDLE hDataStream, BUFFER_HANDLE hBuffer, SINGLE_CHUNK_DATA* pChunkData, size_t* piNumChunks) {
  STREAM(hDataStream);
  Buffer* b = as<Buffer>(hBuffer, Kind::Buffer);
  if (!b || b->stream != s) return fail(GC_ERR_INVALID_HANDLE, "not a buffer of this stream");
  if (!piNumChunks) return fail(GC_ERR_INVALID_PARAMETER, "null count");
  std::lock_guard l(s->mu);
  if (b->chunk_bytes == 0) return fail(GC_ERR_NO_DATA, "this buffer carries no chunk data");
  if (!pChunkData) {
    *piNumChunks = 1;
    return GC_ERROR{GC_ERR_SUCCESS};
  }
  if (*piNumChunks < 1) return fail(GC_ERR_BUFFER_TOO_SMALL, "room for 1 chunk needed");
  pChunkData[0] = SINGLE_CHUNK_DATA{stripeline::gentl::kFrameInfoChunkId, static_cast<ptrdiff_t>(b->filled - b->chunk_bytes), b->chunk_bytes};
  *piNumChunks = 1;
  return GC_ERROR{GC_ERR_SUCCESS};
}

GC_ERROR DSGetNumBufferParts(DS_HANDLE hDataStream, BUFFER_HANDLE hBuffer, uint32_t* piNumParts) {
  STREAM(hDataStream);
  if (!as<Buffer>(hBuffer, Kind::Buffer) || !piNumParts) return fail(GC_ERR_INVALID_HANDLE, "not a buffer");
  *piNumParts = 0;  // single-part image buffers
  return GC_ERROR{GC_ERR_SUCCESS};
}

GC_ERROR DSGetBufferPartInfo(DS_HANDLE hDataStream, BUFFER_HANDLE, uint32_t, BUFFER_PART_INFO_CMD, INFO_DATATYPE*, void*, size_t*) {
  STREAM(hDataStream);
  (void)s;
  return fail(GC_ERR_NOT_AVAILABLE, "buffers are single-part images");
}

}  // extern "C"
