#pragma once
// A simulated laser line scanner: renders stripe frames of a known surface and
// knows where the stripe centre truly is. It is the embedded default of
// `stripeline run` and the golden data of the tests.
//
// Geometry: frame f images the surface cross-section at scan position f; in
// column x the stripe centre is at row truth(f, x) (0 = centre of the frame's
// top row), or NaN where the stripe is occluded. The rendered intensity is a
// Gaussian beam profile integrated over each pixel, on a background, with
// per-column beam power variation, sensor noise and speckle, plus a weaker
// secondary reflection in some columns.
//
// Rendering is deterministic: pixel values depend only on (seed, frame,
// column, row), whatever the threading.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "acquisition/source.h"

namespace stripeline {

struct SyntheticConfig {
  int width = 2048;
  int frame_height = 52;
  std::uint64_t frames = 600;          // 0 = endless
  PixelFormat format = PixelFormat::Mono8;
  std::uint64_t seed = 1;
  double beam_sigma = 1.4;             // stripe half-width (Gaussian sigma), pixels
  double peak = 180.0;                 // mean stripe peak above background (8-bit scale)
  double peak_variation = 0.35;        // relative power variation along the line (0..0.9)
  double background = 20.0;            // mean background level
  double noise = 3.0;                  // sensor noise sigma
  double speckle = 0.15;               // multiplicative speckle on the stripe (0..1)
  double occlusion = 0.03;             // fraction of columns with no stripe (shadow)
  double reflection = 0.05;            // fraction of columns with a secondary reflection
  double reflection_strength = 0.35;   // its power relative to the stripe
  double frame_rate = 10000.0;         // frames per second, for timestamps
  std::int64_t encoder_step = 4;       // encoder counts per frame (0 = no encoder)
  // 0: render every frame; N: render frames 0..N-1 once (when first needed),
  // frame n shows frame n mod N (its encoder count and timestamp are n's).
  // A camera's frames cost the host nothing (the grabber's DMA); rendering
  // them does, so a rate test of everything after the source caches them.
  int cached_frames = 0;

  // Hard cases, each off by default (the defaults above render exactly as
  // before). The scanner renders the laser's colour channel: a "coloured"
  // surface is one whose albedo in that channel varies.
  int bits = 0;                        // significant bits: 0 = the format's (8 or 16); 9..15 = Mono16 words holding 0..2^bits - 1 (12: 0..4095)
  double ambient = 0.0;                // uneven diffuse ambient light: peak level (8-bit scale) over background, varying over rows, columns, frames
  double texture = 0.0;                // surface albedo variation (0..0.9): modulates the ambient light and the stripe
  double glow = 0.0;                   // glow/blooming around the stripe, relative to its power (0..2); stronger on one side
  double glow_width = 4.0;             // its exponential decay length, pixels
  double second_stripe = 0.0;          // fraction of columns (stretches) with a second, weaker stripe close by
  double second_stripe_distance = 14.0;  // its distance from the stripe, pixels
  double second_stripe_strength = 0.6;   // its power relative to the stripe
  double dim_segments = 0.0;           // fraction of columns (stretches) where the stripes are dimmed
  double dim_factor = 0.25;            // their power there
  double beam_sigma_variation = 0.0;   // relative beam width variation along the line (0..0.8)

  // Throws ConfigError naming the key and the expected range.
  void validate() const;
};

// The scene `c` (validated) as functions, for whoever renders it without a
// SyntheticScanner (the GenTL producer): frame `frame` into dst (width *
// frame_height pixels of its format), and the truths the class's members
// below describe. Pure: functions of (c, frame, column).
void render_synthetic_frame(const SyntheticConfig& c, std::uint64_t frame, std::byte* dst);
double synthetic_truth(const SyntheticConfig& c, std::uint64_t frame, int column);
double synthetic_reflection_row(const SyntheticConfig& c, std::uint64_t frame, int column);
double synthetic_second_row(const SyntheticConfig& c, std::uint64_t frame, int column);

class SyntheticScanner final : public FrameSource {
 public:
  explicit SyntheticScanner(SyntheticConfig config);
  BatchLayout frame_layout() const override;
  bool fill(Batch& batch) override;
  std::optional<std::uint64_t> total_frames() const override;
  std::string describe() const override;
  SignificantBits significant_bits() const override;  // its depth (bits, else the format's), origin Synthetic

  // True stripe centre of frame f, column x, in rows (NaN = occluded).
  // Pure: a function of (config, frame, column) only. It is the beam's true
  // centre: for beam_sigma >= ~0.6 the pixel-integrated centre of gravity of a
  // noise-free frame equals it to < 1e-3 px; narrower beams show pixel locking
  // (the centre of gravity is pulled towards pixel centres: up to ~0.002 px at
  // sigma 0.5, ~0.014 px at 0.4, ~0.054 px at 0.3).
  double truth(std::uint64_t frame, int column) const;
  // Centre row of the secondary reflection in frame f, column x (NaN = none).
  // Tests and evaluations use it to tell reflection columns apart.
  double reflection_row(std::uint64_t frame, int column) const;
  // Centre row of the second stripe in frame f, column x (NaN = none).
  double second_row(std::uint64_t frame, int column) const;
  // Largest pixel value of the output (255, 4095 or 65535).
  std::uint32_t max_value() const;
  // Render frame f into dst (width * frame_height pixels of the format);
  // with cached_frames, frame f mod cached_frames from the cache.
  void render(std::uint64_t frame, std::byte* dst) const;
  const SyntheticConfig& config() const { return config_; }
  void rewind() { next_ = 0; }

 private:
  struct FrameCache;
  // The frame whose scene frame `frame` shows (frame mod cached_frames).
  std::uint64_t scene_frame(std::uint64_t frame) const;

  SyntheticConfig config_;
  std::uint64_t next_ = 0;
  std::shared_ptr<FrameCache> cache_;  // with cached_frames; copies share it (frames are pure functions)
};

}  // namespace stripeline
