#pragma once
// Live GenICam cameras (GigE Vision, USB3 Vision) through Aravis: the
// frame-grabber side of stripeline. docs/cameras.md tells the whole story.
//
// This header does not need Aravis: without it (STRIPELINE_HAVE_ARAVIS unset)
// open_camera() and list_cameras() throw a ConfigError that says so.
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "acquisition/source.h"

namespace stripeline {

enum class TriggerMode : std::uint8_t {
  FreeRun,   // the camera runs at frame_rate
  External,  // one frame per edge on trigger_source (a line, an encoder output)
  Software,  // stripeline fires TriggerSoftware at frame_rate (tests, bench set-ups)
};

// [camera] in a config file. Zero or empty means "leave the camera's value".
struct CameraConfig {
  // "aravis": a GigE Vision / USB3 Vision camera through Aravis; "gentl": a
  // camera behind a frame grabber, through the grabber's GenTL producer
  // ([camera.gentl], acquisition/gentl/gentl_camera.h). docs/cameras.md.
  std::string transport = "aravis";
  std::string id;                  // Aravis id ("Vendor-Model-Serial"), serial number or IP address; "" = first found
  int width = 0;                   // ROI: the stripe frame
  int height = 0;
  int offset_x = 0;
  int offset_y = 0;
  std::string pixel_format = "Mono8";  // Mono8, or Mono10/Mono12/Mono14/Mono16 (16-bit pixels)
  double exposure_us = 0;          // 0 = leave
  double gain = -1;                // dB (or raw units on cameras without Gain); < 0 = leave
  double frame_rate = 0;           // frames per second; 0 = leave (free run) / required for software trigger
  TriggerMode trigger = TriggerMode::FreeRun;
  std::string trigger_source = "Line1";       // External: the camera's TriggerSource entry
  std::string trigger_activation = "RisingEdge";
  std::string encoder_chunk;       // chunk feature carrying the encoder count ("ChunkEncoderValue"); "" = none
  std::vector<std::string> features;  // extra "Name=Value" settings applied last, in order

  // Transport
  int packet_size = 0;             // GigE Vision packet size, bytes; 0 = negotiate
  bool packet_socket = true;       // false: Aravis' plain socket path (needed on loopback)
  int socket_buffer = 4 << 20;     // GigE Vision receive socket buffer, bytes (0 = the OS default; the kernel caps it at net.core.rmem_max)
  int stream_buffers = 64;         // driver buffers queued for the camera
  double frame_timeout = 0;        // seconds before the driver gives up on a frame; 0 = Aravis' default
  double heartbeat_timeout = 3.0;  // seconds: the camera is declared lost after this long without an answer

  // Zero copy: a frame grabber that concatenates frames_per_buffer frames
  // (= processing.batch_frames) writes straight into the pipeline's batches.
  // false forces the copy path (measurements, a producer that misbehaves).
  bool direct_buffers = true;

  // Batch assembly
  double flush_timeout = 0.1;      // hand on a partial batch after this many seconds (0 = only full batches)
  std::uint64_t gap_fill_limit = 0;  // largest gap inserted as missing rows; 0 = one batch
  std::uint64_t frames = 0;        // stop after this many frames (0 = until stopped)
  double reconnect_interval = 1.0; // daemon: seconds between attempts to reopen a lost camera

  void validate() const;           // ConfigError naming the key
  // How frames are stored: Mono8, or Mono16 for every wider format.
  PixelFormat storage_format() const;
};

// What the camera accepted: read back after configuring, logged, kept.
struct CameraSettings {
  std::string id, vendor, model, serial, address, protocol;
  int width = 0, height = 0, offset_x = 0, offset_y = 0;
  std::string pixel_format;
  double exposure_us = 0, gain = 0, frame_rate = 0;
  std::string trigger;            // "free-run", "external Line1 RisingEdge", "software"
  int packet_size = 0;
  std::string describe() const;   // one line for logs
};

struct CameraInfo {
  std::string id, vendor, model, serial, address, protocol;
};

// True when this build has Aravis.
bool camera_support_built();
// Cameras the Aravis interfaces find now (GigE Vision discovery broadcasts
// on every interface; USB3 Vision enumerates the bus).
std::vector<CameraInfo> list_cameras();

// A live camera as a FrameSource. fill() waits for frames, packs them with a
// BatchAssembler and hands the batch on when it is full or flush_timeout after
// its first frame; it returns false when stopped, after `frames` frames, or
// when the camera is lost (end_reason() tells which).
class CameraSource : public FrameSource {
 public:
  virtual const CameraSettings& settings() const = 0;
  const CameraSettings* camera_settings() const override { return &settings(); }
  // Seconds from the last sign of life to the loss being declared (0 until lost).
  double loss_detection_seconds() const override = 0;
  std::string loss_reason() const override = 0;
  // The PixelFormat the camera accepted (settings()), through
  // pixel_format_significant_bits(): the same for Aravis and GenTL cameras.
  SignificantBits significant_bits() const override;
};

// Opens and configures the camera. Throws DeviceUnavailable when it cannot
// be found or reached, ConfigError when it refuses a setting (naming the key,
// the value asked and what it accepted or allows).
std::unique_ptr<CameraSource> open_camera(const CameraConfig& config, int batch_frames);

const char* to_string(TriggerMode t);

}  // namespace stripeline
