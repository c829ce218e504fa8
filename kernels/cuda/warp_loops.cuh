#pragma once
// The loops of adaptive::evaluate and adaptive::centre taken by a whole warp
// at once, for one candidate (internal to kernels/cuda/).
//
// Why: a column's stripe is one candidate, so evaluating a warp's candidates a
// lane each (warp_chain.cu) leaves 31 lanes idle while one walks its rows one
// dependent load after the other: ~2,400 single-lane instructions a column,
// most of the warp chain's time on one frame (Nsight Compute, session 16).
// Here lane j takes step j + 1 of a walk: the stops come from a ballot, the
// minima and sums from warp reductions, 32 steps at a time.
//
// Each member gives adaptive::ScalarLoops' result exactly (the same rows, the
// same ties: a minimum's nearest row, a maximum's topmost one), so
// adaptive::evaluate and adaptive::centre, given this policy, give the oracle's
// bits (tests/test_cuda.cpp compares them on every geometry). Every lane of
// the warp must call each member together, with the same arguments. Values
// are at most 16 bits (blurred 8- or 16-bit pixels) and walks shorter than
// 256 rows (kWarpChainMaxHeight), so a (value, step) pair packs into 32 bits.
#include <climits>
#include <cstdint>

#include "kernels/column_extract.h"
#include "kernels/cuda/warp_chain_limits.h"

namespace stripeline::kernels::cuda::detail {

class WarpLoops {
 public:
  __device__ explicit WarpLoops(int lane) : lane_(lane) {}

  template <class Keep>
  __device__ int extend(int from, int dir, int steps, const Keep& keep) const {
    for (int base = 0; base < steps; base += kLanes) {
      const int k = base + lane_ + 1;
      const unsigned stops = __ballot_sync(kAll, k > steps || !keep(from + dir * k));
      if (stops != 0) return from + dir * (base + __ffs(static_cast<int>(stops)) - 1);
    }
    return from + dir * (steps > 0 ? steps : 0);
  }

  template <class Column>
  __device__ bool side_minimum(const Column& col, int height, int peak, std::uint32_t value, int dir, int radius, std::uint32_t& minimum,
                               int& at) const {
    const int room = dir > 0 ? height - 1 - peak : peak, steps = radius < room ? radius : room;
    unsigned best = kNone;  // (value, step) of the lowest pixel visited, the nearest on ties
    for (int base = 0; base < steps; base += kLanes) {
      const int k = base + lane_ + 1;
      const std::uint32_t v = k <= steps ? col(peak + dir * k) : 0;
      const unsigned stops = __ballot_sync(kAll, k > steps || v > value);
      const int visited = stops != 0 ? __ffs(static_cast<int>(stops)) - 1 : kLanes;  // lanes before the first stop
      best = min_of(best, warp_min(lane_ < visited ? pack(v, k) : kNone));
      if (stops != 0) break;
    }
    minimum = value;
    at = peak;
    if (best != kNone && (best >> kStepBits) < value) minimum = best >> kStepBits, at = peak + dir * static_cast<int>(best & kStepMask);
    return best != kNone;
  }

  // adaptive::anchor_walk: the running lowest pixel is an inclusive prefix
  // minimum over the steps (step 0 the peak), the valley the first step that
  // rises more than `rise` within 3 rows of it, the outer minimum a
  // reduction over the outer half up to where the walk ends.
  template <class Column>
  __device__ void anchor_walk(const Column& col, int height, int peak, int dir, int distance, std::uint32_t rise, bool& valley, int& lowest_at,
                              int& outer_at, int& at) const {
    const int room = dir > 0 ? height - 1 - peak : peak, steps = distance < room ? distance : room;
    const int outer_from = (distance + 1) / 2;  // the first step with 2 k >= distance
    unsigned lowest = pack(col(peak), 0), outer = kNone;
    int end = steps;  // the last step walked
    valley = false;
    for (int base = 0; base < steps; base += kLanes) {
      const int k = base + lane_ + 1;
      const bool in = k <= steps;
      const std::uint32_t v = in ? col(peak + dir * k) : 0;
      const unsigned key = in ? pack(v, k) : kNone;
      const unsigned prefix = min_of(warp_prefix_min(key), lowest);
      const bool rises = in && v > (prefix >> kStepBits) + rise && k - static_cast<int>(prefix & kStepMask) <= 3;
      const unsigned hits = __ballot_sync(kAll, rises);
      const int last = hits != 0 ? __ffs(static_cast<int>(hits)) - 1 : kLanes - 1;
      outer = min_of(outer, warp_min(in && k >= outer_from && lane_ <= last ? key : kNone));
      lowest = __shfl_sync(kAll, prefix, last);
      if (hits != 0) {
        valley = true;
        end = base + last + 1;
        break;
      }
    }
    lowest_at = peak + dir * static_cast<int>(lowest & kStepMask);
    outer_at = outer == kNone ? peak : peak + dir * static_cast<int>(outer & kStepMask);
    at = peak + dir * (valley ? end - 1 : end);
  }

  template <class Column>
  __device__ std::uint64_t abs_steps(const Column& col, int lo, int hi) const {
    unsigned sum = 0;  // < 2^23: at most 255 steps of 16 bits
    for (int y = lo + lane_; y < hi; y += kLanes) {
      const std::uint32_t a = col(y), b = col(y + 1);
      sum += a > b ? a - b : b - a;
    }
    return warp_sum(sum);
  }

  template <class Raw>
  __device__ std::int32_t raw_excess(const Raw& raw, const adaptive::Stripe& s, int first, int last) const {
    int best = 0;
    for (int y = first + lane_; y <= last; y += kLanes) {
      const int u = static_cast<std::int32_t>(raw(y) << adaptive::kQ) - adaptive::background_at(s, y);
      best = u > best ? u : best;
    }
    return warp_max(best);
  }

  template <class Column>
  __device__ int u_argmax(const Column& col, int height, const adaptive::Stripe& s, int first, int last, std::int32_t& um) const {
    int ym = first;
    um = INT_MIN;
    for (int base = 0; first + base <= last; base += kLanes) {
      const int y = first + base + lane_;
      const int u = y <= last ? adaptive::u_at(col, height, s, y) : INT_MIN;
      const int top = warp_max(u);
      const unsigned at_top = __ballot_sync(kAll, y <= last && u == top);
      if (top > um) um = top, ym = first + base + __ffs(static_cast<int>(at_top)) - 1;  // the topmost of the largest
    }
    return ym;
  }

  template <class Column>
  __device__ void centroid_sums(const Column& col, int height, const adaptive::Stripe& s, int lo, int hi, std::int32_t level, std::int64_t& sw,
                                std::int64_t& swy) const {
    long long w_sum = 0, wy_sum = 0;
    for (int y = lo + lane_; y <= hi; y += kLanes) {
      long long w = adaptive::u_at(col, height, s, y) - level;
      if (w <= 0) continue;
      w *= w;
      w_sum += w;
      wy_sum += w * (y - lo);
    }
    sw = warp_sum64(w_sum);
    swy = warp_sum64(wy_sum);
  }

 private:
  static constexpr int kLanes = 32;
  static constexpr unsigned kAll = 0xFFFFFFFFu;
  static constexpr int kStepBits = 8;
  static constexpr unsigned kStepMask = (1u << kStepBits) - 1, kNone = 0xFFFFFFFFu;
  static_assert(kWarpChainMaxHeight < (1 << kStepBits), "a walk's step must fit its bits");

  __device__ static unsigned pack(std::uint32_t value, int step) { return value << kStepBits | static_cast<unsigned>(step); }
  __device__ static unsigned min_of(unsigned a, unsigned b) { return a < b ? a : b; }

  // The lanes' x combined by `op` (every lane gets the result).
  template <class T, class Op>
  __device__ static T butterfly(T x, const Op& op) {
    for (int d = kLanes / 2; d > 0; d /= 2) x = op(x, __shfl_xor_sync(kAll, x, d));
    return x;
  }
  __device__ static unsigned warp_min(unsigned x) {
#if __CUDA_ARCH__ >= 800
    return __reduce_min_sync(kAll, x);
#else
    return butterfly(x, [](unsigned a, unsigned b) { return min_of(a, b); });
#endif
  }
  __device__ static int warp_max(int x) {
#if __CUDA_ARCH__ >= 800
    return __reduce_max_sync(kAll, x);
#else
    return butterfly(x, [](int a, int b) { return a > b ? a : b; });
#endif
  }
  __device__ static unsigned warp_sum(unsigned x) {
#if __CUDA_ARCH__ >= 800
    return __reduce_add_sync(kAll, x);
#else
    return butterfly(x, [](unsigned a, unsigned b) { return a + b; });
#endif
  }
  __device__ static long long warp_sum64(long long x) {
    return butterfly(x, [](long long a, long long b) { return a + b; });
  }
  __device__ unsigned warp_prefix_min(unsigned x) const {
    for (int d = 1; d < kLanes; d *= 2) {
      const unsigned other = __shfl_up_sync(kAll, x, d);
      if (lane_ >= d) x = min_of(x, other);
    }
    return x;
  }

  int lane_;
};

}  // namespace stripeline::kernels::cuda::detail
