// CPU backend of the height-map filters (stages/heightmap_filters.h), the
// oracle of the CUDA one. oneTBB: median and to8 parallel over rows,
// horizontal dilation/erosion over rows, vertical over blocks of columns.
// Buffers are sized at set-up; per-thread line scratch is allocated on a
// worker's first use only.
#include <tbb/blocked_range.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/errors.h"
#include "kernels/heightmap_ops.h"
#include "stages/heightmap_filters.h"

namespace stripeline::cpu {

namespace {

constexpr int kColumnBlock = 32;

struct LineScratch {
  std::vector<std::uint16_t> line, g, h, out;
  std::vector<std::uint16_t> window;
};

// Van Herk / Gil-Werman max over [x - L/2, x + (L-1)/2] clipped, on one line
// of n values; `neg` turns it into the erosion (kernels::morph_neg).
void morph_line(const std::uint16_t* in, int n, int L, bool neg, std::uint16_t* out, std::uint16_t* g, std::uint16_t* h) {
  const int a = L / 2;
  const int padded = n + L - 1;
  auto load = [&](int p) -> std::uint16_t {
    const int i = p - a;
    if (i < 0 || i >= n) return 0;
    return neg ? kernels::morph_neg(in[i]) : in[i];
  };
  for (int s = 0; s < padded; s += L) {
    const int e = std::min(s + L, padded);
    g[s] = load(s);
    for (int p = s + 1; p < e; ++p) g[p] = std::max(g[p - 1], load(p));
    h[e - 1] = load(e - 1);
    for (int p = e - 2; p >= s; --p) h[p] = std::max(h[p + 1], load(p));
  }
  for (int x = 0; x < n; ++x) {
    const std::uint16_t r = std::max(h[x], g[x + L - 1]);
    out[x] = neg ? kernels::morph_neg(r) : r;
  }
}

class CpuHeightMapFilter final : public HeightMapFilter {
 public:
  CpuHeightMapFilter(int width, int height, std::vector<FilterStep> steps)
      : width_(width), height_(height), steps_(std::move(steps)), a_(pixels()), b_(pixels()), scratch_(make_scratch()) {}

  Backend backend() const override { return Backend::Cpu; }
  int width() const override { return width_; }
  int height() const override { return height_; }
  bool output_8bit() const override {
    return steps_.back().op == FilterOp::To8 || steps_.back().op == FilterOp::MedianTo8;
  }

  void run(const std::uint16_t* in, void* out) override {
    const std::uint16_t* src = in;
    for (std::size_t i = 0; i < steps_.size(); ++i) {
      const auto& s = steps_[i];
      const bool last = i + 1 == steps_.size();
      std::uint16_t* dst = last ? static_cast<std::uint16_t*>(out) : (src == a_.data() ? b_.data() : a_.data());
      switch (s.op) {
        case FilterOp::Median: median(src, dst, s, nullptr); break;
        case FilterOp::MedianTo8: median(src, nullptr, s, static_cast<std::uint8_t*>(out)); break;
        case FilterOp::To8: to8(src, static_cast<std::uint8_t*>(out), s); break;
        case FilterOp::Dilate:
        case FilterOp::Erode:
          if (s.axis == FilterAxis::Horizontal)
            morph_h(src, dst, s.size, s.op == FilterOp::Erode);
          else
            morph_v(src, dst, s.size, s.op == FilterOp::Erode);
          break;
      }
      src = dst;
    }
  }

 private:
  tbb::enumerable_thread_specific<LineScratch> make_scratch() const {
    int max_l = 1;
    for (const auto& s : steps_)
      if (s.op == FilterOp::Dilate || s.op == FilterOp::Erode) max_l = std::max(max_l, s.size);
    LineScratch ex;
    const std::size_t n = static_cast<std::size_t>(std::max(width_, height_));
    ex.line.resize(n);
    ex.out.resize(n);
    ex.g.resize(n + max_l);
    ex.h.resize(n + max_l);
    ex.window.resize(kMaxMedian * kMaxMedian);
    return tbb::enumerable_thread_specific<LineScratch>(ex);
  }

  std::size_t pixels() const { return static_cast<std::size_t>(width_) * height_; }

  void median(const std::uint16_t* in, std::uint16_t* out16, const FilterStep& s, std::uint8_t* out8) {
    const int r = s.size / 2;
    tbb::parallel_for(tbb::blocked_range<int>(0, height_), [&](const tbb::blocked_range<int>& rows) {
      auto& w = scratch_.local();
      for (int y = rows.begin(); y < rows.end(); ++y) {
        const int y0 = std::max(0, y - r), y1 = std::min(height_ - 1, y + r);
        for (int x = 0; x < width_; ++x) {
          const int x0 = std::max(0, x - r), x1 = std::min(width_ - 1, x + r);
          int n = 0;
          for (int yy = y0; yy <= y1; ++yy) {
            const std::uint16_t* row = in + static_cast<std::size_t>(yy) * width_;
            for (int xx = x0; xx <= x1; ++xx)
              if (row[xx] != 0) w.window[n++] = row[xx];
          }
          const std::uint16_t m = n == 0 ? 0 : kernels::select_kth(w.window.data(), n, (n - 1) / 2);
          const std::size_t at = static_cast<std::size_t>(y) * width_ + x;
          if (out8)
            out8[at] = kernels::to8(m, s.lo, s.hi);
          else
            out16[at] = m;
        }
      }
    });
  }

  void to8(const std::uint16_t* in, std::uint8_t* out, const FilterStep& s) {
    tbb::parallel_for(tbb::blocked_range<int>(0, height_), [&](const tbb::blocked_range<int>& rows) {
      for (int y = rows.begin(); y < rows.end(); ++y)
        for (int x = 0; x < width_; ++x) {
          const std::size_t at = static_cast<std::size_t>(y) * width_ + x;
          out[at] = kernels::to8(in[at], s.lo, s.hi);
        }
    });
  }

  void morph_h(const std::uint16_t* in, std::uint16_t* out, int L, bool neg) {
    tbb::parallel_for(tbb::blocked_range<int>(0, height_), [&](const tbb::blocked_range<int>& rows) {
      auto& w = scratch_.local();
      for (int y = rows.begin(); y < rows.end(); ++y) {
        const std::size_t at = static_cast<std::size_t>(y) * width_;
        morph_line(in + at, width_, L, neg, out + at, w.g.data(), w.h.data());
      }
    });
  }

  void morph_v(const std::uint16_t* in, std::uint16_t* out, int L, bool neg) {
    const int blocks = (width_ + kColumnBlock - 1) / kColumnBlock;
    tbb::parallel_for(tbb::blocked_range<int>(0, blocks), [&](const tbb::blocked_range<int>& range) {
      auto& w = scratch_.local();
      for (int b = range.begin(); b < range.end(); ++b)
        for (int x = b * kColumnBlock; x < std::min(width_, (b + 1) * kColumnBlock); ++x) {
          for (int y = 0; y < height_; ++y) w.line[y] = in[static_cast<std::size_t>(y) * width_ + x];
          morph_line(w.line.data(), height_, L, neg, w.out.data(), w.g.data(), w.h.data());
          for (int y = 0; y < height_; ++y) out[static_cast<std::size_t>(y) * width_ + x] = w.out[y];
        }
    });
  }

  int width_, height_;
  std::vector<FilterStep> steps_;
  std::vector<std::uint16_t> a_, b_;
  tbb::enumerable_thread_specific<LineScratch> scratch_;
};

}  // namespace

std::unique_ptr<HeightMapFilter> make_heightmap_filter(int width, int height, const std::vector<FilterStep>& steps) {
  validate_filter_steps(steps);
  return std::make_unique<CpuHeightMapFilter>(width, height, steps);
}

}  // namespace stripeline::cpu
