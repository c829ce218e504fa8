#pragma once
// GenTLCameraImpl: the GenTL consumer behind open_gentl_camera(), shared by
// its translation units (private to acquisition/gentl/):
//   gentl_camera.cpp  opening the device, configuring and reading it back
//                     (through the GenICam configurator), listing devices;
//   gentl_stream.cpp  the data stream: buffers announced, queued, revoked;
//                     the delivery path chosen (direct or copy);
//   gentl_fill.cpp    fill(): buffers into batches, losses counted.
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
#include <arv.h>
#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "acquisition/aravis/arv_features.h"
#include "acquisition/batch_assembler.h"
#include "acquisition/genicam_configurator.h"
#include "acquisition/gentl/frame_info_chunk.h"
#include "acquisition/gentl/gentl_camera.h"
#include "acquisition/gentl/gentl_loader.h"
#include "acquisition/gentl/port_node_map.h"
#include "core/errors.h"

namespace stripeline::gentl_detail {

using gentl::PortNodeMap;
using gentl::Producer;
using clock = std::chrono::steady_clock;

inline std::int64_t now_ns() { return std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now().time_since_epoch()).count(); }

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

inline std::uint64_t pfnc(const std::string& name) {
  if (name == "Mono8") return 0x01080001;
  if (name == "Mono10") return 0x01100003;
  if (name == "Mono12") return 0x01100005;
  if (name == "Mono14") return 0x01100025;
  return 0x01100007;  // Mono16
}

// "[Module.]Name[=Value]" -> (module, rest). Module defaults to Device.
inline std::pair<std::string, std::string> split_module(const std::string& s) {
  const auto dot = s.find('.');
  const auto eq = s.find('=');
  if (dot != std::string::npos && (eq == std::string::npos || dot < eq)) {
    const std::string module = s.substr(0, dot);
    if (module == "System" || module == "Interface" || module == "Device" || module == "Stream") return {module, s.substr(dot + 1)};
  }
  return {"Device", s};
}

inline std::string device_string(const Producer& p, IF_HANDLE iface, const std::string& id, DEVICE_INFO_CMD cmd) {
  try {
    return gentl::info_string(p, "IFGetDeviceInfo", [&](INFO_DATATYPE* t, void* b, std::size_t* s) {
      return p.api().IFGetDeviceInfo(iface, id.c_str(), cmd, t, b, s);
    });
  } catch (const DeviceUnavailable&) {
    return {};
  }
}

inline const char* access_name(std::int32_t a) {
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
  // 0 with camera.direct_buffers = false: the pipeline attaches nothing and
  // every frame is copied (the copy path, for measurements).
  std::size_t direct_buffer_bytes() const override { return config_.direct_buffers ? payload_ : 0; }
  void attach_buffers(std::span<Batch* const> batches, HostAllocator allocator) override;
  void detach_buffers() noexcept override { shutdown_stream(); }

 private:
  void open_device();
  void configure();
  void configure_transport();
  void configure_grabber();
  void read_frames_per_buffer();
  void read_back();
  void open_data_stream();
  void prepare_stream();
  void start(const Batch& first);
  std::string why_not_direct(const Batch& first) const;
  bool announce_pool();
  // One spare buffer of `bytes`: our memory, or, from a producer that takes
  // only its own (DSAnnounceBuffer refused), its DSAllocAndAnnounceBuffer.
  void announce_spare(std::size_t bytes);
  void shutdown_stream() noexcept;
  PortNodeMap& module_map(const std::string& module);

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
  aravis::DeviceFeatures features_;                              // camera_'s node map, for the configurator
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
  std::unordered_set<std::byte*> producer_owned_;  // the producer's memory (copy path only): read where it is, revoked at the end
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
  SoftwareTrigger trigger_;
};

}  // namespace stripeline::gentl_detail
