#pragma once
// stripeline's simulated GenTL producer (stripeline-sim.cti): a frame grabber
// with one "camera" that films the synthetic scanner's stripe. Any GenTL
// consumer can load it. What it simulates (docs/cameras.md, "GenTL"):
//   - System "stripeline-sim" -> Interface "SL-SIM-IF0" -> Device(s) "SL-SIM-<n>"
//     (STRIPELINE_GENTL_SIM_DEVICES, 1..8, default 1) -> DataStream "Stream0";
//   - the camera's node map (remote port, served zipped): Width, Height,
//     OffsetX/Y, PixelFormat (Mono8, Mono16), ExposureTime, Gain,
//     AcquisitionFrameRate, TriggerSelector/Mode/Source/Activation,
//     TriggerSoftware, AcquisitionStart/Stop, TLParamsLocked, chunk mode with
//     a per-frame information chunk (frame_info_chunk.h) and ChunkFrameID/
//     Timestamp/EncoderValue of the buffer's first frame;
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
// The modules, one file each: system.cpp (library, TL), interface.cpp,
// device.cpp (+ device_maps.cpp: the camera's and the grabber's node maps),
// stream.cpp (buffers and queues) + acquisition.cpp (the thread that fills
// them), events.cpp, ports.cpp, node_map.cpp (register space and XML).
//
// Queues (GenTL 1.5, 5.2): a buffer is announced; queued, it sits in the
// input pool; filled, it waits in the output queue, which is the new-buffer
// event's data queue (EventGetData hands out its head); delivered, the
// consumer owns it until it queues it again. DSFlushQueue moves buffers
// between these states; a buffer smaller than the payload is filled with the
// frames that fit and delivered incomplete (DATA_LARGER_THAN_BUFFER).
//
// Threading: one library lock guards the object graph and every register;
// each stream has its own lock for its queues, buffer states and events, and
// a thread that fills buffers and never takes the library lock. Lock order:
// library, then stream. EventGetData waits holding the stream lock only.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <unordered_set>
#include <vector>

#include "acquisition/gentl/gentl_api.h"
#include "acquisition/gentl/producer/node_map.h"

namespace stripeline::gentl_sim {

using clock = std::chrono::steady_clock;

constexpr std::int64_t kMono8 = 0x01080001, kMono16 = 0x01100007;  // PFNC
constexpr int kSensorWidth = 4096, kSensorHeight = 2048;
constexpr const char* kVendor = "stripeline";
constexpr const char* kTlType = "Custom";

std::int64_t now_ns();

// Errors: GCGetLastError reports the last failure of the calling thread.
struct LastError {
  GC_ERROR code = GC_ERR_SUCCESS;
  std::string text;
};
LastError& last_error();
GC_ERROR fail(GC_ERROR code, std::string text);
inline GC_ERROR ok() { return GC_ERROR{GC_ERR_SUCCESS}; }

// ---------------------------------------------------------------------------
// Objects behind the handles.
enum class Kind : std::uint32_t { System = 1, Interface, Device, Remote, Stream, Buffer, Event };

// How the C ABI names a handle of a module: the error for any other handle
// ("not a device"), and its children in an index error ("stream index 3").
struct HandleNames {
  const char* not_this;
  const char* child = "";
};

struct Object {
  explicit Object(Kind k) : kind(k) {}
  virtual ~Object() = default;
  Kind kind;
};

struct Stream;
struct Device;
struct Interface;

// An event of a data stream; every field is guarded by its stream's lock.
struct Event : Object {
  static constexpr Kind kKind = Kind::Event;
  static constexpr HandleNames kNames{"not an event"};
  Event(EVENT_TYPE t, Stream* s) : Object(Kind::Event), type(t), stream(s) {}
  EVENT_TYPE type;
  Stream* stream;
  std::deque<std::vector<std::uint8_t>> queue;  // EVENT_ERROR data (new-buffer data is the stream's output queue)
  int kills = 0;                                // EventKill: that many waits return GC_ERR_ABORT
  std::uint64_t fired = 0;
  bool unregistered = false;
};

struct Module : Object {
  static constexpr HandleNames kNames{"not a port"};  // any module's handle is its port
  using Object::Object;
  std::unique_ptr<NodeMap> map;
  std::string id;
  bool read_only = false;  // writes to its port are refused (a device opened DEVICE_ACCESS_READONLY)
  virtual std::string module_name() const = 0;
};

struct Buffer : Object {
  Buffer() : Object(Kind::Buffer) {}
  // Announced: with nobody; Queued: input pool; Filling: the grabber writes
  // it; Output: output queue (awaiting delivery); Delivered: the consumer's.
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
  bool incomplete = false, new_data = false, larger_than_buffer = false;
  ~Buffer() override;
  bool unqueued() const { return state == State::Announced || state == State::Delivered; }
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
  bool alloc_only = false;  // SimAllocOnly: DSAnnounceBuffer refused, only DSAllocAndAnnounceBuffer (a grabber whose DMA needs its own memory)
  bool write_pixels = true;
  bool params_locked = false;  // TLParamsLocked written 1 by the consumer
  std::size_t frame_bytes() const { return static_cast<std::size_t>(width) * height * (pixel_format == kMono8 ? 1 : 2); }
};

struct Stream : Module {
  static constexpr Kind kKind = Kind::Stream;
  static constexpr HandleNames kNames{"not a data stream"};
  Stream() : Module(Kind::Stream) {}
  ~Stream() override;
  Device* device = nullptr;
  std::mutex mu;                     // queues, buffer states, counters, events
  std::condition_variable cv;        // the acquisition thread waits on it
  std::condition_variable event_cv;  // EventGetData waits on it
  std::vector<std::unique_ptr<Buffer>> buffers;  // announced
  std::deque<Buffer*> input, output;
  std::shared_ptr<Event> new_buffer_event, error_event;
  std::thread worker;
  bool running = false, stop = false;
  bool link_lost = false;  // SimUnplugAfterBuffers or a failed acquisition thread: waits fail with GC_ERR_IO
  bool closed = false;
  std::uint64_t delivered = 0, underruns = 0, started = 0, to_acquire = GENTL_INFINITE;
  Settings snapshot;  // what the worker runs with (taken at DSStartAcquisition)
  std::string module_name() const override { return "TLDataStream"; }
  std::size_t payload_size() const;
  // Under mu: into the output queue (the new-buffer event's queue).
  void to_output(Buffer* b);
  void run() noexcept;  // the acquisition thread (acquisition.cpp)
  void stop_worker();
  void wake();  // notifies both condition variables (takes mu briefly: no lost wake-up)
};

struct Remote : Module {
  Remote() : Module(Kind::Remote) {}
  Device* device = nullptr;
  std::string module_name() const override { return "Device"; }
};

struct Device : Module {
  static constexpr Kind kKind = Kind::Device;
  static constexpr HandleNames kNames{"not a device", "stream"};
  Device() : Module(Kind::Device) {}
  Interface* parent = nullptr;
  int index = 0;
  bool open = false;
  std::unique_ptr<Remote> remote;
  std::shared_ptr<Stream> stream;  // shared: a waiting EventGetData keeps it alive
  Settings settings;
  // Live controls the worker reads while it runs.
  std::atomic<bool> acquiring{false};
  std::atomic<std::int64_t> trigger_credits{0};
  std::atomic<double> frame_rate{1000};
  std::atomic<std::int64_t> drop_every{0}, incomplete_every{0}, fail_every{0}, unplug_after{0};
  std::string serial() const { return "SLSIM" + std::to_string(1000 + index); }
  std::string module_name() const override { return "TLDevice"; }
  bool streaming() const { return stream && stream->running; }
  // Geometry and buffer layout are locked while streaming or TLParamsLocked.
  bool params_locked() const { return settings.params_locked || streaming(); }
};

struct Interface : Module {
  static constexpr Kind kKind = Kind::Interface;
  static constexpr HandleNames kNames{"not an interface", "device"};
  Interface() : Module(Kind::Interface) {}
  bool open = false;
  std::vector<std::unique_ptr<Device>> devices;
  std::string module_name() const override { return "TLInterface"; }
};

struct System : Module {
  static constexpr Kind kKind = Kind::System;
  static constexpr HandleNames kNames{"not the system module", "interface"};
  System() : Module(Kind::System) {}
  std::unique_ptr<Interface> iface;
  std::string module_name() const override { return "TLSystem"; }
};

// ---------------------------------------------------------------------------
// Library state (system.cpp). Its destructor closes everything, so a process
// that exits without GCCloseLib stops the acquisition threads first.
struct Library {
  ~Library();
  std::mutex mu;
  bool initialized = false;
  std::unique_ptr<System> system;  // while the TL is open
  std::unordered_set<const Object*> live;
};
Library& lib();

// A live handle of that kind, or null (a garbage handle is never dereferenced).
template <class T>
T* as(void* h, Kind k) {
  auto* o = static_cast<Object*>(h);
  if (!h || !lib().live.count(o) || o->kind != k) return nullptr;
  return static_cast<T*>(o);
}
Module* as_port(void* h);
void forget(const Object* o);

// The live handle of a T (its kKind; a Module: any module, as a port), or null.
template <class T>
T* handle_of(void* h) {
  if constexpr (std::is_same_v<T, Module>)
    return as_port(h);
  else
    return as<T>(h, T::kKind);
}

// An output argument: null fails with GC_ERR_INVALID_PARAMETER ("null <what>").
template <class P, class V>
GC_ERROR put_out(P* out, V value, const char* what) {
  if (!out) return fail(GC_ERR_INVALID_PARAMETER, std::string("null ") + what);
  *out = value;
  return ok();
}

// Info answers (GenTL 1.5, 6.3): a null buffer asks for the size; a buffer
// too small fails with GC_ERR_BUFFER_TOO_SMALL and the size needed in *piSize.
GC_ERROR put_bytes(INFO_DATATYPE type, const void* data, std::size_t n, INFO_DATATYPE* piType, void* pBuffer, std::size_t* piSize);
GC_ERROR put_string(const std::string& s, INFO_DATATYPE* t, void* b, std::size_t* n);
GC_ERROR put_bool(bool v, INFO_DATATYPE* t, void* b, std::size_t* n);
GC_ERROR put_size(std::size_t v, INFO_DATATYPE* t, void* b, std::size_t* n);
GC_ERROR put_u64(std::uint64_t v, INFO_DATATYPE* t, void* b, std::size_t* n);
GC_ERROR put_u32(std::uint32_t v, INFO_DATATYPE* t, void* b, std::size_t* n);
GC_ERROR put_i32(std::int32_t v, INFO_DATATYPE* t, void* b, std::size_t* n);
GC_ERROR put_ptr(const void* v, INFO_DATATYPE* t, void* b, std::size_t* n);

// Building and tearing down (under the library lock).
std::unique_ptr<System> make_system();               // system.cpp
void close_system();                                 // system.cpp
void close_interface(Interface* i);                  // interface.cpp
GC_ERROR interface_info(const Interface* i, INTERFACE_INFO_CMD cmd, INFO_DATATYPE* t, void* b, std::size_t* n);  // interface.cpp
GC_ERROR open_device(Device* d, DEVICE_ACCESS_FLAGS flags);  // device.cpp
void close_device(Device* d);                        // device.cpp
GC_ERROR device_info(const Device* d, DEVICE_INFO_CMD cmd, INFO_DATATYPE* t, void* b, std::size_t* n);  // device.cpp
void close_stream(Device* d);                        // stream.cpp
void build_camera_map(Device* d);                    // device_maps.cpp
void build_grabber_map(Device* d);                   // device_maps.cpp
void build_plain_map(Module* mod, const std::string& model, std::vector<Feature> features);  // device_maps.cpp
Feature text_feature(std::string name, std::string category, std::function<std::string()> get);
Feature int_feature(std::string name, std::string category, std::int64_t lo, std::int64_t hi, std::function<std::int64_t()> get,
                    std::function<GC_ERROR(std::int64_t)> set, std::string tip = {});
void fire_error(Stream* s, GC_ERROR code, const std::string& text);  // events.cpp; under the stream lock
// A module's children, in index order: the system's interface, an
// interface's devices, a device's data stream.
std::vector<std::string> child_ids(const System& s);     // system.cpp
std::vector<std::string> child_ids(const Interface& i);  // interface.cpp
std::vector<std::string> child_ids(const Device& d);     // device.cpp

}  // namespace stripeline::gentl_sim

// The C ABI's entry guard: the library lock, and GCInitLib called.
#define SIM_LOCKED                                                   \
  std::lock_guard sim_guard(::stripeline::gentl_sim::lib().mu);      \
  if (!::stripeline::gentl_sim::lib().initialized)                   \
  return ::stripeline::gentl_sim::fail(GC_ERR_NOT_INITIALIZED, "GCInitLib was not called")

// SIM_LOCKED, then `var`: the handle h as a live T, or GC_ERR_INVALID_HANDLE
// ("not a device").
#define SIM_HANDLE(T, var, h)                                    \
  SIM_LOCKED;                                                    \
  T* var = ::stripeline::gentl_sim::handle_of<T>(h);             \
  if (!var) return ::stripeline::gentl_sim::fail(GC_ERR_INVALID_HANDLE, T::kNames.not_this)

namespace stripeline::gentl_sim {

// TLGetNumInterfaces, IFGetNumDevices, DevGetNumDataStreams.
template <class T>
GC_ERROR num_children(void* h, std::uint32_t* count) {
  SIM_HANDLE(T, m, h);
  return put_out(count, static_cast<std::uint32_t>(child_ids(*m).size()), "count");
}

// TLGetInterfaceID, IFGetDeviceID, DevGetDataStreamID.
template <class T>
GC_ERROR child_id(void* h, std::uint32_t index, char* id, std::size_t* size) {
  SIM_HANDLE(T, m, h);
  const std::vector<std::string> ids = child_ids(*m);
  if (index >= ids.size()) return fail(GC_ERR_INVALID_INDEX, std::string(T::kNames.child) + " index " + std::to_string(index));
  return put_string(ids[index], nullptr, id, size);
}

}  // namespace stripeline::gentl_sim
