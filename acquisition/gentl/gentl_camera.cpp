// GenTLCamera: open a device through its GenTL producer, configure it
// through GenApi (port_node_map.h) with the GenICam configurator, list
// devices. docs/cameras.md ("GenTL") describes the behaviour;
// gentl_camera_impl.h says which file does what.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>

#include "acquisition/gentl/gentl_camera_impl.h"

namespace stripeline::gentl_detail {

// ---------------------------------------------------------------------------
// Opening.

GenTLCameraImpl::GenTLCameraImpl(const CameraConfig& camera, const GenTLConfig& gentl, int batch_frames)
    : config_(camera), gentl_(gentl), batch_frames_(batch_frames), assembler_(BatchLayout{}, 0) {
  config_.validate();
  gentl_.validate();
  // One camera of the process opened and configured at a time: two heads
  // configuring theirs at once crossed their GenApi writes (head b's
  // SimUnplugAfterBuffers reached head a's grabber, a payload size came back
  // wrong; tests/gentl GenTLDaemon.AHeadsLost..., 1 run in 4 under load).
  std::lock_guard setup(gentl::setup_mutex());
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

// The standard sequence is the configurator's (genicam_configurator.h);
// what only a grabber needs: the per-frame information chunk (inside the
// sequence, before camera.features), then the grabber's own settings.
void GenTLCameraImpl::configure() {
  features_.reset(camera_->device());
  configure_camera(features_, config_, [&] { configure_transport(); });
  configure_grabber();
}

void GenTLCameraImpl::configure_transport() {
  chunks_on_ = false;
  if (gentl_.frame_info_chunk && features_.has("ChunkModeActive")) {
    try {
      features_.set_bool("ChunkModeActive", true);
      chunks_on_ = true;
    } catch (const FeatureError& e) {
      spdlog::warn("gentl: camera {}: chunk mode refused: {}", settings_.id, e.what());
    }
  }
  if (!config_.encoder_chunk.empty() && !chunks_on_)
    throw ConfigError(fmt::format(
        "camera.encoder_chunk: '{}': with GenTL the encoder count is read from the per-frame information chunk, and this camera has "
        "no chunk mode (ChunkModeActive) or camera.gentl.frame_info_chunk is false",
        config_.encoder_chunk));
}

// The grabber, after the camera: frames per buffer, then its own features.
void GenTLCameraImpl::configure_grabber() {
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
  read_back_camera(features_, config_, settings_);
  frame_bytes_ = static_cast<std::size_t>(settings_.width) * settings_.height * bytes_per_pixel(config_.storage_format());
  read_frames_per_buffer();
  frame_period_ns_ = settings_.frame_rate > 0 ? 1e9 / settings_.frame_rate : 0.0;
}

// Frames per buffer: the grabber's setting when it has the feature.
void GenTLCameraImpl::read_frames_per_buffer() {
  frames_per_buffer_ = 1;
  const auto [module, name] = split_module(gentl_.frames_per_buffer_feature);
  PortNodeMap* m = nullptr;
  try {
    m = &module_map(module);
  } catch (const std::exception& e) {
    spdlog::debug("gentl: no {} node map: {}", module, e.what());
  }
  if (m && m->has(name)) {
    Err err;
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

}  // namespace stripeline::gentl_detail

namespace stripeline {

using namespace gentl_detail;

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
