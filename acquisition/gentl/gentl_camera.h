#pragma once
// Frame grabbers (CoaXPress, Camera Link, 10GigE boards...) through their
// vendors' GenTL producers: a GenTL consumer as a CameraSource, with the
// same contract as the Aravis camera (frame ids, timestamps, encoder counts,
// losses counted by cause, every lost frame a missing row). docs/cameras.md,
// "GenTL".
//
// The grabber may concatenate N frames into one buffer (300 frames of
// 2048x52 in one 2048x15600 buffer). When the pipeline attaches its pool
// (FrameSource::attach_buffers) and a batch is N frames, the grabber writes
// straight into the pool's pinned batch buffers: each buffer becomes one
// batch with no copy. Otherwise every frame is copied through the
// BatchAssembler, as for Aravis.
//
// This header does not need Aravis; without it (STRIPELINE_HAVE_ARAVIS unset:
// Aravis is the GenApi engine) open_gentl_camera() and list_gentl_devices()
// throw a ConfigError that says so.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "acquisition/camera_source.h"

namespace stripeline {

// [camera.gentl]: what only a GenTL set-up has. The camera's own settings
// (ROI, pixel format, exposure, gain, rate, trigger, features, flush, gaps)
// are the [camera] keys of CameraConfig.
struct GenTLConfig {
  std::string cti;     // a .cti file or a folder of them; "" = the folders of GENICAM_GENTL64_PATH
  std::string device;  // device id, serial number or display name; "interface/device" picks the interface too; "" = first found
  int frames_per_buffer = 0;  // frames the grabber concatenates into one buffer; 0 = leave the grabber's setting
  // The grabber feature that holds frames_per_buffer, "[Module.]Name" with
  // Module System, Interface, Device (the default: the grabber) or Stream.
  std::string frames_per_buffer_feature = "Device.FramesPerBuffer";
  // Grabber-side settings, "[Module.]Name=Value", applied after the camera's
  // (trigger sources, encoder dividers, line/frame triggers of the board).
  std::vector<std::string> grabber_features;
  bool frame_info_chunk = true;  // switch the camera's chunk mode on when it has one: per-frame ids, timestamps, encoder, status
  int buffers = 4;               // buffers of our own queued to the grabber (beside the pool's, when attached)
  double event_timeout = 0.02;   // seconds one wait for a buffer lasts before stop/flush are checked

  void validate() const;  // ConfigError naming the key
};

struct GenTLDeviceInfo {
  std::string cti, producer;                  // .cti path; its vendor and model
  std::string interface_id, interface_tltype; // the board / link
  std::string id, vendor, model, serial, tltype, display_name, access;
};

struct GenTLStats {
  std::uint64_t buffers = 0;         // buffers received from the grabber
  std::uint64_t buffers_direct = 0;  // of which handed on as a batch without a copy
  std::uint64_t frames_copied = 0;   // frames copied into a batch (the BatchAssembler path)
  std::uint64_t error_events = 0;    // EVENT_ERROR notifications
  std::string last_error_event;
  // BUFFER_INFO_BASE of the last grabber buffer handed on as a batch (direct
  // path): the batch's pixels are this memory.
  const void* last_direct_base = nullptr;
  std::size_t payload_bytes = 0;     // bytes of one grabber buffer
  int frames_per_buffer = 0;
  bool direct = false;               // the zero-copy path is in use
};

// True when this build has the GenTL consumer (it needs Aravis for GenApi).
bool gentl_support_built();

// Every device of every producer found (see gentl::producer_paths). A
// producer that fails to load is skipped; its error is appended to `errors`
// when given. Throws ConfigError when no producer is found at all, with
// what to install (gentl::no_producer_message).
std::vector<GenTLDeviceInfo> list_gentl_devices(const std::string& cti, std::vector<std::string>* errors = nullptr);

class GenTLCamera : public CameraSource {
 public:
  virtual GenTLStats gentl_stats() const = 0;
};

// Opens, configures and reads back the device. Throws ConfigError for a
// refused setting or no producer installed, DeviceUnavailable when the
// device cannot be found or opened.
std::unique_ptr<GenTLCamera> open_gentl_camera(const CameraConfig& camera, const GenTLConfig& gentl, int batch_frames);

}  // namespace stripeline
