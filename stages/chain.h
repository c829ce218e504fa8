#pragma once
// The processing chain applied to every batch: Gaussian blur -> threshold ->
// per-column extraction. ChainConfig says what to do; a BatchProcessor does
// it on one backend. One processor is one "lane": it owns its scratch (and,
// on CUDA, its stream and device buffers), is set up once, and then runs
// batch after batch without allocating. The pipeline runs several lanes side
// by side.
#include <memory>
#include <string>

#include "core/applied_calibration.h"
#include "core/batch.h"
#include "core/profile.h"
#include "kernels/calibrated_points.h"
#include "kernels/column_extract.h"
#include "kernels/gaussian.h"
#include "kernels/line_model.h"
#include "kernels/neighbour_check.h"
#include "stages/backend.h"

namespace stripeline {

using kernels::ColumnMethod;
using kernels::SpotSelection;
using kernels::SubpixelEstimator;

// The `adaptive` method's settings, in the user's units (validate_chain turns
// them into ColumnParams' integer fields). See docs/extraction.md.
struct AdaptiveConfig {
  SubpixelEstimator estimator = SubpixelEstimator::Centroid;
  double min_contrast = 20.0;  // stripe contrast floor, 8-bit units (x 2^(pixel_bits - 8)); with the wide-run gate 20 keeps smooth surface texture out (docs/extraction.md)
  double level = 0.5;          // the stripe's run: above background + level x contrast (0 < level < 1)
  double centroid_level = 0.0;  // centroid: weights (u - centroid_level x contrast)^2 above the background (0 <= . < 1)
  double noise_factor = 4.0;   // contrast >= noise_factor x mean |row-to-row step| outside the stripe (0: off)
  int max_width = 16;          // run width limit at `level`, pixels; also the background search radius
  double steger_sigma = 1.0;   // steger: derivative-of-Gaussian sigma, pixels (0.5..2.3)
  int pixel_bits = 0;          // significant bits of the pixels, 8..16 (12: a Mono12 camera's 0..4095 in 16-bit words); 0 = a run decides (acquisition/pixel_bits.h), validate_chain alone takes the format's 8 or 16
};

// After extraction: detections that no neighbouring column continues are
// removed (kernels/neighbour_check.h, docs/extraction.md). Off by default.
struct NeighbourCheckConfig {
  int columns = 0;     // columns looked at on each side, 1..16; 0 = off
  double step = 2.0;   // a neighbour within step x distance (columns) rows supports a detection, rows per column (0 < step <= 64)
};

// After extraction, before the neighbour check: the laser line chosen per
// frame as a path across the columns (kernels/line_model.h,
// docs/extraction.md "Line model"). On by default; it runs with method
// adaptive and selection strongest (the default chain): extraction then
// keeps `candidates` stripes per column and the step writes the chosen one
// as the column's single detection (one slot). Other methods and selections
// report per column as they always have (line_model_runs() is false).
// Costs in 8-bit levels of contrast (x 2^(pixel_bits - 8) for deeper pixels).
struct LineModelConfig {
  bool enabled = true;
  int candidates = 8;          // stripes kept per column for the choice, 2..8
  double step = 2.0;           // rows per column the line may move freely (0..64)
  double jump_cost = 32.0;     // levels per row moved beyond the step (0..255)
  double width_cost = 8.0;     // levels per pixel of run width change (0..255)
  double intensity_cost = 0.0; // levels per level of peak intensity change (0..16)
  double segment_cost = 256.0; // levels to start a line segment; also a break's cost (0..65535)
  int min_length = 8;          // columns: shorter segments are dropped (1..4096)
  int line_width = 5;          // pixels: a wider candidate counts contrast x line_width / width (1..256)
};

struct ChainConfig {
  int blur_size = 5;         // odd 3..15, or 0 for no blur
  double blur_sigma = 0.0;   // 0: from the size (OpenCV's rule)
  // true (default): the separable 2-D blur; false: along the columns only
  // (cheaper, noisier: docs/extraction.md, "Blur"). Either way a detection
  // needs the stripe in its column's own unblurred data, so a lit column's
  // stripe never gives a point in an occluded neighbour.
  bool blur_across = true;
  bool threshold_stage = true;  // zero the pixels below the threshold before extraction
  // method, threshold, gates, spot selection. The default method is adaptive
  // (local background, contrast gates, centroid): chosen from the measured
  // tables in docs/extraction.md.
  kernels::ColumnParams column{.method = ColumnMethod::Adaptive};
  int max_peaks = 4;         // local-max with selection 'all': slots per column
  int max_points = 0;        // 'all' method: slots per column (0 = frame height)
  AdaptiveConfig adaptive;   // 'adaptive' method
  NeighbourCheckConfig neighbour_check;  // isolated detections removed after extraction (single-peak profiles)
  LineModelConfig line_model;            // the line chosen across columns, after extraction (off by default)
  // The last step, with a sheet-of-light calibration ([calibration] file; the
  // pipeline sets it): every detection mapped to (X, dY, Z) mm into the
  // profiles' points array (core/calibrated_point.h), on the processor's
  // backend, so no output maps points on the host. Null: no points array.
  std::shared_ptr<const AppliedCalibration> calibration;
  // CUDA backend, batches of <= 16 frames (the low-latency mode): each pool
  // slot's upload, kernels and download replayed as one CUDA graph
  // (stages/cuda/cuda_stages.cpp). No effect on results; false enqueues them
  // call by call (bench compares both).
  bool cuda_graphs = true;
  // CUDA, frames alone with the line model writing the host's profiles (the
  // live path): the device's persistent engine (stages/cuda/live_engine.h),
  // resident kernels fed through pinned memory, instead of a graph a frame.
  // No effect on results; false: the graphs (bench compares both).
  bool persistent_engine = true;
};

const char* to_string(ColumnMethod m);
const char* to_string(SpotSelection s);
const char* to_string(SubpixelEstimator e);
ColumnMethod parse_method(const std::string& text);       // ConfigError if unknown
SpotSelection parse_selection(const std::string& text);   // ConfigError if unknown
SubpixelEstimator parse_estimator(const std::string& text);  // ConfigError if unknown

// Checks every value against the frame geometry; throws ConfigError naming the
// key. Returns the column parameters with `slots` filled in.
kernels::ColumnParams validate_chain(const ChainConfig& config, const BatchLayout& layout);
// The neighbour check's kernel parameters (columns 0 = off); throws
// ConfigError naming the key for a bad value, or when it is asked for with
// more than one slot per column.
kernels::NeighbourCheckParams validate_neighbour_check(const ChainConfig& config, const kernels::ColumnParams& params);
// The line model's kernel parameters (candidates 0 = off) for the column
// parameters validate_chain returned; ConfigError naming the key for a bad
// value, or when it is asked for with another method or selection.
kernels::LineModelParams validate_line_model(const ChainConfig& config, const kernels::ColumnParams& params);
// What extraction runs with: `params` itself, or with the line model on,
// selection all into LineModelConfig::candidates slots (its candidates).
kernels::ColumnParams extraction_params(const kernels::ColumnParams& params, const kernels::LineModelParams& line);
// The chain's blur: make_gaussian_taps(blur_size, blur_sigma) with
// `across` = blur_across. ConfigError for a bad size or sigma.
kernels::GaussianTaps chain_blur_taps(const ChainConfig& config);
// Whether the line model runs: enabled, with method adaptive and selection
// strongest (what it chooses among).
bool line_model_runs(const ChainConfig& config);
// Output slots per column for this config and frame height (1 with the line model).
int output_slots(const ChainConfig& config, int frame_height);
// Pixels below this are zeroed before extraction (the threshold stage); 0 =
// none. The adaptive method needs the background, so it never has one.
std::uint32_t threshold_stage_level(const ChainConfig& config, const kernels::ColumnParams& params);

// One processing lane. The backend-independent work happens here, once, in
// the non-virtual submit()/wait(): layout checks, the frame header (count,
// batch number, frame index, metadata) copied to the profiles, and frames
// marked missing made empty profiles. Backends implement enqueue() (and
// complete() when they run asynchronously).
class BatchProcessor {
 public:
  virtual ~BatchProcessor() = default;
  virtual Backend backend() const = 0;
  const BatchLayout& layout() const { return layout_; }
  // Output slots per column.
  int slots() const { return params_.slots; }

  // Start turning the batch's filled frames into profiles. The CPU backend
  // is done when this returns; CUDA has enqueued the copies and kernels on
  // its stream. Neither in nor out may be touched, nor another batch
  // submitted, until wait() returns. Throws RuntimeFailure when a batch does
  // not match the layout the processor was set up for.
  void submit(const Batch& in, ProfileBatch& out);
  // Blocks until the submitted batch is complete (no-op when none is pending).
  void wait();
  // submit + wait. Not thread-safe: one thread per processor at a time.
  void process(const Batch& in, ProfileBatch& out) {
    submit(in, out);
    wait();
  }
  // Milliseconds of compute of the last batch: kernel time on CUDA (copies
  // excluded), wall time of the whole chain on the CPU.
  virtual double last_compute_ms() const { return 0.0; }

 protected:
  // config validated against layout here (validate_chain, validate_neighbour_check, validate_line_model).
  BatchProcessor(const BatchLayout& layout, const ChainConfig& config)
      : layout_(layout),
        params_(validate_chain(config, layout)),
        neighbour_(validate_neighbour_check(config, params_)),
        line_(validate_line_model(config, params_)),
        extract_(stripeline::extraction_params(params_, line_)),
        calibration_(config.calibration) {
    if (calibration_) points_map_ = calibration_->model.map<double>();
  }
  // The chain's column parameters (slots = the output's).
  const kernels::ColumnParams& params() const { return params_; }
  // What extraction runs with: params(), or the line model's candidates.
  const kernels::ColumnParams& extraction_params() const { return extract_; }
  // The line model, after extraction and before the neighbour check: extraction
  // writes extraction_params().slots candidates per column into the backend's
  // own candidate profiles, the step writes the output's single slot.
  bool models_line() const { return line_.candidates > 0; }
  const kernels::LineModelParams& line_params() const { return line_; }
  // Its view for `frames` frames: the candidate arrays (K slots), the output
  // arrays (one slot), the back-pointer scratch and its frame stride (host
  // or device pointers).
  kernels::LineModelView line_view(const kernels::LineModelArrays& candidates, const kernels::LineModelArrays& out, std::uint8_t* back,
                                   std::size_t back_stride, int frames) const {
    kernels::LineModelView v;
    v.in = candidates, v.out = out, v.back = back, v.back_stride = back_stride, v.frames = frames, v.width = layout_.width;
    return v;
  }
  // The neighbour check, after extraction and before the calibrated points.
  bool checks_neighbours() const { return neighbour_.columns > 0; }
  const kernels::NeighbourCheckParams& neighbour_params() const { return neighbour_; }
  // Its view over single-slot profile arrays (host or device pointers) of
  // `frames` frames, with `isolated` as its mark scratch (frames x width bytes).
  kernels::NeighbourCheckView neighbour_view(std::int32_t* position, std::uint16_t* intensity, std::uint16_t* stripe_width,
                                             std::uint16_t* quality, std::uint8_t* count, std::uint8_t* isolated, int frames) const {
    kernels::NeighbourCheckView v;
    v.position = position, v.intensity = intensity, v.stripe_width = stripe_width, v.quality = quality, v.count = count;
    v.isolated = isolated, v.frames = frames, v.width = layout_.width;
    return v;
  }
  // The calibrated-points step: present when the chain has a calibration.
  bool maps_points() const { return calibration_ != nullptr; }
  const SheetOfLightMap<double>& points_map() const { return points_map_; }
  // The step's view over profile arrays (host or device pointers) of `frames` frames.
  kernels::CalibratedPointsView points_view(const std::int32_t* position, const std::uint8_t* count, float* points, int frames) const {
    kernels::CalibratedPointsView v;
    v.position = position, v.count = count, v.points = points;
    v.frames = frames, v.slots = params_.slots, v.width = layout_.width;
    v.roi_x = calibration_ ? calibration_->roi_x : 0, v.roi_y = calibration_ ? calibration_->roi_y : 0;
    return v;
  }
  // The backend's part: the profile arrays of in.frames frames into out.
  virtual void enqueue(const Batch& in, ProfileBatch& out) = 0;
  // Blocks until what enqueue() started is done (asynchronous backends).
  virtual void complete() {}

 private:
  BatchLayout layout_;
  kernels::ColumnParams params_;
  kernels::NeighbourCheckParams neighbour_;
  kernels::LineModelParams line_;
  kernels::ColumnParams extract_;
  std::shared_ptr<const AppliedCalibration> calibration_;
  SheetOfLightMap<double> points_map_{};
  ProfileBatch* pending_ = nullptr;
};

// Validates config against layout (ConfigError naming the key), then sets up
// a processor for batches of `layout` (layout.frames = capacity). Backend
// must be resolved (Cpu or Cuda).
std::unique_ptr<BatchProcessor> make_processor(Backend backend, const BatchLayout& layout, const ChainConfig& config);

// Memory one lane (processor) of `backend` takes for batches of `layout`
// (layout.frames frames) with `config`: what its constructor allocates,
// computed without allocating (pipeline/memory_budget.h plans with it).
// host: the CPU lane's line-model candidates and its worker threads' scratch;
// device: the CUDA lane's buffers (pixels, profiles, line-model candidates
// and back-pointers, neighbour marks, and the per-stage path's blurred
// pixels, counted whether or not the fused kernel makes it unneeded: an
// upper bound). ConfigError as validate_chain.
struct LaneMemory {
  std::size_t host = 0, device = 0;
};
LaneMemory lane_memory(Backend backend, const BatchLayout& layout, const ChainConfig& config);

}  // namespace stripeline
