// The parts of camera support that do not need Aravis: configuration checks
// and descriptions. The cameras themselves are acquisition/aravis/ (or, in a
// build without Aravis, acquisition/camera_unavailable.cpp).
#include "acquisition/camera_source.h"

#include <fmt/format.h>

#include "acquisition/pixel_bits.h"
#include "core/errors.h"

namespace stripeline {

namespace {
[[noreturn]] void bad(const std::string& key, const std::string& what) { throw ConfigError("camera." + key + ": " + what); }
}  // namespace

const char* to_string(TriggerMode t) {
  switch (t) {
    case TriggerMode::FreeRun: return "free-run";
    case TriggerMode::External: return "external";
    case TriggerMode::Software: return "software";
  }
  return "?";
}

PixelFormat CameraConfig::storage_format() const { return pixel_format == "Mono8" ? PixelFormat::Mono8 : PixelFormat::Mono16; }

void CameraConfig::validate() const {
  if (transport != "aravis" && transport != "gentl") bad("transport", fmt::format("'{}' is not known (expected aravis or gentl)", transport));
  if (width < 0 || width > kMaxWidth) bad("width", fmt::format("{} is out of range (expected 0 = the camera's, or 1..{})", width, kMaxWidth));
  if (height < 0 || height > kMaxFrameHeight)
    bad("height", fmt::format("{} is out of range (expected 0 = the camera's, or 1..{})", height, kMaxFrameHeight));
  if (offset_x < 0) bad("offset_x", fmt::format("{} is negative", offset_x));
  if (offset_y < 0) bad("offset_y", fmt::format("{} is negative", offset_y));
  if (pixel_format != "Mono8" && pixel_format != "Mono10" && pixel_format != "Mono12" && pixel_format != "Mono14" &&
      pixel_format != "Mono16")
    bad("pixel_format", fmt::format("'{}' is not supported (expected Mono8, Mono10, Mono12, Mono14 or Mono16)", pixel_format));
  if (exposure_us < 0) bad("exposure_us", fmt::format("{} is negative (0 = leave the camera's)", exposure_us));
  if (frame_rate < 0) bad("frame_rate", fmt::format("{} is negative (0 = leave the camera's)", frame_rate));
  if (trigger == TriggerMode::Software && !(frame_rate > 0))
    bad("frame_rate", "is required (> 0) with trigger = \"software\": it is the rate stripeline triggers at");
  if (trigger == TriggerMode::External && trigger_source.empty()) bad("trigger_source", "is required with trigger = \"external\"");
  if (packet_size < 0 || packet_size > 65535) bad("packet_size", fmt::format("{} is out of range (expected 0 = negotiate, or 576..65535)", packet_size));
  if (packet_size > 0 && packet_size < 576) bad("packet_size", fmt::format("{} is too small (expected 576..65535)", packet_size));
  if (socket_buffer < 0) bad("socket_buffer", fmt::format("{} is negative (0 = the OS default)", socket_buffer));
  if (stream_buffers < 2 || stream_buffers > 4096) bad("stream_buffers", fmt::format("{} is out of range (expected 2..4096)", stream_buffers));
  if (frame_timeout < 0 || frame_timeout > 60) bad("frame_timeout", fmt::format("{} s is out of range (expected 0..60, 0 = Aravis' default)", frame_timeout));
  if (!(heartbeat_timeout >= 0.5 && heartbeat_timeout <= 600))
    bad("heartbeat_timeout", fmt::format("{} s is out of range (expected 0.5..600)", heartbeat_timeout));
  if (!(flush_timeout >= 0 && flush_timeout <= 3600)) bad("flush_timeout", fmt::format("{} s is out of range (expected 0..3600)", flush_timeout));
  if (!(reconnect_interval >= 0.05 && reconnect_interval <= 3600))
    bad("reconnect_interval", fmt::format("{} s is out of range (expected 0.05..3600)", reconnect_interval));
  for (const auto& f : features)
    if (f.find('=') == std::string::npos || f.front() == '=')
      bad("features", fmt::format("'{}' is not of the form Name=Value", f));
}

SignificantBits CameraSource::significant_bits() const {
  const int bits = pixel_format_significant_bits(settings().pixel_format);
  if (bits == 0) return {};
  return {bits, BitsOrigin::Camera};
}

std::string CameraSettings::describe() const {
  return fmt::format("{} {} (serial {}, {} {}): {}x{}+{}+{} {}, exposure {} us, gain {}, {:.6g} frames/s, trigger {}{}", vendor, model,
                     serial, protocol, address, width, height, offset_x, offset_y, pixel_format, exposure_us, gain, frame_rate,
                     trigger, packet_size > 0 ? fmt::format(", packets of {} bytes", packet_size) : std::string());
}

}  // namespace stripeline
