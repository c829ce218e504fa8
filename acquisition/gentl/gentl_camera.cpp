// GenTLCamera: open a device through its GenTL producer, configure it
// through GenApi (port_node_map.h), stream its buffers into batches, count
// what is lost. docs/cameras.md ("GenTL") describes the behaviour; this
// file is the how.
//
// Two delivery paths, chosen at the first fill():
//   direct    the pipeline attached its pool, a batch is one grabber buffer
//             (frames_per_buffer frames) and every pool buffer holds the
//             payload: the pool's buffers are announced to the data stream
//             (DSAnnounceBuffer with our memory) and each delivered buffer
//             is swapped into the batch being filled; the batch's previous
//             buffer is queued to the grabber in its place. No copy.
//   assemble  otherwise: buffers of our own are queued; each frame of a
//             delivered buffer is copied into the batch by the BatchAssembler.
#include "acquisition/gentl/gentl_camera.h"

#include <arv.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

#include "acquisition/batch_assembler.h"
#include "acquisition/gentl/frame_info_chunk.h"
#include "acquisition/gentl/gentl_loader.h"
#include "acquisition/gentl/port_node_map.h"
#include "core/errors.h"

namespace stripeline {

namespace {

using gentl::PortNodeMap;
using gentl::Producer;
using clock = std::chrono::steady_clock;

std::int64_t now_ns() { return std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now().time_since_epoch()).count(); }

// GError owner for the arv_device_* calls.
struct Err {
  GError* e = nullptr;
  ~Err() {
    if (e) g_error_free(e);
  }
  GError** out() {
    if (e) g_clear_error(&e);
    return &e;
  }
  explicit operator bool() const { return e != nullptr; }
  std::string message() const { return e ? e->message : ""; }
};

std::uint64_t pfnc(const std::string& name) {
  if (name == "Mono8") return 0x01080001;
  if (name == "Mono10") return 0x01100003;
  if (name == "Mono12") return 0x01100005;
  if (name == "Mono14") return 0x01100025;
  return 0x01100007;  // Mono16
}

// "[Module.]Name[=Value]" -> (module, rest). Module defaults to Device.
std::pair<std::string, std::string> split_module(const std::string& s) {
  const auto dot = s.find('.');
  const auto eq = s.find('=');
  if (dot != std::string::npos && (eq == std::string::npos || dot < eq)) {
    const std::string module = s.substr(0, dot);
    if (module == "System" || module == "Interface" || module == "Device" || module == "Stream") return {module, s.substr(dot + 1)};
  }
  return {"Device", s};
}

std::string device_string(const Producer& p, IF_HANDLE iface, const std::string& id, DEVICE_INFO_CMD cmd) {
  try {
    return gentl::info_string(p, "IFGetDeviceInfo", [&](INFO_DATATYPE* t, void* b, std::size_t* s) {
      return p.api().IFGetDeviceInfo(iface, id.c_str(), cmd, t, b, s);
    });
  } catch (const DeviceUnavailable&) {
    return {};
  }
}

const char* access_name(std::int32_t a) {
  switch (a) {
    case DEVICE_ACCESS_STATUS_READWRITE: return "available";
    case DEVICE_ACCESS_STATUS_READONLY: return "read-only";
    case DEVICE_ACCESS_STATUS_NOACCESS: return "no access";
    case DEVICE_ACCESS_STATUS_BUSY: return "busy (opened elsewhere)";
    case DEVICE_ACCESS_STATUS_OPEN_READWRITE: return "open (read-write)";
    case DEVICE_ACCESS_STATUS_OPEN_READONLY: return "open (read-only)";
    default: return "unknown";
  }
}

// One buffer the grabber delivered, with what the consumer needs of it.
struct Delivered {
  BUFFER_HANDLE handle = nullptr;
  std::byte* base = nullptr;
  std::uint64_t buffer_id = 0;
  std::int64_t timestamp_ns = 0;
  int frames = 0;        // frames the buffer is laid out for
  int valid = 0;         // frames that arrived (an incomplete buffer has fewer)
  bool geometry_ok = true;
  const gentl::FrameInfoRecord* records = nullptr;  // per-frame chunk, when present
  int next = 0;          // assemble path: the next frame to place
};

class GenTLCameraImpl final : public GenTLCamera {
 public:
  GenTLCameraImpl(const CameraConfig& camera, const GenTLConfig& gentl, int batch_frames);
  ~GenTLCameraImpl() override;

  BatchLayout frame_layout() const override { return layout_; }
  bool fill(Batch& batch) override;
  std::string describe() const override { return "GenTL camera " + settings_.describe(); }
  SourceEnd end_reason() const override { return end_; }
  void request_stop() noexcept override { stop_.store(true); }
  std::optional<AcquisitionCounters> acquisition_counters() const override {
    std::lock_guard lock(published_mu_);
    return published_;
  }
  std::optional<std::uint64_t> total_frames() const override {
    return config_.frames ? std::optional<std::uint64_t>(config_.frames) : std::nullopt;
  }
  const CameraSettings& settings() const override { return settings_; }
  double loss_detection_seconds() const override { return loss_seconds_; }
  std::string loss_reason() const override {
    std::lock_guard lock(published_mu_);
    return loss_reason_;
  }
  GenTLStats gentl_stats() const override {
    std::lock_guard lock(published_mu_);
    return stats_;
  }
  std::size_t direct_buffer_bytes() const override { return payload_; }
  void attach_buffers(std::span<Batch* const> batches, HostAllocator allocator) override;
  void detach_buffers() noexcept override { shutdown_stream(); }

 private:
  void open_device();
  void configure();
  void read_back();
  void open_data_stream();
  void prepare_stream();
  void start(const Batch& first);
  void shutdown_stream() noexcept;
  PortNodeMap& module_map(const std::string& module);
  void set_int(const char* feature, std::int64_t v, const char* key);
  void set_float(const char* feature, double v, const char* key);
  void set_enum(const char* feature, const std::string& v, const char* key);

  std::optional<Delivered> wait_buffer(std::chrono::milliseconds timeout);
  Delivered describe_buffer(BUFFER_HANDLE h);
  void poll_error_events();
  void queue(std::byte* memory);
  void declare_lost(const std::string& why);
  std::uint64_t frame_id(const Delivered& d, int k) const;
  std::int64_t frame_timestamp(const Delivered& d, int k) const;
  bool frame_failed(const Delivered& d, int k) const {
    return d.records && d.records[k].status != gentl::kFrameComplete;
  }
  bool fill_direct(Batch& batch, int capacity);
  bool fill_assembled(Batch& batch, int capacity);
  void publish();
  void trigger_loop();

  CameraConfig config_;
  GenTLConfig gentl_;
  int batch_frames_;
  std::shared_ptr<Producer> producer_;
  std::string interface_id_, device_id_;
  IF_HANDLE iface_ = nullptr;
  DEV_HANDLE device_ = nullptr;
  PORT_HANDLE remote_port_ = nullptr;
  DS_HANDLE stream_ = nullptr;
  EVENT_HANDLE new_buffer_event_ = nullptr, error_event_ = nullptr;
  std::unique_ptr<PortNodeMap> camera_;                          // the remote device
  std::unordered_map<std::string, std::unique_ptr<PortNodeMap>> modules_;  // the producer's own (System, Interface, Device, Stream)
  CameraSettings settings_;
  BatchLayout layout_;
  std::size_t frame_bytes_ = 0, payload_ = 0;
  int frames_per_buffer_ = 1;
  bool chunks_on_ = false;
  double frame_period_ns_ = 0;

  // Buffers: every memory announced to the data stream, and those we own
  // (queued to the grabber, or delivered and not yet handed on).
  std::unordered_map<std::byte*, BUFFER_HANDLE> announced_;
  std::unordered_map<std::byte*, HostBuffer> owned_;
  std::vector<Batch*> attached_;
  HostAllocator allocator_ = &allocate_host;
  bool started_ = false, direct_ = false, acquiring_ = false;

  BatchAssembler assembler_;
  AcquisitionCounters direct_counters_;
  std::optional<Delivered> pending_;
  std::uint64_t gap_rows_left_ = 0;        // direct path: missing rows still to hand on before pending_
  std::uint64_t gap_first_id_ = 0, gap_rows_written_ = 0;
  std::int64_t gap_ts0_ = 0, gap_ts1_ = 0;
  std::uint64_t gap_total_ = 0;
  bool have_previous_ = false;
  std::uint64_t next_id_ = 0;              // direct path: the id the next frame should have
  std::int64_t previous_ts_ = 0;
  std::uint64_t rows_delivered_ = 0, batches_full_ = 0, batches_flushed_ = 0;
  std::uint64_t buffers_ = 0, buffers_direct_ = 0, frames_copied_ = 0, error_events_ = 0;
  std::string last_error_event_;
  const void* last_direct_base_ = nullptr;

  SourceEnd end_ = SourceEnd::Exhausted;
  std::atomic<bool> stop_{false}, lost_{false};
  double loss_seconds_ = 0;
  std::int64_t last_alive_ns_ = 0;
  mutable std::mutex published_mu_;
  AcquisitionCounters published_;
  GenTLStats stats_;
  std::string loss_reason_;

  std::mutex feature_mu_;  // the trigger thread and fill() both use the camera's node map
  std::mutex thread_mu_;
  std::condition_variable thread_cv_;
  bool threads_stop_ = false;
  std::thread trigger_;
};

// ---------------------------------------------------------------------------
// Opening.

GenTLCameraImpl::GenTLCameraImpl(const CameraConfig& camera, const GenTLConfig& gentl, int batch_frames)
    : config_(camera), gentl_(gentl), batch_frames_(batch_frames), assembler_(BatchLayout{}, 0) {
  config_.validate();
  gentl_.validate();
  open_device();
  try {
    open_data_stream();
    configure();
    read_back();
    prepare_stream();
  } catch (...) {
    shutdown_stream();
    throw;
  }
  layout_ = BatchLayout{settings_.width, settings_.height, 0, config_.storage_format()};
  assembler_ = BatchAssembler(layout_, config_.gap_fill_limit ? config_.gap_fill_limit : static_cast<std::uint64_t>(batch_frames_));
  publish();
  spdlog::info("gentl: {}; {} frame(s) per buffer of {} bytes{}", settings_.describe(), frames_per_buffer_, payload_,
               chunks_on_ ? ", per-frame information chunk on" : "");
}

void GenTLCameraImpl::open_device() {
  const auto paths = gentl::producer_paths(gentl_.cti);
  if (paths.empty()) throw ConfigError("camera.gentl.cti: " + gentl::no_producer_message(gentl_.cti));
  std::string wanted_if, wanted = gentl_.device;
  if (const auto slash = wanted.find('/'); slash != std::string::npos) {
    wanted_if = wanted.substr(0, slash);
    wanted = wanted.substr(slash + 1);
  }
  std::vector<std::string> seen, errors;
  for (const auto& path : paths) {
    std::shared_ptr<Producer> p;
    try {
      p = gentl::load_producer(path);
      for (const auto& ifid : p->interface_ids()) {
        if (!wanted_if.empty() && ifid != wanted_if) continue;
        IF_HANDLE iface = p->open_interface(ifid);
        const auto& api = p->api();
        bool8_t changed = 0;
        p->check(api.IFUpdateDeviceList(iface, &changed, 1000), "IFUpdateDeviceList");
        std::uint32_t n = 0;
        p->check(api.IFGetNumDevices(iface, &n), "IFGetNumDevices");
        for (std::uint32_t i = 0; i < n; ++i) {
          const std::string id = gentl::info_string(*p, "IFGetDeviceID", [&](INFO_DATATYPE*, void* b, std::size_t* s) {
            return api.IFGetDeviceID(iface, i, static_cast<char*>(b), s);
          });
          seen.push_back(ifid + "/" + id);
          const bool match = wanted.empty() || id == wanted || device_string(*p, iface, id, DEVICE_INFO_SERIAL_NUMBER) == wanted ||
                             device_string(*p, iface, id, DEVICE_INFO_DISPLAYNAME) == wanted;
          if (!match) continue;
          DEV_HANDLE dev = nullptr;
          const GC_ERROR rc = api.IFOpenDevice(iface, id.c_str(), DEVICE_ACCESS_EXCLUSIVE, &dev);
          if (rc != GC_ERR_SUCCESS) {
            const std::string text = p->last_error_text();
            throw DeviceUnavailable(fmt::format("GenTL device {}/{}: cannot open it: {}{} (it will be retried)", ifid, id, gentl::error_name(rc),
                                                text.empty() ? "" : ": " + text));
          }
          producer_ = p;
          iface_ = iface;
          device_ = dev;
          interface_id_ = ifid;
          device_id_ = id;
          break;
        }
        if (device_) break;
      }
    } catch (const DeviceUnavailable& e) {
      if (device_ == nullptr && wanted.empty() && paths.size() > 1) {
        errors.push_back(e.what());
        continue;
      }
      throw;
    }
    if (device_) break;
  }
  if (!device_) {
    std::string list;
    for (const auto& s : seen) list += (list.empty() ? "" : ", ") + s;
    throw DeviceUnavailable(fmt::format("GenTL device '{}' not found (found: {}){}", gentl_.device, list.empty() ? "none" : list,
                                        errors.empty() ? "" : "; " + errors.front()));
  }
  const auto& api = producer_->api();
  producer_->check(api.DevGetPort(device_, &remote_port_), "DevGetPort");
  camera_ = std::make_unique<PortNodeMap>(producer_, remote_port_, "camera " + device_id_);
  settings_.id = device_id_;
  settings_.vendor = device_string(*producer_, iface_, device_id_, DEVICE_INFO_VENDOR);
  settings_.model = device_string(*producer_, iface_, device_id_, DEVICE_INFO_MODEL);
  settings_.serial = device_string(*producer_, iface_, device_id_, DEVICE_INFO_SERIAL_NUMBER);
  settings_.protocol = "GenTL " + device_string(*producer_, iface_, device_id_, DEVICE_INFO_TLTYPE);
  settings_.address = std::filesystem::path(producer_->path()).filename().string() + " " + interface_id_;
}

PortNodeMap& GenTLCameraImpl::module_map(const std::string& module) {
  auto& slot = modules_[module];
  if (slot) return *slot;
  PORT_HANDLE port = nullptr;
  if (module == "System") port = producer_->system();
  else if (module == "Interface") port = iface_;
  else if (module == "Device") port = device_;
  else if (module == "Stream") port = stream_;
  if (!port) throw ConfigError(fmt::format("camera.gentl: the {} module is not open", module));
  slot = std::make_unique<PortNodeMap>(producer_, port, fmt::format("grabber's {} module", module));
  return *slot;
}

void GenTLCameraImpl::set_int(const char* feature, std::int64_t v, const char* key) {
  ArvDevice* d = camera_->device();
  gint64 lo = 0, hi = 0;
  arv_device_get_integer_feature_bounds(d, feature, &lo, &hi, nullptr);
  const gint64 inc = arv_device_get_integer_feature_increment(d, feature, nullptr);
  if (v < lo || v > hi || (inc > 1 && (v - lo) % inc != 0))
    throw ConfigError(fmt::format("camera.{}: {} is not accepted by the camera ({} {}..{} in steps of {})", key, v, feature, lo, hi, inc > 0 ? inc : 1));
  Err err;
  arv_device_set_integer_feature_value(d, feature, v, err.out());
  if (err) throw ConfigError(fmt::format("camera.{}: the camera refused {} = {}: {}", key, feature, v, err.message()));
}

void GenTLCameraImpl::set_float(const char* feature, double v, const char* key) {
  ArvDevice* d = camera_->device();
  Err err;
  arv_device_set_float_feature_value(d, feature, v, err.out());
  if (err) {
    double lo = 0, hi = 0;
    arv_device_get_float_feature_bounds(d, feature, &lo, &hi, nullptr);
    throw ConfigError(fmt::format("camera.{}: the camera refused {} = {}: {} (it allows {}..{})", key, feature, v, err.message(), lo, hi));
  }
}

void GenTLCameraImpl::set_enum(const char* feature, const std::string& v, const char* key) {
  ArvDevice* d = camera_->device();
  Err err;
  arv_device_set_string_feature_value(d, feature, v.c_str(), err.out());
  if (err) {
    guint n = 0;
    const char** list = arv_device_dup_available_enumeration_feature_values_as_strings(d, feature, &n, nullptr);
    std::string offered;
    for (guint i = 0; i < n; ++i) offered += (i ? ", " : "") + std::string(list[i]);
    g_free(list);
    throw ConfigError(fmt::format("camera.{}: the camera refused {} = {}: {} (it offers {})", key, feature, v, err.message(),
                                  offered.empty() ? "none" : offered));
  }
}

void GenTLCameraImpl::configure() {
  PortNodeMap& cam = *camera_;
  ArvDevice* d = cam.device();
  // Trigger off first: some cameras lock geometry while triggered.
  if (cam.has("TriggerSelector")) arv_device_set_string_feature_value(d, "TriggerSelector", "FrameStart", nullptr);
  if (cam.has("TriggerMode")) set_enum("TriggerMode", "Off", "trigger");
  set_enum("PixelFormat", config_.pixel_format, "pixel_format");
  if (config_.width > 0 || config_.height > 0 || config_.offset_x > 0 || config_.offset_y > 0) {
    const bool offsets = cam.has("OffsetX") && cam.has("OffsetY");
    if (offsets) {
      set_int("OffsetX", 0, "offset_x");
      set_int("OffsetY", 0, "offset_y");
    } else if (config_.offset_x > 0 || config_.offset_y > 0) {
      throw ConfigError("camera.offset_x/offset_y: this camera has no region offsets (OffsetX/OffsetY)");
    }
    if (config_.width > 0) set_int("Width", config_.width, "width");
    if (config_.height > 0) set_int("Height", config_.height, "height");
    if (offsets) {
      if (config_.offset_x > 0) set_int("OffsetX", config_.offset_x, "offset_x");
      if (config_.offset_y > 0) set_int("OffsetY", config_.offset_y, "offset_y");
    }
  }
  if (config_.exposure_us > 0) {
    if (cam.has("ExposureAuto")) arv_device_set_string_feature_value(d, "ExposureAuto", "Off", nullptr);
    set_float("ExposureTime", config_.exposure_us, "exposure_us");
  }
  if (config_.gain >= 0) {
    if (cam.has("GainAuto")) arv_device_set_string_feature_value(d, "GainAuto", "Off", nullptr);
    set_float("Gain", config_.gain, "gain");
  }
  if (config_.frame_rate > 0 && config_.trigger == TriggerMode::FreeRun) {
    if (cam.has("AcquisitionFrameRateEnable")) arv_device_set_boolean_feature_value(d, "AcquisitionFrameRateEnable", TRUE, nullptr);
    set_float("AcquisitionFrameRate", config_.frame_rate, "frame_rate");
  }
  if (config_.trigger != TriggerMode::FreeRun) {
    if (!cam.has("TriggerMode")) throw ConfigError("camera.trigger: this camera has no TriggerMode");
    const std::string source = config_.trigger == TriggerMode::Software ? "Software" : config_.trigger_source;
    set_enum("TriggerSource", source, "trigger_source");
    if (config_.trigger == TriggerMode::External && cam.has("TriggerActivation"))
      set_enum("TriggerActivation", config_.trigger_activation, "trigger_activation");
    set_enum("TriggerMode", "On", "trigger");
  }
  chunks_on_ = false;
  if (gentl_.frame_info_chunk && cam.has("ChunkModeActive")) {
    Err err;
    arv_device_set_boolean_feature_value(d, "ChunkModeActive", TRUE, err.out());
    chunks_on_ = !err;
  }
  if (!config_.encoder_chunk.empty() && !chunks_on_)
    throw ConfigError(fmt::format(
        "camera.encoder_chunk: '{}': with GenTL the encoder count is read from the per-frame information chunk, and this camera has "
        "no chunk mode (ChunkModeActive) or camera.gentl.frame_info_chunk is false",
        config_.encoder_chunk));
  for (const auto& f : config_.features) cam.apply(f, "camera.features");

  // The grabber: frames per buffer, then its own features.
  if (gentl_.frames_per_buffer > 0) {
    const auto [module, name] = split_module(gentl_.frames_per_buffer_feature);
    module_map(module).apply(fmt::format("{}={}", name, gentl_.frames_per_buffer), "camera.gentl.frames_per_buffer");
  }
  for (const auto& f : gentl_.grabber_features) {
    const auto [module, assignment] = split_module(f);
    module_map(module).apply(assignment, "camera.gentl.grabber_features");
  }
}

void GenTLCameraImpl::read_back() {
  ArvDevice* d = camera_->device();
  Err err;
  auto get_int = [&](const char* f) {
    const gint64 v = arv_device_get_integer_feature_value(d, f, err.out());
    if (err) throw DeviceUnavailable(fmt::format("camera {}: cannot read {} back: {}", settings_.id, f, err.message()));
    return static_cast<int>(v);
  };
  settings_.width = get_int("Width");
  settings_.height = get_int("Height");
  settings_.offset_x = camera_->has("OffsetX") ? get_int("OffsetX") : 0;
  settings_.offset_y = camera_->has("OffsetY") ? get_int("OffsetY") : 0;
  auto mismatch = [](const char* key, int asked, int got) {
    if (asked > 0 && asked != got) throw ConfigError(fmt::format("camera.{}: asked {}, the camera set {}", key, asked, got));
  };
  mismatch("width", config_.width, settings_.width);
  mismatch("height", config_.height, settings_.height);
  mismatch("offset_x", config_.offset_x, settings_.offset_x);
  mismatch("offset_y", config_.offset_y, settings_.offset_y);
  if (settings_.width < 1 || settings_.height < 1 || settings_.width > kMaxWidth || settings_.height > kMaxFrameHeight)
    throw ConfigError(fmt::format("camera: its frame is {}x{}, beyond what stripeline takes (width 1..{}, height 1..{}): set camera.width and camera.height",
                                  settings_.width, settings_.height, kMaxWidth, kMaxFrameHeight));
  const char* pf = arv_device_get_string_feature_value(d, "PixelFormat", err.out());
  settings_.pixel_format = pf ? pf : "";
  if (settings_.pixel_format != config_.pixel_format)
    throw ConfigError(fmt::format("camera.pixel_format: asked {}, the camera set {}", config_.pixel_format, settings_.pixel_format));
  auto get_float = [&](const char* f) { return camera_->has(f) ? arv_device_get_float_feature_value(d, f, nullptr) : 0.0; };
  settings_.exposure_us = get_float("ExposureTime");
  settings_.gain = get_float("Gain");
  settings_.frame_rate = get_float("AcquisitionFrameRate");
  auto near = [](double asked, double got) { return std::fabs(asked - got) <= 0.01 * std::fabs(asked) + 1e-9; };
  if (config_.exposure_us > 0 && !near(config_.exposure_us, settings_.exposure_us))
    spdlog::warn("camera: exposure {} us asked, the camera set {} us", config_.exposure_us, settings_.exposure_us);
  if (config_.gain >= 0 && !near(config_.gain, settings_.gain)) spdlog::warn("camera: gain {} asked, the camera set {}", config_.gain, settings_.gain);
  if (config_.trigger == TriggerMode::FreeRun && config_.frame_rate > 0 && !near(config_.frame_rate, settings_.frame_rate))
    spdlog::warn("camera: {} frames/s asked, the camera set {} frames/s", config_.frame_rate, settings_.frame_rate);
  switch (config_.trigger) {
    case TriggerMode::FreeRun: settings_.trigger = "free-run"; break;
    case TriggerMode::Software: settings_.trigger = fmt::format("software at {} frames/s", config_.frame_rate); break;
    case TriggerMode::External: {
      const char* mode = arv_device_get_string_feature_value(d, "TriggerMode", nullptr);
      const std::string mode_s = mode ? mode : "";
      const char* source = arv_device_get_string_feature_value(d, "TriggerSource", nullptr);
      const std::string source_s = source ? source : "";
      if (mode_s != "On" || source_s != config_.trigger_source)
        throw ConfigError(fmt::format("camera.trigger_source: asked external trigger on {}, the camera has TriggerMode {} on {}",
                                      config_.trigger_source, mode_s, source_s));
      const char* act = camera_->has("TriggerActivation") ? arv_device_get_string_feature_value(d, "TriggerActivation", nullptr) : nullptr;
      settings_.trigger = fmt::format("external {} {}", source_s, act ? act : "(edge not settable)");
      break;
    }
  }
  frame_bytes_ = static_cast<std::size_t>(settings_.width) * settings_.height * bytes_per_pixel(config_.storage_format());
  // Frames per buffer: the grabber's setting when it has the feature.
  frames_per_buffer_ = 1;
  {
    const auto [module, name] = split_module(gentl_.frames_per_buffer_feature);
    PortNodeMap* m = nullptr;
    try {
      m = &module_map(module);
    } catch (const std::exception& e) {
      spdlog::debug("gentl: no {} node map: {}", module, e.what());
    }
    if (m && m->has(name)) {
      const gint64 v = arv_device_get_integer_feature_value(m->device(), name.c_str(), err.out());
      if (err || v < 1 || v > kMaxBatchFrames)
        throw ConfigError(fmt::format("camera.gentl.frames_per_buffer: the grabber's {} reads {} (expected 1..{})", name, v, kMaxBatchFrames));
      frames_per_buffer_ = static_cast<int>(v);
    } else if (gentl_.frames_per_buffer > 1) {
      throw ConfigError(fmt::format("camera.gentl.frames_per_buffer_feature: the grabber has no {}", gentl_.frames_per_buffer_feature));
    }
    if (gentl_.frames_per_buffer > 0 && frames_per_buffer_ != gentl_.frames_per_buffer)
      throw ConfigError(fmt::format("camera.gentl.frames_per_buffer: asked {}, the grabber set {}", gentl_.frames_per_buffer, frames_per_buffer_));
  }
  frame_period_ns_ = settings_.frame_rate > 0 ? 1e9 / settings_.frame_rate : 0.0;
}

// The data stream is opened before configuring: its own features (buffer
// layout on some grabbers) are part of the set-up.
void GenTLCameraImpl::open_data_stream() {
  const auto& api = producer_->api();
  std::uint32_t n = 0;
  if (api.DevGetNumDataStreams) producer_->check(api.DevGetNumDataStreams(device_, &n), "DevGetNumDataStreams");
  if (api.DevGetNumDataStreams && n == 0) throw DeviceUnavailable(fmt::format("GenTL device {}: it has no data stream", device_id_));
  const std::string ds = gentl::info_string(*producer_, "DevGetDataStreamID", [&](INFO_DATATYPE*, void* b, std::size_t* s) {
    return api.DevGetDataStreamID(device_, 0, static_cast<char*>(b), s);
  });
  producer_->check(api.DevOpenDataStream(device_, ds.c_str(), &stream_), "DevOpenDataStream");
}

void GenTLCameraImpl::prepare_stream() {
  const auto& api = producer_->api();
  // The buffer size: the stream's when it defines it (a grabber's
  // multi-frame buffer), else the camera's PayloadSize.
  bool8_t defines = 0;
  std::size_t size = sizeof defines;
  INFO_DATATYPE type = 0;
  if (api.DSGetInfo(stream_, STREAM_INFO_DEFINES_PAYLOADSIZE, &type, &defines, &size) == GC_ERR_SUCCESS && defines) {
    payload_ = gentl::info_value<std::size_t>(*producer_, "DSGetInfo(PAYLOAD_SIZE)", [&](INFO_DATATYPE* t, void* b, std::size_t* s) {
      return api.DSGetInfo(stream_, STREAM_INFO_PAYLOAD_SIZE, t, b, s);
    });
  } else {
    payload_ = static_cast<std::size_t>(arv_device_get_integer_feature_value(camera_->device(), "PayloadSize", nullptr));
  }
  const std::size_t need = frame_bytes_ * static_cast<std::size_t>(frames_per_buffer_);
  if (payload_ < need)
    throw DeviceUnavailable(fmt::format("GenTL device {}: payload {} bytes is less than {} frame(s) of {}x{} ({} bytes)", device_id_, payload_,
                                        frames_per_buffer_, settings_.width, settings_.height, need));
  producer_->check(api.GCRegisterEvent(stream_, EVENT_NEW_BUFFER, &new_buffer_event_), "GCRegisterEvent(NEW_BUFFER)");
  if (api.GCRegisterEvent(stream_, EVENT_ERROR, &error_event_) != GC_ERR_SUCCESS) error_event_ = nullptr;  // optional
}

void GenTLCameraImpl::attach_buffers(std::span<Batch* const> batches, HostAllocator allocator) {
  if (started_) {
    spdlog::warn("gentl: buffers attached after the first batch: ignored");
    return;
  }
  attached_.assign(batches.begin(), batches.end());
  if (allocator) allocator_ = allocator;
}

// Decides the path, allocates and queues our buffers, starts the stream.
void GenTLCameraImpl::start(const Batch& first) {
  started_ = true;
  const auto& api = producer_->api();
  std::string why;
  if (attached_.empty()) why = "the pipeline attached no buffers";
  else if (first.layout.frames != frames_per_buffer_) why = fmt::format("a batch is {} frames, a grabber buffer {}", first.layout.frames, frames_per_buffer_);
  else
    for (const Batch* b : attached_)
      if (b->pixels.size() < payload_ || b->layout.width != layout_.width || b->layout.frame_height != layout_.frame_height ||
          b->layout.format != layout_.format) {
        why = fmt::format("a pool buffer holds {} bytes, a grabber buffer needs {}", b->pixels.size(), payload_);
        break;
      }
  direct_ = why.empty();
  std::size_t spare_bytes = payload_;
  if (direct_) {
    spare_bytes = attached_.front()->pixels.size();
    for (const Batch* b : attached_) spare_bytes = std::max(spare_bytes, b->pixels.size());
  }
  auto announce = [&](std::byte* p, std::size_t bytes) {
    BUFFER_HANDLE h = nullptr;
    producer_->check(api.DSAnnounceBuffer(stream_, p, bytes, p, &h), "DSAnnounceBuffer");
    announced_[p] = h;
  };
  if (direct_) {
    for (const Batch* b : attached_) announce(b->pixels.data(), b->pixels.size());
  }
  for (int i = 0; i < gentl_.buffers; ++i) {
    HostBuffer buffer = allocator_(spare_bytes);
    std::byte* p = buffer.data();
    announce(p, buffer.size());
    owned_.emplace(p, std::move(buffer));
    queue(p);
  }
  spdlog::info("gentl: {} ({} buffers of {} bytes queued{})", direct_ ? "zero copy: the grabber writes into the pool's batches" : "frames copied into batches",
               gentl_.buffers, spare_bytes, direct_ ? "" : ": " + why);
  producer_->check(api.DSStartAcquisition(stream_, ACQ_START_FLAGS_DEFAULT, GENTL_INFINITE), "DSStartAcquisition");
  acquiring_ = true;
  {
    std::lock_guard lock(feature_mu_);
    if (camera_->has("TLParamsLocked")) arv_device_set_integer_feature_value(camera_->device(), "TLParamsLocked", 1, nullptr);
    if (camera_->has("AcquisitionStart")) {
      Err err;
      arv_device_execute_command(camera_->device(), "AcquisitionStart", err.out());
      if (err) throw DeviceUnavailable(fmt::format("camera {}: AcquisitionStart failed: {}", settings_.id, err.message()));
    }
  }
  last_alive_ns_ = now_ns();
  if (config_.trigger == TriggerMode::Software) trigger_ = std::thread([this] { trigger_loop(); });
}

void GenTLCameraImpl::queue(std::byte* memory) {
  const auto it = announced_.find(memory);
  if (it == announced_.end()) throw RuntimeFailure("gentl: a buffer to queue was never announced (a batch that was not attached?)");
  producer_->check(producer_->api().DSQueueBuffer(stream_, it->second), "DSQueueBuffer");
}

void GenTLCameraImpl::trigger_loop() {
  const auto period = std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(1.0 / config_.frame_rate));
  auto next = clock::now();
  std::unique_lock lock(thread_mu_);
  while (!threads_stop_) {
    thread_cv_.wait_until(lock, next, [this] { return threads_stop_; });
    if (threads_stop_) break;
    lock.unlock();
    {
      std::lock_guard features(feature_mu_);
      arv_device_execute_command(camera_->device(), "TriggerSoftware", nullptr);
    }
    lock.lock();
    next += period;
    if (clock::now() - next > period * 4) next = clock::now();
  }
}

// Stops the grabber writing, takes every buffer back (revoked), closes the
// stream. Idempotent; never throws.
void GenTLCameraImpl::shutdown_stream() noexcept {
  {
    std::lock_guard lock(thread_mu_);
    threads_stop_ = true;
  }
  thread_cv_.notify_all();
  if (trigger_.joinable()) trigger_.join();
  if (!stream_) return;
  const auto& api = producer_->api();
  if (acquiring_) {
    std::lock_guard lock(feature_mu_);
    if (camera_ && camera_->has("AcquisitionStop")) arv_device_execute_command(camera_->device(), "AcquisitionStop", nullptr);
    if (camera_ && camera_->has("TLParamsLocked")) arv_device_set_integer_feature_value(camera_->device(), "TLParamsLocked", 0, nullptr);
    if (api.DSStopAcquisition(stream_, ACQ_STOP_FLAGS_KILL) != GC_ERR_SUCCESS) spdlog::debug("gentl: DSStopAcquisition: {}", producer_->last_error_text());
    acquiring_ = false;
  }
  api.DSFlushQueue(stream_, ACQ_QUEUE_ALL_DISCARD);
  for (auto& [p, h] : announced_) {
    void* mem = nullptr;
    void* priv = nullptr;
    if (api.DSRevokeBuffer(stream_, h, &mem, &priv) != GC_ERR_SUCCESS) spdlog::debug("gentl: DSRevokeBuffer: {}", producer_->last_error_text());
  }
  announced_.clear();
  pending_.reset();
  if (new_buffer_event_ && api.GCUnregisterEvent) api.GCUnregisterEvent(stream_, EVENT_NEW_BUFFER);
  if (error_event_ && api.GCUnregisterEvent) api.GCUnregisterEvent(stream_, EVENT_ERROR);
  new_buffer_event_ = error_event_ = nullptr;
  modules_.erase("Stream");
  if (api.DSClose) api.DSClose(stream_);
  stream_ = nullptr;
}

GenTLCameraImpl::~GenTLCameraImpl() {
  shutdown_stream();
  modules_.clear();
  camera_.reset();
  if (device_ && producer_->api().DevClose) producer_->api().DevClose(device_);
}

void GenTLCameraImpl::declare_lost(const std::string& why) {
  if (lost_.exchange(true)) return;
  loss_seconds_ = (now_ns() - last_alive_ns_) / 1e9;
  {
    std::lock_guard lock(published_mu_);
    loss_reason_ = why;
  }
  spdlog::error("GenTL camera {}: lost: {}", settings_.id, why);
}

// ---------------------------------------------------------------------------
// Streaming.

void GenTLCameraImpl::poll_error_events() {
  if (!error_event_) return;
  const auto& api = producer_->api();
  std::array<char, 2048> data{};
  while (true) {
    std::size_t size = data.size();
    if (api.EventGetData(error_event_, data.data(), &size, 0) != GC_ERR_SUCCESS) return;
    ++error_events_;
    std::string text;
    if (api.EventGetDataInfo) {
      GC_ERROR code = 0;
      std::size_t n = sizeof code;
      INFO_DATATYPE t = 0;
      api.EventGetDataInfo(error_event_, data.data(), size, EVENT_DATA_ID, &t, &code, &n);
      char msg[1024] = {};
      n = sizeof msg;
      api.EventGetDataInfo(error_event_, data.data(), size, EVENT_DATA_VALUE, &t, msg, &n);
      msg[sizeof msg - 1] = '\0';
      text = fmt::format("{} ({}): {}", gentl::error_name(code), code, msg);
    }
    last_error_event_ = text;
    spdlog::warn("GenTL camera {}: the producer reports an error: {}", settings_.id, text);
  }
}

Delivered GenTLCameraImpl::describe_buffer(BUFFER_HANDLE h) {
  const auto& api = producer_->api();
  auto info = [&](BUFFER_INFO_CMD cmd, auto fallback) {
    decltype(fallback) v = fallback;
    std::size_t size = sizeof v;
    INFO_DATATYPE t = 0;
    if (api.DSGetBufferInfo(stream_, h, cmd, &t, &v, &size) != GC_ERR_SUCCESS) return fallback;
    return v;
  };
  Delivered d;
  d.handle = h;
  d.base = static_cast<std::byte*>(info(BUFFER_INFO_BASE, static_cast<void*>(nullptr)));
  d.buffer_id = info(BUFFER_INFO_FRAMEID, std::uint64_t{0});
  d.timestamp_ns = static_cast<std::int64_t>(info(BUFFER_INFO_TIMESTAMP_NS, std::uint64_t{0}));
  if (d.timestamp_ns == 0) d.timestamp_ns = now_ns();
  const bool incomplete = info(BUFFER_INFO_IS_INCOMPLETE, bool8_t{0}) != 0;
  const std::size_t width = info(BUFFER_INFO_WIDTH, static_cast<std::size_t>(layout_.width));
  const std::size_t height = info(BUFFER_INFO_HEIGHT, static_cast<std::size_t>(layout_.frame_height) * frames_per_buffer_);
  const std::uint64_t format = info(BUFFER_INFO_PIXELFORMAT, pfnc(config_.pixel_format));
  const auto fh = static_cast<std::size_t>(layout_.frame_height);
  d.frames = frames_per_buffer_;
  d.geometry_ok = width == static_cast<std::size_t>(layout_.width) && height == fh * frames_per_buffer_ && format == pfnc(config_.pixel_format) &&
                  d.base != nullptr;
  std::size_t delivered_rows = height;
  if (incomplete) {
    delivered_rows = info(BUFFER_INFO_DELIVERED_IMAGEHEIGHT, std::size_t{0});
    if (delivered_rows == 0) {
      const std::size_t filled = info(BUFFER_INFO_SIZE_FILLED, std::size_t{0});
      delivered_rows = layout_.width > 0 ? filled / (static_cast<std::size_t>(layout_.width) * bytes_per_pixel(layout_.format)) : 0;
    }
  }
  d.valid = d.geometry_ok ? static_cast<int>(std::min<std::size_t>(delivered_rows / fh, static_cast<std::size_t>(d.frames))) : 0;
  if (chunks_on_ && !incomplete && d.geometry_ok && api.DSGetBufferChunkData && info(BUFFER_INFO_CONTAINS_CHUNKDATA, bool8_t{0})) {
    std::array<SINGLE_CHUNK_DATA, 16> chunks{};
    std::size_t n = chunks.size();
    if (api.DSGetBufferChunkData(stream_, h, chunks.data(), &n) == GC_ERR_SUCCESS)
      for (std::size_t i = 0; i < std::min(n, chunks.size()); ++i)
        if (chunks[i].ChunkID == gentl::kFrameInfoChunkId &&
            chunks[i].ChunkLength >= static_cast<std::size_t>(d.frames) * sizeof(gentl::FrameInfoRecord) && chunks[i].ChunkOffset >= 0 &&
            static_cast<std::size_t>(chunks[i].ChunkOffset) + chunks[i].ChunkLength <= payload_)
          d.records = reinterpret_cast<const gentl::FrameInfoRecord*>(d.base + chunks[i].ChunkOffset);
  }
  return d;
}

std::optional<Delivered> GenTLCameraImpl::wait_buffer(std::chrono::milliseconds timeout) {
  EVENT_NEW_BUFFER_DATA data{};
  std::size_t size = sizeof data;
  const GC_ERROR rc = producer_->api().EventGetData(new_buffer_event_, &data, &size, static_cast<std::uint64_t>(std::max<long>(timeout.count(), 0)));
  if (rc == GC_ERR_TIMEOUT) return std::nullopt;
  if (rc != GC_ERR_SUCCESS) {
    if (!stop_.load()) declare_lost(fmt::format("EventGetData(NEW_BUFFER) failed: {} {}", gentl::error_name(rc), producer_->last_error_text()));
    return std::nullopt;
  }
  last_alive_ns_ = now_ns();
  ++buffers_;
  Delivered d = describe_buffer(data.BufferHandle);
  // The memory must be one we announced.
  if (!owned_.count(d.base)) {
    declare_lost("the producer delivered a buffer at an address that was never queued");
    return std::nullopt;
  }
  return d;
}

std::uint64_t GenTLCameraImpl::frame_id(const Delivered& d, int k) const {
  if (d.records) return d.records[k].frame_id;
  return d.buffer_id * static_cast<std::uint64_t>(d.frames) + static_cast<std::uint64_t>(k);
}

std::int64_t GenTLCameraImpl::frame_timestamp(const Delivered& d, int k) const {
  if (d.records) return d.records[k].timestamp_ns;
  return d.timestamp_ns + static_cast<std::int64_t>(std::llround(frame_period_ns_ * k));
}

// Direct path: one batch is one grabber buffer, or the missing rows of a gap.
bool GenTLCameraImpl::fill_direct(Batch& batch, int capacity) {
  const std::size_t fb = frame_bytes_;
  if (!pending_) {
    while (!pending_) {
      poll_error_events();
      if (stop_.load()) {
        end_ = SourceEnd::Stopped;
        return false;
      }
      if (lost_.load()) {
        end_ = SourceEnd::DeviceLost;
        return false;
      }
      pending_ = wait_buffer(std::chrono::milliseconds(static_cast<long>(gentl_.event_timeout * 1000)));
    }
    // The frame ids skipped since the last buffer are lost frames.
    const std::uint64_t first = frame_id(*pending_, 0);
    const std::int64_t ts = frame_timestamp(*pending_, 0);
    if (have_previous_ && first > next_id_) {
      const std::uint64_t gap = first - next_id_;
      const std::uint64_t limit = config_.gap_fill_limit ? config_.gap_fill_limit : static_cast<std::uint64_t>(batch_frames_);
      gap_rows_left_ = std::min(gap, limit);
      gap_rows_written_ = 0;
      gap_first_id_ = next_id_;
      gap_total_ = gap;
      gap_ts0_ = previous_ts_;
      gap_ts1_ = ts;
      direct_counters_.lost_gap += gap;
      direct_counters_.gap_not_inserted += gap - gap_rows_left_;
      spdlog::warn("GenTL camera {}: {} frames lost before frame id {} ({} inserted as missing rows)", settings_.id, gap, first, gap_rows_left_);
    } else if (have_previous_ && first < next_id_) {
      spdlog::warn("GenTL camera {}: frame id {} after {}: the grabber's counter restarted; no gap counted", settings_.id, first, next_id_ - 1);
    }
  }
  if (gap_rows_left_ > 0) {
    // Missing rows go into the batch's own buffer (it is not the grabber's).
    const int rows = static_cast<int>(std::min<std::uint64_t>(gap_rows_left_, static_cast<std::uint64_t>(capacity)));
    for (int i = 0; i < rows; ++i) {
      const std::uint64_t k = gap_rows_written_ + static_cast<std::uint64_t>(i) + 1;
      const std::int64_t t =
          gap_ts0_ + static_cast<std::int64_t>(static_cast<double>(gap_ts1_ - gap_ts0_) * static_cast<double>(k) / static_cast<double>(gap_total_ + 1));
      std::memset(batch.frame_data(i), 0, fb);
      batch.meta[i] = FrameMeta{};
      batch.meta[i].frame_id = gap_first_id_ + k - 1;
      batch.meta[i].timestamp_ns = t;
      batch.meta[i].missing = true;
    }
    batch.frames = rows;
    gap_rows_left_ -= static_cast<std::uint64_t>(rows);
    gap_rows_written_ += static_cast<std::uint64_t>(rows);
    // The ids of the rows not inserted (beyond gap_fill_limit) are skipped.
    return true;
  }

  // Hand the delivered buffer on as this batch: swap the memories.
  Delivered d = *pending_;
  pending_.reset();
  auto it = owned_.find(d.base);
  HostBuffer filled = std::move(it->second);
  owned_.erase(it);
  std::byte* freed = batch.pixels.data();
  if (!announced_.count(freed)) {
    owned_.emplace(d.base, std::move(filled));
    throw RuntimeFailure("gentl: fill() was given a batch that was not attached (zero-copy path)");
  }
  HostBuffer previous = std::move(batch.pixels);
  batch.pixels = std::move(filled);
  owned_.emplace(freed, std::move(previous));
  queue(freed);
  ++buffers_direct_;
  last_direct_base_ = d.base;

  const int n = std::min(d.frames, capacity);
  for (int k = 0; k < n; ++k) {
    FrameMeta& m = batch.meta[k];
    m = FrameMeta{};
    m.frame_id = frame_id(d, k);
    m.timestamp_ns = frame_timestamp(d, k);
    if (d.records && (d.records[k].flags & gentl::kFrameHasEncoder)) {
      m.has_encoder = true;
      m.encoder = d.records[k].encoder;
    }
    const bool arrived = k < d.valid;
    if (arrived && !frame_failed(d, k)) {
      ++direct_counters_.frames_complete;
      continue;
    }
    m.missing = true;
    std::memset(batch.frame_data(k), 0, fb);
    if (!d.geometry_ok || (arrived && frame_failed(d, k)))
      ++direct_counters_.lost_failed;
    else
      ++direct_counters_.lost_incomplete;
  }
  batch.frames = n;
  have_previous_ = true;
  next_id_ = frame_id(d, d.frames - 1) + 1;
  previous_ts_ = frame_timestamp(d, d.frames - 1);
  return true;
}

// Assemble path: copy frames into the batch until it is full or flushed.
bool GenTLCameraImpl::fill_assembled(Batch& batch, int capacity) {
  std::optional<clock::time_point> flush_at;
  bool full = false, flushed = false;
  const auto poll = std::chrono::milliseconds(static_cast<long>(gentl_.event_timeout * 1000));
  while (true) {
    poll_error_events();
    if (!pending_) {
      if (stop_.load()) {
        end_ = SourceEnd::Stopped;
        break;
      }
      if (lost_.load()) {
        end_ = SourceEnd::DeviceLost;
        break;
      }
      auto wait = poll;
      if (flush_at) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*flush_at - clock::now());
        if (left.count() <= 0) {
          flushed = true;
          break;
        }
        wait = std::min(wait, left);
      }
      pending_ = wait_buffer(wait);
      if (!pending_) continue;
    }
    Delivered& d = *pending_;
    bool batch_full = false;
    for (; d.next < d.frames; ++d.next) {
      const int k = d.next;
      ArrivedFrame f;
      f.frame_id = frame_id(d, k);
      f.timestamp_ns = frame_timestamp(d, k);
      if (d.records && (d.records[k].flags & gentl::kFrameHasEncoder)) f.encoder = d.records[k].encoder;
      f.status = !d.geometry_ok ? FrameStatus::Failed
                 : k >= d.valid ? FrameStatus::MissingPackets
                 : frame_failed(d, k) ? FrameStatus::Failed
                                      : FrameStatus::Complete;
      f.width = layout_.width;
      f.height = layout_.frame_height;
      f.format = layout_.format;
      f.data = d.base + static_cast<std::size_t>(k) * frame_bytes_;
      f.bytes = frame_bytes_;
      const auto complete_before = assembler_.counters().frames_complete;
      if (assembler_.add(batch, f, capacity) == BatchAssembler::Result::BatchFull) {
        batch_full = true;
        break;
      }
      frames_copied_ += assembler_.counters().frames_complete - complete_before;
    }
    if (d.next >= d.frames) {
      queue(d.base);
      pending_.reset();
    }
    if (!flush_at && batch.frames > 0 && config_.flush_timeout > 0)
      flush_at = clock::now() + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(config_.flush_timeout));
    if (batch_full || batch.frames >= capacity) {
      full = true;
      break;
    }
  }
  if (full) ++batches_full_;
  if (flushed) ++batches_flushed_;
  return batch.frames > 0;
}

bool GenTLCameraImpl::fill(Batch& batch) {
  batch.frames = 0;
  if (!stream_) {
    end_ = SourceEnd::Stopped;  // detached
    return false;
  }
  int capacity = batch.layout.frames;
  if (config_.frames) {
    if (rows_delivered_ >= config_.frames) {
      end_ = SourceEnd::Exhausted;
      return false;
    }
    capacity = static_cast<int>(std::min<std::uint64_t>(static_cast<std::uint64_t>(capacity), config_.frames - rows_delivered_));
  }
  if (!started_) start(batch);
  bool got = false;
  if (direct_) {
    got = fill_direct(batch, capacity);
    if (got) ++(batch.frames >= batch.layout.frames ? batches_full_ : batches_flushed_);
  } else {
    got = fill_assembled(batch, capacity);
  }
  rows_delivered_ += static_cast<std::uint64_t>(batch.frames);
  publish();
  return got && batch.frames > 0;
}

void GenTLCameraImpl::publish() {
  poll_error_events();  // an error the producer raised before the last buffer counts now
  AcquisitionCounters c = assembler_.counters();
  const AcquisitionCounters& d = direct_counters_;
  c.frames_complete += d.frames_complete;
  c.lost_gap += d.lost_gap;
  c.lost_incomplete += d.lost_incomplete;
  c.lost_timeout += d.lost_timeout;
  c.lost_failed += d.lost_failed;
  c.gap_not_inserted += d.gap_not_inserted;
  c.batches_full = batches_full_;
  c.batches_flushed = batches_flushed_;
  c.device_errors = error_events_;
  if (stream_) {
    std::uint64_t underruns = 0;
    std::size_t size = sizeof underruns;
    INFO_DATATYPE t = 0;
    if (producer_->api().DSGetInfo(stream_, STREAM_INFO_NUM_UNDERRUN, &t, &underruns, &size) == GC_ERR_SUCCESS) c.underruns = underruns;
  }
  std::lock_guard lock(published_mu_);
  published_ = c;
  stats_.buffers = buffers_;
  stats_.buffers_direct = buffers_direct_;
  stats_.frames_copied = frames_copied_;
  stats_.error_events = error_events_;
  stats_.last_error_event = last_error_event_;
  stats_.payload_bytes = payload_;
  stats_.frames_per_buffer = frames_per_buffer_;
  stats_.direct = direct_;
  stats_.last_direct_base = last_direct_base_;
}

}  // namespace

void GenTLConfig::validate() const {
  auto bad = [](const std::string& key, const std::string& what) { throw ConfigError("camera.gentl." + key + ": " + what); };
  if (frames_per_buffer < 0 || frames_per_buffer > kMaxBatchFrames)
    bad("frames_per_buffer", fmt::format("{} is out of range (expected 0 = the grabber's, or 1..{})", frames_per_buffer, kMaxBatchFrames));
  if (frames_per_buffer_feature.empty()) bad("frames_per_buffer_feature", "is empty (expected [Module.]Name, e.g. Device.FramesPerBuffer)");
  for (const auto& f : grabber_features)
    if (f.find('=') == std::string::npos || f.front() == '=') bad("grabber_features", fmt::format("'{}' is not of the form [Module.]Name=Value", f));
  if (buffers < 1 || buffers > 1024) bad("buffers", fmt::format("{} is out of range (expected 1..1024)", buffers));
  if (!(event_timeout >= 0.001 && event_timeout <= 10)) bad("event_timeout", fmt::format("{} s is out of range (expected 0.001..10)", event_timeout));
}

bool gentl_support_built() { return true; }

std::vector<GenTLDeviceInfo> list_gentl_devices(const std::string& cti, std::vector<std::string>* errors) {
  const auto paths = gentl::producer_paths(cti);
  if (paths.empty()) throw ConfigError(gentl::no_producer_message(cti));
  std::vector<GenTLDeviceInfo> found;
  for (const auto& path : paths) {
    try {
      auto p = gentl::load_producer(path);
      const auto& api = p->api();
      for (const auto& ifid : p->interface_ids()) {
        const std::string tltype = p->interface_tltype(ifid);
        IF_HANDLE iface = p->open_interface(ifid);
        bool8_t changed = 0;
        p->check(api.IFUpdateDeviceList(iface, &changed, 1000), "IFUpdateDeviceList");
        std::uint32_t n = 0;
        p->check(api.IFGetNumDevices(iface, &n), "IFGetNumDevices");
        for (std::uint32_t i = 0; i < n; ++i) {
          GenTLDeviceInfo d;
          d.cti = path;
          d.producer = (p->vendor() + " " + p->model());
          d.interface_id = ifid;
          d.interface_tltype = tltype;
          d.id = gentl::info_string(*p, "IFGetDeviceID", [&](INFO_DATATYPE*, void* b, std::size_t* s) {
            return api.IFGetDeviceID(iface, i, static_cast<char*>(b), s);
          });
          d.vendor = device_string(*p, iface, d.id, DEVICE_INFO_VENDOR);
          d.model = device_string(*p, iface, d.id, DEVICE_INFO_MODEL);
          d.serial = device_string(*p, iface, d.id, DEVICE_INFO_SERIAL_NUMBER);
          d.tltype = device_string(*p, iface, d.id, DEVICE_INFO_TLTYPE);
          d.display_name = device_string(*p, iface, d.id, DEVICE_INFO_DISPLAYNAME);
          std::int32_t access = DEVICE_ACCESS_STATUS_UNKNOWN;
          std::size_t size = sizeof access;
          INFO_DATATYPE t = 0;
          api.IFGetDeviceInfo(iface, d.id.c_str(), DEVICE_INFO_ACCESS_STATUS, &t, &access, &size);
          d.access = access_name(access);
          found.push_back(std::move(d));
        }
      }
    } catch (const DeviceUnavailable& e) {
      spdlog::warn("{}", e.what());
      if (errors) errors->push_back(e.what());
    }
  }
  return found;
}

std::unique_ptr<GenTLCamera> open_gentl_camera(const CameraConfig& camera, const GenTLConfig& gentl, int batch_frames) {
  return std::make_unique<GenTLCameraImpl>(camera, gentl, batch_frames);
}

}  // namespace stripeline
