#include "pipeline/memory_budget.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <limits>

#include <fmt/format.h>

#include "core/errors.h"
#include "core/profile_layout.h"
#include "stages/chain_keys.h"

namespace stripeline {

namespace {

// The cgroup's memory limit (v2, then v1), when one is set.
std::optional<std::uint64_t> cgroup_limit() {
  for (const char* path : {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    std::ifstream in(path);
    std::string text;
    if (!(in >> text) || text == "max") continue;
    char* end = nullptr;
    const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
    if (end != text.c_str() && *end == '\0' && v > 0) return v;
  }
  return std::nullopt;
}

}  // namespace

std::uint64_t machine_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  std::uint64_t bytes = pages > 0 && page > 0 ? static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page) : (std::uint64_t{4} << 30);
  if (const auto limit = cgroup_limit()) bytes = std::min(bytes, *limit);
  return bytes;
}

std::uint64_t default_host_budget() { return machine_memory_bytes() / kHostBudgetDivisor; }

std::uint64_t default_device_budget(Backend backend) {
  return backend == Backend::Cuda ? static_cast<std::uint64_t>(cuda_free_memory()) / kDeviceBudgetDivisor : 0;
}

std::uint64_t parse_memory_size(const std::string& text, const char* key) {
  auto refuse = [&] {
    throw ConfigError(std::string(key) + " = \"" + text +
                      "\" is not a memory size (expected \"auto\", bytes, or a number with K, M, G or T: \"512M\", \"1.5GiB\")");
  };
  if (text == "auto") return 0;
  std::size_t at = 0;
  while (at < text.size() && (std::isdigit(static_cast<unsigned char>(text[at])) || text[at] == '.')) ++at;
  if (at == 0) refuse();
  double number = 0;
  try {
    std::size_t used = 0;
    number = std::stod(text.substr(0, at), &used);
    if (used != at) refuse();
  } catch (const std::logic_error&) {
    refuse();
  }
  std::string unit = text.substr(at);
  unit.erase(std::remove(unit.begin(), unit.end(), ' '), unit.end());
  double scale = 1;
  if (!unit.empty()) {
    const char u = static_cast<char>(std::toupper(static_cast<unsigned char>(unit[0])));
    const std::string rest = unit.substr(1);
    if (u == 'B' && rest.empty()) scale = 1;
    else if (u == 'K' || u == 'M' || u == 'G' || u == 'T') {
      if (!(rest.empty() || rest == "i" || rest == "B" || rest == "iB")) refuse();
      scale = std::ldexp(1.0, u == 'K' ? 10 : u == 'M' ? 20 : u == 'G' ? 30 : 40);
    } else {
      refuse();
    }
  }
  const double bytes = number * scale;
  if (!std::isfinite(bytes) || bytes < 1 || bytes > 9.0e18) refuse();
  return static_cast<std::uint64_t>(std::llround(bytes));
}

std::string memory_size_text(std::uint64_t bytes) {
  if (bytes == 0) return "auto";
  const char* units = "TGMK";
  for (int i = 0; i < 4; ++i) {
    const std::uint64_t unit = std::uint64_t{1} << (10 * (4 - i));
    if (bytes % unit == 0) return std::to_string(bytes / unit) + units[i];
  }
  return std::to_string(bytes);
}

std::string human_bytes(std::uint64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + " B";
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int i = -1;
  while (v >= 1024.0 && i < 3) v /= 1024.0, ++i;
  return fmt::format("{:.1f} {}", v, units[i]);
}

ChainConfig with_output_slots(ChainConfig chain, int slots) {
  if (line_model_runs(chain)) return chain;  // one output slot; the candidates are not cut
  if (chain.column.method == ColumnMethod::All) chain.max_points = slots;
  else if ((chain.column.method == ColumnMethod::LocalMax || chain.column.method == ColumnMethod::Adaptive) &&
           chain.column.selection == SpotSelection::All)
    chain.max_peaks = slots;
  return chain;
}

MemoryNeed memory_need(const GeometryRequest& r, int frames, int slots, int buffers, int lanes) {
  BatchLayout l = r.frame;
  l.frames = frames;
  const ChainConfig chain = with_output_slots(r.chain, slots);
  const bool xyz = chain.calibration != nullptr;
  const std::uint64_t meta = 2ull * sizeof(FrameMeta) * static_cast<std::uint64_t>(frames);  // the batch's and the profiles'
  const std::uint64_t slot = std::max<std::uint64_t>(l.bytes(), r.direct_bytes) + meta + ProfileLayout::make(l.width, frames, slots, xyz).bytes;
  const LaneMemory lane = lane_memory(r.backend, l, chain);
  MemoryNeed n;
  n.host = slot * static_cast<std::uint64_t>(buffers) + lane.host * static_cast<std::uint64_t>(lanes) +
           r.sink_bytes_per_slot * static_cast<std::uint64_t>(frames) * static_cast<std::uint64_t>(slots);
  n.device = lane.device * static_cast<std::uint64_t>(lanes);
  return n;
}

std::string BatchGeometry::describe() const {
  std::string s = fmt::format("{} frame{} x {} buffer{}, {} slot{} per column{}, {} lane{}: host {} of {}", frames, frames == 1 ? "" : "s",
                              buffers, buffers == 1 ? "" : "s", slots,
                              slots == 1 ? "" : "s", slots < requested_slots ? fmt::format(" (of {}: the budget)", requested_slots) : "",
                              lanes, lanes == 1 ? "" : "s", human_bytes(host_bytes), human_bytes(host_budget));
  if (device_budget > 0) s += fmt::format(", device {} of {}", human_bytes(device_bytes), human_bytes(device_budget));
  return s;
}

namespace {

// What plan_batch_geometry needs around memory_need: the budgets, and the
// buffers and lanes for a frame count.
struct Planner {
  const GeometryRequest& r;
  std::uint64_t host_budget, device_budget;

  int buffers(int frames) const {
    int b = r.buffers;
    if (r.source_frames && *r.source_frames > 0) {
      const std::uint64_t batches = (*r.source_frames + static_cast<std::uint64_t>(frames) - 1) / static_cast<std::uint64_t>(frames);
      b = static_cast<int>(std::min<std::uint64_t>(static_cast<std::uint64_t>(b), std::max<std::uint64_t>(batches, 1)));
    }
    return b;
  }
  int lanes(int frames) const {
    const int b = buffers(frames);
    return r.lanes > 0 ? std::min(r.lanes, b) : std::max(1, b - 1);
  }
  MemoryNeed need(int frames, int slots) const { return memory_need(r, frames, slots, buffers(frames), lanes(frames)); }
  bool fits(int frames, int slots) const {
    const MemoryNeed n = need(frames, slots);
    return n.host <= host_budget && (r.backend != Backend::Cuda || n.device <= device_budget);
  }
  // The largest value in [lo, hi] for which ok() holds (ok monotonic, falling), or lo - 1.
  template <class Ok>
  static int largest(int lo, int hi, Ok ok) {
    int best = lo - 1;
    while (lo <= hi) {
      const int mid = lo + (hi - lo) / 2;
      if (ok(mid)) best = mid, lo = mid + 1;
      else hi = mid - 1;
    }
    return best;
  }
  // "65536x128 Mono16 frames, method all with 128 slots per column"
  std::string what(int slots) const {
    return fmt::format("{}x{} {} frames, method {} with {} slot{} per column", r.frame.width, r.frame.frame_height, to_string(r.frame.format),
                       to_string(r.chain.column.method), slots, slots == 1 ? "" : "s");
  }
  // Which budget a need breaks, for the messages: "memory_budget = 1.0 MiB" and "21.0 MiB of host memory".
  bool over_host(const MemoryNeed& n) const { return n.host > host_budget; }
  std::string budget_text(const MemoryNeed& n) const {
    return over_host(n) ? fmt::format("memory_budget = {}", human_bytes(host_budget))
                        : fmt::format("device_memory_budget = {}", human_bytes(device_budget));
  }
  std::string need_text(const MemoryNeed& n) const {
    return over_host(n) ? fmt::format("{} of host memory", human_bytes(n.host)) : fmt::format("{} of device memory", human_bytes(n.device));
  }
};

}  // namespace

BatchGeometry plan_batch_geometry(const GeometryRequest& r) {
  Planner p{r, r.budget.host ? r.budget.host : default_host_budget(), 0};
  if (r.backend == Backend::Cuda) p.device_budget = r.budget.device ? r.budget.device : default_device_budget(Backend::Cuda);
  const int step = r.even_frames ? 2 : 1;
  int target = r.batch_frames > 0 ? r.batch_frames : kDefaultBatchFrames;
  if (r.source_frames && *r.source_frames > 0 && *r.source_frames < static_cast<std::uint64_t>(target)) {
    target = static_cast<int>(*r.source_frames);
    target += target % step;  // pairs: a file's odd frame count still needs an even batch
  }
  BatchGeometry g;
  g.host_budget = p.host_budget;
  g.device_budget = p.device_budget;
  g.requested_slots = g.slots = output_slots(r.chain, r.frame.frame_height);
  g.frames = target;
  if (!p.fits(target, g.slots)) {
    // frames in units of `step`: the largest count that fits
    const int units = Planner::largest(1, target / step, [&](int u) { return p.fits(u * step, g.slots); });
    if (r.batch_frames > 0) {
      const MemoryNeed n = p.need(target, g.slots);
      const std::string fit = units >= 1 ? fmt::format("at most {} frames fit", units * step) : std::string("not even one frame fits");
      throw ConfigError(fmt::format("{} = {} does not fit {}: {} buffers of {} need {} ({}; lower {}, or leave it unset to derive it from the budget, "
                                    "or raise the budget: --memory-budget, --device-memory-budget)",
                                    chain_keys::batch_frames, target, p.budget_text(n), p.buffers(target), p.what(g.slots), p.need_text(n), fit,
                                    chain_keys::batch_frames));
    }
    g.frames_from_budget = true;
    if (units >= 1) {
      g.frames = units * step;
    } else {
      // Not one frame with every slot: a multi-peak method keeps the slots that fit.
      g.frames = step;
      const bool multi = g.slots > 1 && !line_model_runs(r.chain);
      const int slots = multi ? Planner::largest(1, g.slots - 1, [&](int s) { return p.fits(step, s); }) : 0;
      if (slots < 1) {
        const int least = multi ? 1 : g.slots;
        const MemoryNeed n = p.need(step, least);
        throw ConfigError(fmt::format("{} is too small for one frame: a batch of {} frame{} in {} buffer{} ({}) needs {} (raise it, or lower buffers)",
                                      p.budget_text(n), step, step == 1 ? "" : "s", p.buffers(step), p.buffers(step) == 1 ? "" : "s", p.what(least),
                                      p.need_text(n)));
      }
      g.slots = slots;
    }
  }
  g.buffers = p.buffers(g.frames);
  g.lanes = p.lanes(g.frames);
  const MemoryNeed n = p.need(g.frames, g.slots);
  g.host_bytes = n.host;
  g.device_bytes = n.device;
  return g;
}

}  // namespace stripeline
