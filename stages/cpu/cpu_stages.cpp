// CPU backend: stages and the fused chain, parallel over (frame, column tile)
// with oneTBB; its factory() table (stages/factory.h) hands them out. Per-thread scratch is sized at set-up; run() allocates nothing
// once every worker thread has touched its scratch.
#include "stages/factory.h"

#include <tbb/blocked_range.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <chrono>
#include <cstring>
#include <vector>

#include "core/errors.h"
#include "stages/cpu/cpu_kernels.h"
#include "stages/cpu/line_model_cpu.h"

namespace stripeline::cpu {

namespace {

constexpr int kTileWidth = 256;

// One frame's profiles of `slots` slots, a thread's own (a copy is a new,
// empty one of the same size): the line model's candidates when a thread
// takes whole frames, so they stay in its cache from extraction to the step.
struct FrameProfiles {
  ProfileBatch batch;
  FrameProfiles() = default;
  FrameProfiles(int width, int slots) : batch(width, 1, slots, &allocate_host) {}
  FrameProfiles(const FrameProfiles& o) : FrameProfiles() {
    if (o.batch.width > 0) batch = ProfileBatch(o.batch.width, 1, o.batch.slots, &allocate_host);
  }
  FrameProfiles& operator=(FrameProfiles&&) = default;
  FrameProfiles& operator=(const FrameProfiles&) = delete;
};

struct Scratch {
  std::vector<std::uint32_t> mid;
  std::vector<std::uint8_t> isolated;  // the neighbour check's marks of one frame
  std::vector<std::uint8_t> back;      // the line model's back-pointers of one frame
  LineModelScratch line;               // the line model's walk of one frame (line_model_cpu.h)
  FrameProfiles frame_candidates;      // the line model's candidates of one frame (frame tasks)
  std::vector<std::uint16_t> tile;  // big enough for either pixel type
  // The adaptive method's column summaries of one tile (simd::summarise_tile).
  std::vector<std::uint32_t> lowest, tv, top, candidates;
  std::vector<std::int32_t> brightest;
  std::vector<kernels::adaptive::Stripe> stripes;
  std::vector<std::int32_t> centres;

  // The column pass of the adaptive method over a tile of pixels (row
  // stride ps; raw: their unblurred data, stride rs), SIMD across columns:
  // summaries, candidates and, with selection strongest or all (the line
  // model's candidates), the brightest row evaluated (what
  // extract_tile_adaptive reads: usually the stripe).
  template <class T>
  simd::TileSummary summarise(const T* pixels, std::ptrdiff_t ps, const T* raw, std::ptrdiff_t rs, int tw, int height, const kernels::ColumnParams& p) {
    simd::TileSummary s{lowest.data(), tv.data(), brightest.data(), top.data(), candidates.data()};
    simd::summarise_tile(pixels, ps, tw, height, p, s);
    if (p.selection == SpotSelection::Strongest || p.selection == SpotSelection::All) {
      s.stripes = stripes.data();
      s.centres = centres.data();
      simd::evaluate_brightest(pixels, ps, raw, rs, tw, height, p, s);
    }
    return s;
  }
};

// Whether the adaptive method's column pass runs SIMD (simd::summarise_tile)
// for these parameters: the column data is the tile itself (no threshold).
bool simd_adaptive(const kernels::ColumnParams& p, std::uint32_t threshold, int height) {
  return p.method == ColumnMethod::Adaptive && threshold == 0 && height >= 2 && height <= simd::kMaxSummaryHeight;
}

class TileGrid {
 public:
  explicit TileGrid(const BatchLayout& l) : width_(l.width), tiles_((l.width + kTileWidth - 1) / kTileWidth) {}
  std::size_t count(int frames) const { return static_cast<std::size_t>(frames) * tiles_; }
  int frame(std::size_t i) const { return static_cast<int>(i / tiles_); }
  int x0(std::size_t i) const { return static_cast<int>(i % tiles_) * kTileWidth; }
  int x1(std::size_t i) const { return x0(i) + kTileWidth < width_ ? x0(i) + kTileWidth : width_; }

 private:
  int width_;
  std::size_t tiles_;
};

// Asks for the pixels of tile i of the grid ahead of their use (a frame's
// rows lie a frame's width apart: more streams than the hardware prefetcher
// follows, so a tile's first reads would wait for memory).
void prefetch_tile(const Batch& in, const TileGrid& grid, std::size_t i, std::size_t bytes_per_pixel) {
  const auto* frame = reinterpret_cast<const char*>(in.frame_data(grid.frame(i)));
  const std::size_t row = static_cast<std::size_t>(in.layout.width) * bytes_per_pixel;
  const std::size_t from = static_cast<std::size_t>(grid.x0(i)) * bytes_per_pixel, to = static_cast<std::size_t>(grid.x1(i)) * bytes_per_pixel;
  for (int y = 0; y < in.layout.frame_height; ++y)
    for (std::size_t b = from; b < to; b += 64) __builtin_prefetch(frame + y * row + b, 0, 3);
}

Scratch scratch_exemplar(const BatchLayout& l, int line_candidates, int candidate_slots = 0) {
  Scratch exemplar;
  exemplar.mid.resize(static_cast<std::size_t>(l.frame_height) * kTileWidth);
  exemplar.tile.resize(static_cast<std::size_t>(l.frame_height) * kTileWidth);
  exemplar.isolated.resize(static_cast<std::size_t>(l.width));
  for (auto* v : {&exemplar.lowest, &exemplar.tv, &exemplar.top}) v->resize(kTileWidth);
  exemplar.brightest.resize(kTileWidth);
  exemplar.stripes.resize(kTileWidth);
  exemplar.centres.resize(kTileWidth);
  exemplar.candidates.resize(static_cast<std::size_t>(simd::candidate_words(l.frame_height)) * kTileWidth);
  if (line_candidates > 0) {
    exemplar.back.resize(kernels::line_model_scratch_bytes(line_candidates, l.width, 1));
    exemplar.line.reserve(line_candidates, l.width);
  }
  if (candidate_slots > 0) exemplar.frame_candidates = FrameProfiles(l.width, candidate_slots);
  return exemplar;
}

template <class V>
std::size_t bytes_of(const V& v) {
  return v.size() * sizeof(typename V::value_type);
}

tbb::enumerable_thread_specific<Scratch> make_scratch(const BatchLayout& l, int line_candidates = 0, int candidate_slots = 0) {
  return tbb::enumerable_thread_specific<Scratch>(scratch_exemplar(l, line_candidates, candidate_slots));
}

class CpuBlur final : public PixelStage {
 public:
  CpuBlur(const BatchLayout& l, const kernels::GaussianTaps& taps) : PixelStage("blur", l), taps_(taps), grid_(l), scratch_(make_scratch(l)) {}

 private:
  void do_run(const Batch& in, Batch& out) override {
    with_pixel_type(layout().format, [&](auto zero) {
      using T = decltype(zero);
      const int w = layout().width, h = layout().frame_height;
      tbb::parallel_for(tbb::blocked_range<std::size_t>(0, grid_.count(in.frames)), [&](const auto& r) {
        Scratch& s = scratch_.local();
        T* tile = reinterpret_cast<T*>(s.tile.data());
        for (std::size_t i = r.begin(); i != r.end(); ++i) {
          const int f = grid_.frame(i), x0 = grid_.x0(i), x1 = grid_.x1(i);
          const T* src = reinterpret_cast<const T*>(in.frame_data(f));
          T* dst = reinterpret_cast<T*>(out.frame_data(f));
          simd::blur_tile(src, w, h, w, x0, x1, taps_, s.mid.data(), tile);
          for (int y = 0; y < h; ++y) std::memcpy(dst + y * w + x0, tile + y * (x1 - x0), sizeof(T) * (x1 - x0));
        }
      });
    });
  }

  kernels::GaussianTaps taps_;
  TileGrid grid_;
  tbb::enumerable_thread_specific<Scratch> scratch_;
};

class CpuThreshold final : public PixelStage {
 public:
  CpuThreshold(const BatchLayout& l, std::uint32_t t) : PixelStage("threshold", l), threshold_(t) {}

 private:
  void do_run(const Batch& in, Batch& out) override {
    with_pixel_type(layout().format, [&](auto zero) {
      using T = decltype(zero);
      const T* src = reinterpret_cast<const T*>(in.pixels.data());
      T* dst = reinterpret_cast<T*>(out.pixels.data());
      const std::size_t n = static_cast<std::size_t>(in.frames) * layout().frame_pixels();
      tbb::parallel_for(tbb::blocked_range<std::size_t>(0, n, 1 << 16), [&](const auto& r) {
        for (std::size_t i = r.begin(); i != r.end(); ++i) dst[i] = static_cast<T>(kernels::apply_threshold(src[i], threshold_));
      });
    });
  }

  std::uint32_t threshold_;
};

class CpuExtract final : public ExtractStage {
 public:
  CpuExtract(const BatchLayout& l, const kernels::ColumnParams& p) : ExtractStage(l, p), grid_(l), scratch_(make_scratch(l)) {}

 private:
  void do_run(const Batch& in, ProfileBatch& out) override {
    with_pixel_type(layout().format, [&](auto zero) {
      using T = decltype(zero);
      const int w = layout().width, h = layout().frame_height;
      const bool simd_pass = simd_adaptive(params(), 0, h);
      tbb::parallel_for(tbb::blocked_range<std::size_t>(0, grid_.count(in.frames)), [&](const auto& r) {
        Scratch& s = scratch_.local();
        for (std::size_t i = r.begin(); i != r.end(); ++i) {
          const int f = grid_.frame(i), x0 = grid_.x0(i), x1 = grid_.x1(i);
          const T* frame = reinterpret_cast<const T*>(in.frame_data(f));
          auto pixel = [frame, w](int x, int y) -> std::uint32_t { return frame[y * w + x]; };
          if (!simd_pass) {
            extract_tile(pixel, pixel, h, x0, x1, f, params(), out);
            continue;
          }
          const simd::TileSummary sum = s.summarise(frame + x0, w, frame + x0, w, x1 - x0, h, params());
          extract_tile_adaptive(pixel, pixel, h, x0, x1, f, params(), sum, out);
        }
      });
    });
  }

  TileGrid grid_;
  tbb::enumerable_thread_specific<Scratch> scratch_;
};

// The whole chain per (frame, tile): blur into a cache-resident tile,
// threshold, extract. Same integer arithmetic as running the stages one by one.
class CpuProcessor final : public BatchProcessor {
 public:
  CpuProcessor(const BatchLayout& l, const ChainConfig& c)
      : BatchProcessor(l, c),
        taps_(chain_blur_taps(c)),
        threshold_stage_(threshold_stage_level(c, params()) != 0),
        grid_(l),
        scratch_(make_scratch(l, line_params().candidates, line_params().candidates > 0 ? extraction_params().slots : 0)) {
    // The line model's candidates: extraction writes them here, the step
    // writes the chosen one into the output.
    if (models_line()) candidates_ = ProfileBatch(l.width, l.frames, extraction_params().slots, &allocate_host);
  }

  Backend backend() const override { return Backend::Cpu; }

  double last_compute_ms() const override { return last_ms_; }


 private:
  void enqueue(const Batch& in, ProfileBatch& out) override {
    const auto start = std::chrono::steady_clock::now();
    with_pixel_type(layout().format, [&](auto zero) {
      using T = decltype(zero);
      const int w = layout().width, h = layout().frame_height;
      const std::uint32_t t = threshold_stage_ ? params().threshold : 0u;
      const bool simd_pass = simd_adaptive(extraction_params(), t, h);
      // Tile i of the grid: blurred into the thread's tile, extracted into
      // frame `to_frame` of `to`.
      auto run_tile = [&](Scratch& s, std::size_t i, ProfileBatch& to, int to_frame) {
        T* tile = reinterpret_cast<T*>(s.tile.data());
        const int f = grid_.frame(i), x0 = grid_.x0(i), x1 = grid_.x1(i), tw = x1 - x0;
        simd::blur_tile(reinterpret_cast<const T*>(in.frame_data(f)), w, h, w, x0, x1, taps_, s.mid.data(), tile);
        auto pixel = [tile, tw, x0, t](int x, int y) -> std::uint32_t { return kernels::apply_threshold(tile[y * tw + (x - x0)], t); };
        const T* frame = reinterpret_cast<const T*>(in.frame_data(f));
        auto raw = [frame, w](int x, int y) -> std::uint32_t { return frame[y * w + x]; };
        if (!simd_pass) {
          extract_tile(pixel, raw, h, x0, x1, to_frame, extraction_params(), to);
          return;
        }
        // No threshold on this path (simd_adaptive): the blurred tile itself.
        auto blurred = [tile, tw, x0](int x, int y) -> std::uint32_t { return tile[y * tw + (x - x0)]; };
        const simd::TileSummary sum = s.summarise(tile, tw, frame + x0, w, tw, h, extraction_params());
        // The line model's candidates: only the filled slots written (it reads no others).
        extract_tile_adaptive(blurred, raw, h, x0, x1, to_frame, extraction_params(), sum, to, !models_line());
      };
      // The line model of frame f of `out` from candidate frame `cf` of `from`.
      auto line_model = [&](Scratch& s, const ProfileBatch& from, int cf, int f) {
        const int k = from.slots;
        const std::size_t row = static_cast<std::size_t>(f) * out.width, crow = static_cast<std::size_t>(cf) * out.width, rows = crow * k;
        const kernels::LineModelArrays c{from.position + rows, from.intensity + rows, from.stripe_width + rows, from.quality + rows, from.count + crow};
        const kernels::LineModelArrays o{out.position + row, out.intensity + row, out.stripe_width + row, out.quality + row, out.count + row};
        cpu::line_model_frame(line_view(c, o, s.back.data(), 1, 1), line_params(), 0, s.line);
      };
      if (models_line() && in.frames >= 2 * tbb::this_task_arena::max_concurrency()) {
        // Frames enough to keep every thread busy: a task takes whole frames,
        // its tiles then the line model, the candidates in the thread's own
        // one-frame profiles (in its cache from extraction to the step).
        tbb::parallel_for(tbb::blocked_range<int>(0, in.frames), [&](const tbb::blocked_range<int>& r) {
          Scratch& s = scratch_.local();
          for (int f = r.begin(); f != r.end(); ++f) {
            for (std::size_t i = grid_.count(f); i != grid_.count(f + 1); ++i) {
              if (i + 1 < grid_.count(r.end())) prefetch_tile(in, grid_, i + 1, sizeof(T));
              run_tile(s, i, s.frame_candidates.batch, 0);
            }
            line_model(s, s.frame_candidates.batch, 0, f);
          }
        });
      } else {
        // Few frames (the live path's batch of one): the tiles spread over
        // the threads, then the line chosen across the columns, a frame per task.
        tbb::parallel_for(tbb::blocked_range<std::size_t>(0, grid_.count(in.frames)), [&](const auto& r) {
          Scratch& s = scratch_.local();
          for (std::size_t i = r.begin(); i != r.end(); ++i) {
            if (i + 1 < r.end()) prefetch_tile(in, grid_, i + 1, sizeof(T));
            const int f = grid_.frame(i);
            run_tile(s, i, models_line() ? candidates_ : out, f);
          }
        });
        if (models_line())
          tbb::parallel_for(tbb::blocked_range<int>(0, in.frames), [&](const tbb::blocked_range<int>& r) {
            Scratch& s = scratch_.local();
            for (int f = r.begin(); f != r.end(); ++f) line_model(s, candidates_, f, f);
          });
      }
    });
    if (checks_neighbours()) {  // isolated detections removed, a frame per task (its marks in the thread's scratch)
      tbb::parallel_for(tbb::blocked_range<int>(0, in.frames), [&](const tbb::blocked_range<int>& r) {
        Scratch& s = scratch_.local();
        for (int f = r.begin(); f != r.end(); ++f) {
          const std::size_t row = static_cast<std::size_t>(f) * out.width;
          // The view of this one frame: its marks start at the scratch.
          const kernels::NeighbourCheckView v = neighbour_view(out.position + row, out.intensity + row, out.stripe_width + row, out.quality + row,
                                                               out.count + row, s.isolated.data(), 1);
          kernels::neighbour_check_cpu(v, neighbour_params(), 0, 1);
        }
      });
    }
    if (maps_points()) {  // the calibrated points of every detection, frames spread over the cores
      const kernels::CalibratedPointsView v = points_view(out.position, out.count, out.xyz, in.frames);
      tbb::parallel_for(tbb::blocked_range<int>(0, in.frames), [&](const tbb::blocked_range<int>& r) {
        kernels::calibrated_points_cpu(points_map(), v, r.begin(), r.end());
      });
    }
    last_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  }

  double last_ms_ = 0.0;
  kernels::GaussianTaps taps_;
  bool threshold_stage_;
  TileGrid grid_;
  tbb::enumerable_thread_specific<Scratch> scratch_;
  ProfileBatch candidates_;  // the line model's candidates (empty when it is off)
};

}  // namespace

std::size_t thread_scratch_bytes(const BatchLayout& l, int line_candidates) {
  const Scratch s = scratch_exemplar(l, line_candidates, line_candidates);  // the extraction keeps line_candidates slots
  return s.frame_candidates.batch.storage().size() + bytes_of(s.mid) + bytes_of(s.isolated) + bytes_of(s.back) + bytes_of(s.tile) + bytes_of(s.lowest) + bytes_of(s.tv) + bytes_of(s.top) +
         bytes_of(s.candidates) + bytes_of(s.brightest) + bytes_of(s.stripes) + bytes_of(s.centres) + s.line.bytes();
}

const BackendFactory& factory() {
  static const BackendFactory f{
      [](const BatchLayout& l, const kernels::GaussianTaps& taps) -> std::unique_ptr<PixelStage> { return std::make_unique<CpuBlur>(l, taps); },
      [](const BatchLayout& l, std::uint32_t t) -> std::unique_ptr<PixelStage> { return std::make_unique<CpuThreshold>(l, t); },
      [](const BatchLayout& l, const kernels::ColumnParams& p) -> std::unique_ptr<ExtractStage> { return std::make_unique<CpuExtract>(l, p); },
      [](const BatchLayout& l, const ChainConfig& c) -> std::unique_ptr<BatchProcessor> { return std::make_unique<CpuProcessor>(l, c); },
      &make_heightmap_filter,
  };
  return f;
}

}  // namespace stripeline::cpu
