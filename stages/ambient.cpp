// See ambient.h.
#include "stages/ambient.h"

#include <tbb/parallel_for.h>

#include <cstring>

#include "core/errors.h"

namespace stripeline {

const char* to_string(AmbientMode m) {
  switch (m) {
    case AmbientMode::None: return "none";
    case AmbientMode::DarkFrame: return "dark-frame";
    case AmbientMode::Alternate: return "alternate";
  }
  return "?";
}

AmbientMode parse_ambient_mode(const std::string& text) {
  if (text == "none") return AmbientMode::None;
  if (text == "dark-frame") return AmbientMode::DarkFrame;
  if (text == "alternate") return AmbientMode::Alternate;
  throw ConfigError("ambient = '" + text + "' is not known (expected none, dark-frame or alternate)");
}

void AmbientConfig::validate() const {
  if (mode == AmbientMode::DarkFrame && !dark && dark_frame_path.empty())
    throw ConfigError("ambient = \"dark-frame\" needs dark_frame = \"laser-off image\" (one frame, the recording's width and depth)");
}

AmbientSuppressor::AmbientSuppressor(const AmbientConfig& config, const BatchLayout& frames) : config_(config), layout_(frames) {
  if (config_.mode != AmbientMode::DarkFrame) return;
  if (!config_.dark) throw RuntimeFailure("AmbientSuppressor: dark-frame mode without a loaded dark frame");
  const DarkFrame& d = *config_.dark;
  if (d.width != frames.width || d.height != frames.frame_height || d.format != frames.format)
    throw InputError(d.origin + ": the dark frame is " + std::to_string(d.width) + "x" + std::to_string(d.height) + " " + to_string(d.format) +
                     " (expected one frame of the recording: " + std::to_string(frames.width) + "x" + std::to_string(frames.frame_height) + " " +
                     to_string(frames.format) + ")");
  if (d.pixels.size() != frames.frame_pixels() * bytes_per_pixel(frames.format)) throw RuntimeFailure("AmbientSuppressor: dark frame size");
}

namespace {

template <class T>
void subtract(T* on, const T* off, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) on[i] = on[i] > off[i] ? static_cast<T>(on[i] - off[i]) : T{0};
}

void subtract_frame(std::byte* on, const std::byte* off, std::size_t pixels, PixelFormat f) {
  if (f == PixelFormat::Mono8)
    subtract(reinterpret_cast<std::uint8_t*>(on), reinterpret_cast<const std::uint8_t*>(off), pixels);
  else
    subtract(reinterpret_cast<std::uint16_t*>(on), reinterpret_cast<const std::uint16_t*>(off), pixels);
}

}  // namespace

std::uint64_t AmbientSuppressor::apply(Batch& b) const {
  const std::size_t pixels = layout_.frame_pixels();
  const std::size_t frame_bytes = pixels * bytes_per_pixel(layout_.format);
  switch (config_.mode) {
    case AmbientMode::None: return 0;
    case AmbientMode::DarkFrame:
      tbb::parallel_for(0, b.frames, [&](int f) {
        if (!b.meta[static_cast<std::size_t>(f)].missing) subtract_frame(b.frame_data(f), config_.dark->pixels.data(), pixels, layout_.format);
      });
      return 0;
    case AmbientMode::Alternate: {
      const int pairs = b.frames / 2;
      const int on_at = config_.off_first ? 1 : 0;
      // The differences in parallel, each into its laser-on frame; then the
      // frames packed to the front in order (frame k <= 2k + on_at: every
      // move lands on a frame already moved or read).
      tbb::parallel_for(0, pairs, [&](int k) {
        subtract_frame(b.frame_data(2 * k + on_at), b.frame_data(2 * k + 1 - on_at), pixels, layout_.format);
      });
      for (int k = 0; k < pairs; ++k) {
        FrameMeta meta = b.meta[static_cast<std::size_t>(2 * k + on_at)];
        meta.missing = meta.missing || b.meta[static_cast<std::size_t>(2 * k + 1 - on_at)].missing;
        if (2 * k + on_at != k) std::memmove(b.frame_data(k), b.frame_data(2 * k + on_at), frame_bytes);
        b.meta[static_cast<std::size_t>(k)] = meta;
      }
      const auto consumed = static_cast<std::uint64_t>(b.frames - pairs);
      b.frames = pairs;
      return consumed;
    }
  }
  return 0;
}

}  // namespace stripeline
