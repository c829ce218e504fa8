// Height-map filter chains: parsing, validation, fusion, and the factory that
// picks the backend.
#include "stages/heightmap_filters.h"

#include <tbb/task_arena.h>

#include <algorithm>
#include <charconv>
#include <string_view>

#include "core/errors.h"
#include "stages/factory.h"

namespace stripeline {

namespace {

int parse_int(std::string_view what, std::string_view text) {
  int v = 0;
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size())
    throw InputError("filter step '" + std::string(what) + "': '" + std::string(text) + "' is not an integer");
  return v;
}

FilterStep make_step(std::string_view op, std::string_view value) {
  FilterStep s;
  if (op == "median") {
    s.op = FilterOp::Median;
    s.size = parse_int(op, value);
  } else if (op == "dilate-h" || op == "dilate-v" || op == "erode-h" || op == "erode-v") {
    s.op = op.starts_with("dilate") ? FilterOp::Dilate : FilterOp::Erode;
    s.axis = op.ends_with("-h") ? FilterAxis::Horizontal : FilterAxis::Vertical;
    s.size = parse_int(op, value);
  } else if (op == "to8") {
    s.op = FilterOp::To8;
    const auto colon = value.find(':');
    if (colon == std::string_view::npos) throw InputError("filter step 'to8': '" + std::string(value) + "' (expected MIN:MAX, e.g. 32:4000)");
    const int lo = parse_int(op, value.substr(0, colon));
    const int hi = parse_int(op, value.substr(colon + 1));
    if (lo < 0 || hi > 65535 || lo >= hi)
      throw InputError("filter step 'to8': '" + std::string(value) + "' (expected 0 <= MIN < MAX <= 65535)");
    s.lo = static_cast<std::uint16_t>(lo);
    s.hi = static_cast<std::uint16_t>(hi);
  } else {
    throw InputError("unknown filter step '" + std::string(op) +
                     "' (expected median, dilate-h, dilate-v, erode-h, erode-v or to8)");
  }
  return s;
}

}  // namespace

std::string describe(const FilterStep& s) {
  const char* axis = s.axis == FilterAxis::Vertical ? "-v" : "-h";
  switch (s.op) {
    case FilterOp::Median: return "median " + std::to_string(s.size);
    case FilterOp::Dilate: return std::string("dilate") + axis + " " + std::to_string(s.size);
    case FilterOp::Erode: return std::string("erode") + axis + " " + std::to_string(s.size);
    case FilterOp::To8: return "to8 " + std::to_string(s.lo) + ":" + std::to_string(s.hi);
    case FilterOp::MedianTo8: return "median " + std::to_string(s.size) + " + to8 " + std::to_string(s.lo) + ":" + std::to_string(s.hi);
  }
  return "?";
}

void validate_filter_steps(const std::vector<FilterStep>& steps) {
  if (steps.empty()) throw InputError("no filter step given (expected --median K, --dilate-h L, --dilate-v L, --erode-h L, --erode-v L or --to8 MIN:MAX)");
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const auto& s = steps[i];
    if (s.op == FilterOp::Median || s.op == FilterOp::MedianTo8) {
      if (s.size < kMinMedian || s.size > kMaxMedian || s.size % 2 == 0)
        throw InputError("filter step 'median': " + std::to_string(s.size) + " (expected an odd size from 3 to 15)");
    }
    if (s.op == FilterOp::Dilate || s.op == FilterOp::Erode) {
      if (s.size < 1 || s.size > kMaxMorphLength)
        throw InputError("filter step '" + describe(s) + "': length " + std::to_string(s.size) + " (expected 1 to 255)");
      if (s.axis == FilterAxis::None) throw InputError("filter step '" + describe(s) + "': no axis");
    }
    if (s.op == FilterOp::To8 || s.op == FilterOp::MedianTo8) {
      if (s.lo >= s.hi) throw InputError("filter step 'to8': MIN must be below MAX");
      if (i + 1 != steps.size()) throw InputError("filter step '" + describe(s) + "' must be the last step (its output is 8-bit)");
    }
  }
}

std::vector<FilterStep> parse_filter_steps(const std::vector<std::string>& args) {
  std::vector<FilterStep> steps;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string_view a = args[i];
    while (a.starts_with('-')) a.remove_prefix(1);
    std::string value;
    if (const auto eq = a.find('='); eq != std::string_view::npos) {
      value = std::string(a.substr(eq + 1));
      a = a.substr(0, eq);
    } else {
      if (i + 1 >= args.size()) throw InputError("filter step '" + args[i] + "' needs a value");
      value = args[++i];
    }
    steps.push_back(make_step(a, value));
  }
  validate_filter_steps(steps);
  return steps;
}

std::vector<FilterStep> parse_filter_step_list(const std::vector<std::string>& list) {
  std::vector<std::string> args;
  for (const auto& s : list) {
    const auto sp = s.find_first_of(" =");
    if (sp == std::string::npos) throw InputError("filter step '" + s + "' (expected 'op value', e.g. 'median 3')");
    args.push_back(s.substr(0, sp));
    const auto v = s.find_first_not_of(" =", sp);
    args.push_back(v == std::string::npos ? std::string() : s.substr(v));
  }
  return parse_filter_steps(args);
}

std::vector<FilterStep> fuse_filter_steps(std::vector<FilterStep> steps) {
  const std::size_t n = steps.size();
  if (n >= 2 && steps[n - 2].op == FilterOp::Median && steps[n - 1].op == FilterOp::To8) {
    steps[n - 2].op = FilterOp::MedianTo8;
    steps[n - 2].lo = steps[n - 1].lo;
    steps[n - 2].hi = steps[n - 1].hi;
    steps.pop_back();
  }
  return steps;
}

FilterMemory heightmap_filter_memory(Backend backend, int width, int height, const std::vector<FilterStep>& steps) {
  const std::size_t px = static_cast<std::size_t>(width) * static_cast<std::size_t>(height);
  int longest = 1;
  for (const auto& s : steps)
    if (s.op == FilterOp::Dilate || s.op == FilterOp::Erode) longest = std::max(longest, s.size);
  FilterMemory m;
  if (backend == Backend::Cuda) {  // stages/cuda/heightmap_filters_cuda.cu; scratch as kernels' heightmap_morph_scratch, either axis
    const std::size_t scratch = px + static_cast<std::size_t>(std::max(width, height)) * static_cast<std::size_t>(longest);
    m.device = px * 2 * 3 + px + scratch * 2 * 2;
    return m;
  }
  // stages/cpu/heightmap_filters_cpu.cpp: two maps, and each worker's lines
  const std::size_t line = static_cast<std::size_t>(std::max(width, height));
  m.host = px * 2 * 2 + (line * 4 + 2 * static_cast<std::size_t>(longest) + kMaxMedian * kMaxMedian) * 2 *
                             static_cast<std::size_t>(tbb::this_task_arena::max_concurrency());
  return m;
}

std::unique_ptr<HeightMapFilter> make_heightmap_filter(Backend backend, int width, int height, const std::vector<FilterStep>& steps) {
  validate_filter_steps(steps);
  if (width < 1 || height < 1)
    throw InputError("height map " + std::to_string(width) + "x" + std::to_string(height) + " (expected at least 1x1)");
  return backend_factory(resolve_backend(backend)).heightmap_filter(width, height, fuse_filter_steps(steps));
}

}  // namespace stripeline
