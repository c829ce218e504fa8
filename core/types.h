#pragma once
// The data model of stripeline: frames, batches and their layout.
// See docs/data-model.md for the prose version.
#include <cstddef>
#include <cstdint>
#include <string>

namespace stripeline {

enum class PixelFormat : std::uint8_t { Mono8 = 8, Mono16 = 16 };

inline std::size_t bytes_per_pixel(PixelFormat f) { return f == PixelFormat::Mono8 ? 1 : 2; }
inline const char* to_string(PixelFormat f) { return f == PixelFormat::Mono8 ? "Mono8" : "Mono16"; }

// Calls f(T{}) with T the pixel type of `format` (uint8_t or uint16_t): one
// template body serves both depths.
template <class F>
void with_pixel_type(PixelFormat format, F&& f) {
  if (format == PixelFormat::Mono8)
    f(std::uint8_t{});
  else
    f(std::uint16_t{});
}

// Metadata of one camera frame (= one profile once processed).
struct FrameMeta {
  std::uint64_t frame_id = 0;      // camera / grabber frame counter
  std::int64_t timestamp_ns = 0;   // acquisition time, nanoseconds (source clock)
  std::int64_t encoder = 0;        // encoder count when has_encoder
  bool has_encoder = false;
  bool missing = false;            // the frame never arrived (gap): its profile is all invalid
};

// Part of a recording replayed alone (`replay --frames START:END`, a shard of
// a cluster job; docs/scale-out.md): frames [start, end) of the `of` frames
// the recording holds, numbered as an unsharded replay numbers them. Outputs
// record it (core/metadata.h "frame_range"), `stripeline join` reads it.
struct FrameRange {
  std::uint64_t start = 0, end = 0, of = 0;
  std::string settings;  // digest of the settings the part was made with (app/settings.h settings_digest); "" = not recorded
  std::uint64_t frames() const { return end - start; }
  bool whole() const { return start == 0 && end == of; }
  bool operator==(const FrameRange&) const = default;
};

// Geometry of a batch: `frames` frames of width x frame_height, concatenated
// vertically in one buffer exactly as a frame grabber delivers them.
struct BatchLayout {
  int width = 0;
  int frame_height = 0;
  int frames = 0;  // capacity, in frames
  PixelFormat format = PixelFormat::Mono8;

  std::size_t frame_pixels() const { return static_cast<std::size_t>(width) * frame_height; }
  std::size_t pixels() const { return frame_pixels() * static_cast<std::size_t>(frames); }
  std::size_t bytes() const { return pixels() * bytes_per_pixel(format); }
  int total_rows() const { return frame_height * frames; }
  bool operator==(const BatchLayout&) const = default;
};

// Largest dimensions we accept anywhere. Beyond these a file header is
// considered absurd rather than an image to allocate for.
inline constexpr int kMaxWidth = 1 << 16;
inline constexpr int kMaxFrameHeight = 4096;
inline constexpr int kMaxBatchFrames = 1 << 16;

// A strided 2D view over pixels of type T (no ownership). stride in elements.
template <class T>
struct ImageView {
  T* data = nullptr;
  int width = 0;
  int height = 0;
  std::ptrdiff_t stride = 0;

  T* row(int y) const { return data + static_cast<std::ptrdiff_t>(y) * stride; }
  T& at(int x, int y) const { return row(y)[x]; }
};

}  // namespace stripeline
