// The live path's persistent engine. See live_engine.h.
#include "stages/cuda/live_engine.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <cstdio>
#include <new>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "core/cuda/check.h"
#include "core/errors.h"
#include "core/profile_layout.h"
#include "kernels/cuda/line_model_kernels.h"

namespace stripeline::cuda {

namespace kc = kernels::cuda;

namespace {

using clock = std::chrono::steady_clock;
constexpr auto kStartTimeout = std::chrono::seconds(2);  // every block resident by then, or never
// start() launches again until both run out: a quarter of a second, and
// attempts enough for the model's start wait (2 ms, doubling each attempt)
// to reach 128 ms (under synccheck the blocks took over 100 ms to start).
constexpr auto kStartTries = std::chrono::milliseconds(250);
constexpr int kStartAttempts = 7;
constexpr auto kFrameTimeout = std::chrono::seconds(5);  // a frame takes microseconds (under compute-sanitizer, up to ~1 s)

std::uint64_t load_acquire(std::uint64_t& word) { return std::atomic_ref<std::uint64_t>(word).load(std::memory_order_acquire); }

// Spins until `done()`; false after `timeout`. Past 100 ms it says so once
// (`what` names the wait): a frame takes microseconds.
template <class Done>
bool spin_until(const Done& done, clock::duration timeout, const char* what) {
  const auto start = clock::now(), deadline = start + timeout;
  bool said = false;
  for (std::uint32_t i = 0;; ++i) {
    if (done()) return true;
    if ((i & 0xFFF) != 0) continue;
    const auto now = clock::now();
    if (now > deadline) return false;
    if (!said && now - start > std::chrono::milliseconds(100)) said = true, spdlog::warn("live engine: {} for over 100 ms", what);
  }
}

// One engine a device: the running ones, by device.
std::mutex g_engines_mutex;
std::vector<std::pair<int, std::weak_ptr<LiveEngine>>> g_engines;
std::atomic<int> g_engines_alive{0};  // engines made less engines gone

}  // namespace

std::shared_ptr<LiveEngine> LiveEngine::attach(const LiveEngineKey& key) {
  const std::lock_guard lock(g_engines_mutex);
  for (auto& [device, weak] : g_engines)
    if (device == key.device)
      if (std::shared_ptr<LiveEngine> running = weak.lock()) return running->key() == key ? running : nullptr;
  std::shared_ptr<LiveEngine> engine(new LiveEngine(key));
  {
    const std::lock_guard submit(engine->submit_mutex_);
    if (!engine->start(1)) return nullptr;
  }
  std::erase_if(g_engines, [&](const auto& e) { return e.first == key.device; });
  g_engines.emplace_back(key.device, engine);
  return engine;
}

bool LiveEngine::any_running() { return g_engines_alive.load(std::memory_order_relaxed) > 0; }

std::shared_ptr<LiveEngine> LiveEngine::running_on(int device) {
  const std::lock_guard lock(g_engines_mutex);
  for (auto& [on, weak] : g_engines)
    if (on == device) return weak.lock();
  return nullptr;
}

LiveEngine::LiveEngine(const LiveEngineKey& key)
    : key_(key),
      mailbox_(allocate_pinned(sizeof(kc::LiveMailbox))),
      stop_word_(allocate_pinned(3 * sizeof(std::uint32_t))),
      state_(DeviceBuffer::allocate(sizeof(kc::LiveState), "live engine state")),
      candidates_(key.width, 2, key.line.candidates),
      copy_stream_(Stream::create()),
      chain_stream_(Stream::create()),
      model_stream_(Stream::create()),
      control_stream_(Stream::create()) {
  new (mailbox_.data()) kc::LiveMailbox{};
  kc::load_live_kernels();
  const std::size_t frame_bytes = static_cast<std::size_t>(key.width) * key.height * key.bytes_per_pixel;
  const std::size_t frame_stride = ProfileLayout::align_up(frame_bytes);
  pixels_ = DeviceBuffer::allocate(3 * frame_stride, "live engine pixels");  // frame n in the third n % 3 (live_kernels.h)
  back_ = DeviceBuffer::allocate(kernels::line_model_device_scratch_bytes(key.line.candidates, key.width, kc::kLiveModels),
                                 "live engine line model scratch");  // a frame's for each model block

  chain_args_.mailbox = &mailbox();
  chain_args_.state = state_.as<kc::LiveState>();
  chain_args_.pixels = pixels_.as<unsigned char>();
  chain_args_.frame_bytes = frame_bytes;
  chain_args_.frame_stride = frame_stride;
  chain_args_.width = key.width;
  chain_args_.height = key.height;
  chain_args_.chain = key.chain;
  const kc::ProfileView& c = chain_args_.candidates = candidates_.view();
  chain_args_.by_warp_up_to = key.warp_evaluation ? kc::kWarpEvaluatedCandidates : 0;

  model_args_.mailbox = chain_args_.mailbox;
  model_args_.state = chain_args_.state;
  model_args_.chain_blocks = kc::live_chain_blocks(key.width);
  chain_args_.copy_ahead = key.copy_ahead;
  model_args_.copy_blocks = key.copy_ahead ? kc::live_copy_blocks(key.width) : 0;
  const kernels::LineStageAhead size = kernels::line_stage_ahead(key.line, key.width, nullptr);
  if (size.frame_bytes > 0) {  // the model's pass 0 staged by the chain's blocks (else the model stages it)
    staged_ = DeviceBuffer::allocate(2 * size.frame_bytes, "live engine staged pass 0");  // frame n into n & 1's
    chain_args_.ahead = model_args_.ahead = kernels::line_stage_ahead(key.line, key.width, staged_.as<unsigned char>());
  }
  // The candidates' two buffers ([frame][slot][column], counts [frame][column]).
  const std::size_t slots = static_cast<std::size_t>(c.slots) * key.width;
  for (std::size_t b = 0; b < 2; ++b)
    model_args_.candidates[b] = {c.position + b * slots, c.intensity + b * slots, c.stripe_width + b * slots, c.quality + b * slots,
                                 c.count + b * static_cast<std::size_t>(key.width)};
  view_.in = model_args_.candidates[0];
  view_.back = back_.as<std::uint8_t>();
  view_.back_stride = 1;
  view_.frames = 1;
  view_.width = key.width;
  chain_args_.view = view_;
  chain_args_.view.frames = 2;  // the staging reads frame n & 1's
  g_engines_alive.fetch_add(1, std::memory_order_relaxed);  // last: a constructor that throws makes none
}

LiveEngine::~LiveEngine() {
  const std::lock_guard lock(submit_mutex_);
  stop();
  g_engines_alive.fetch_sub(1, std::memory_order_relaxed);
}

bool LiveEngine::start(std::uint64_t first_ticket) {
  // The model's blocks first (each takes an SM whole), then the chain's and
  // the copy kernel's. A launch may be held up by another thread's call that
  // waits for the whole device (a free), which waits for the launched
  // kernel: then the model's blocks end by themselves (all_started) and the
  // kernels go again, kStartAttempts times and for at least a quarter of a
  // second: processors set up on other threads while frames run make
  // several such calls (three tries were once too few, session 18).
  const auto give_up = clock::now() + kStartTries;
  for (int attempt = 0;; ++attempt) {
    if (launch(first_ticket, attempt)) {
      failed_starts_ = 0;
      return true;
    }
    stop();
    if (attempt >= kStartAttempts - 1 && clock::now() > give_up) break;
  }
  spdlog::warn("live engine: its blocks did not all start together on device {}; frames go by CUDA graphs (the next try in {} s)", key_.device,
               retry_delay().count());
  return false;
}

bool LiveEngine::launch(std::uint64_t first_ticket, int attempt) {
  STRIPELINE_CUDA_CHECK(cudaMemsetAsync(state_.data(), 0, sizeof(kc::LiveState), control_stream_.get()));
  STRIPELINE_CUDA_CHECK(cudaStreamSynchronize(control_stream_.get()));
  first_ = chain_args_.first_ticket = model_args_.first_ticket = first_ticket;
  // The model's wait for the other blocks: 2 ms, doubling with each attempt.
  // Launches take microseconds; a launch held up behind another thread's
  // call that waits for the device (which waits for the model) costs the
  // frames this long, and a slow start (a sanitizer) gets the longer waits.
  model_args_.start_wait_ns = std::uint64_t{2'000'000} << std::min(attempt, kStartAttempts - 1);
  running_ = true;  // from here on stop() ends what was launched
  launches_.fetch_add(1, std::memory_order_relaxed);
  kc::launch_live_line_model(view_, key_.line, model_args_, model_stream_.get());
  if (key_.bytes_per_pixel == 1)
    kc::launch_live_chain<std::uint8_t>(chain_args_, copy_stream_.get(), chain_stream_.get());
  else
    kc::launch_live_chain<std::uint16_t>(chain_args_, copy_stream_.get(), chain_stream_.get());
  // Every block resident and none stopped, or the waits between them would never end.
  auto* words = reinterpret_cast<std::uint32_t*>(stop_word_.data());  // [1] stop, [2] alive, as LiveState has them
  const std::uint32_t blocks = kc::live_chain_blocks(key_.width) + model_args_.copy_blocks + kc::kLiveModels;
  return spin_until(
      [&] {
        STRIPELINE_CUDA_CHECK(cudaMemcpyAsync(words + 1, &state_.as<kc::LiveState>()->stop, 2 * sizeof *words, cudaMemcpyDeviceToHost,
                                              control_stream_.get()));
        STRIPELINE_CUDA_CHECK(cudaStreamSynchronize(control_stream_.get()));
        return words[1] != 0 || words[2] == blocks;
      },
      kStartTimeout, "waiting for its blocks to start") &&
         words[1] == 0;
}

void LiveEngine::stop() noexcept {
  if (!running_) return;
  running_ = false;
  auto* word = reinterpret_cast<std::uint32_t*>(stop_word_.data());
  *word = 1;
  STRIPELINE_CUDA_LOG(cudaMemcpyAsync(&state_.as<kc::LiveState>()->stop, word, sizeof *word, cudaMemcpyHostToDevice, control_stream_.get()));
  STRIPELINE_CUDA_LOG(cudaStreamSynchronize(control_stream_.get()));
  for (cudaStream_t s : kernel_streams()) STRIPELINE_CUDA_LOG(cudaStreamSynchronize(s));
}

std::uint64_t LiveEngine::submit(const void* pixels, const kernels::LineModelArrays& out) {
  if (reinterpret_cast<std::uintptr_t>(pixels) % 16 != 0)
    throw RuntimeFailure("live engine: the frame's pixels are not 16-byte aligned (expected a pinned batch's first frame)");
  const std::lock_guard lock(submit_mutex_);
  if (holds_ > 0 || (!running_ && clock::now() < retry_after_)) return 0;
  if (!running_ && !start(submitted_ + 1)) return decline_for_a_while();
  const std::uint64_t ticket = ++submitted_;
  kc::LiveMailbox& m = mailbox();
  const auto slot = static_cast<std::size_t>(ticket % kc::kLiveSlots);
  constexpr auto kSlots = static_cast<std::uint64_t>(kc::kLiveSlots);
  if (ticket > kSlots && !spin_until([&] { return load_acquire(m.finished[slot].done) + kSlots >= ticket; }, kFrameTimeout, "waiting for a free slot"))
    throw RuntimeFailure("live engine: ticket " + std::to_string(ticket - kSlots) + " not done after 5 s (its slot is needed)");
  kc::LiveRequest& r = m.request[slot];
  r.pixels = pixels;
  r.out = out;
  std::uint64_t fields[kc::kLiveRequestFields];  // words 1..6 of the request's line, as block 0 reads them
  std::memcpy(fields, &r.pixels, sizeof fields);
  r.check = kc::live_request_check(ticket, fields);
  std::atomic_ref<std::uint64_t>(r.seq).store(ticket, std::memory_order_release);
  std::atomic_thread_fence(std::memory_order_seq_cst);  // then the park: LiveMailbox::parked says why
  if (load_acquire(m.parked) == ticket && !resume_after_park(ticket)) {
    // That ticket abandoned (the kernels are stopped): its slot marked done,
    // or ticket + kLiveSlots would wait for it; the next launch starts after it.
    std::atomic_ref<std::uint64_t>(m.finished[slot].done).store(ticket, std::memory_order_release);
    return decline_for_a_while();
  }
  return ticket;
}

// The kernels could not all start (other kernels hold the SMs' room): this
// frame and those until retry_delay() go by the graphs, then a new try.
std::uint64_t LiveEngine::decline_for_a_while() {
  retry_after_ = clock::now() + retry_delay();
  ++failed_starts_;
  return 0;
}

// 1 s after a first failed start, doubling to 64 s while they fail: each try
// holds up the frames for its quarter of a second, which a device the
// engine never fits on (other processes' kernels on its SMs) would cost
// every second.
std::chrono::seconds LiveEngine::retry_delay() const { return std::chrono::seconds(1 << std::min(failed_starts_, 6)); }

// The copy kernel's block 0 (the chain's without it) parked waiting for
// `ticket` (LiveMailbox::parked): either it saw the request after all
// (parked goes back to 0) or the kernels end; then they start again from
// this ticket.
bool LiveEngine::resume_after_park(std::uint64_t ticket) {
  kc::LiveMailbox& m = mailbox();
  auto ended = [](cudaStream_t s) {
    const cudaError_t e = cudaStreamQuery(s);
    if (e != cudaErrorNotReady) STRIPELINE_CUDA_CHECK(e);
    return e == cudaSuccess;
  };
  const bool settled = spin_until(
      [&] { return load_acquire(m.parked) != ticket || std::ranges::all_of(kernel_streams(), ended); }, kFrameTimeout,
      "waiting for its parked kernels");
  if (!settled) throw RuntimeFailure("live engine: its kernels neither ended nor took ticket " + std::to_string(ticket) + " within 5 s");
  if (load_acquire(m.parked) != ticket) return true;
  running_ = false;
  std::atomic_ref<std::uint64_t>(m.parked).store(0, std::memory_order_release);
  return start(ticket);
}

double LiveEngine::wait(std::uint64_t ticket) {
  kc::LiveMailbox& m = mailbox();
  const auto slot = static_cast<std::size_t>(ticket % kc::kLiveSlots);
  if (!spin_until([&] { return load_acquire(m.finished[slot].done) >= ticket; }, kFrameTimeout, "waiting for a frame")) {
    for (cudaStream_t s : kernel_streams())
      if (const cudaError_t e = cudaStreamQuery(s); e != cudaErrorNotReady) STRIPELINE_CUDA_CHECK(e);
    throw RuntimeFailure("live engine: ticket " + std::to_string(ticket) + " not done after 5 s");
  }
  record_phases(ticket);
  return static_cast<double>(m.finished[slot].device_ns) * 1e-6;
}

// Ticket's phases from its stamps: each stamp's time since the one before.
void LiveEngine::record_phases(std::uint64_t ticket) {
  const kc::LiveMailbox& m = mailbox();
  const auto slot = static_cast<std::size_t>(ticket % kc::kLiveSlots);
  const std::uint64_t* t = m.finished[slot].stamps;
  std::array<std::uint32_t, kPhases>& p = phases_[ticket % kPhaseFrames];
  for (std::size_t k = 0; k < kPhases; ++k) p[k] = static_cast<std::uint32_t>(t[k + 1] - t[k]);
  const std::uint64_t device_ns = m.finished[slot].device_ns;
  device_ns_[ticket % kPhaseFrames] = static_cast<std::uint32_t>(std::min<std::uint64_t>(device_ns, UINT32_MAX));
  waited_.fetch_add(1, std::memory_order_relaxed);
  if (device_ns > kSlowDeviceNs) slow_on_device_.fetch_add(1, std::memory_order_relaxed);
  std::uint64_t longest = device_ns_max_.load(std::memory_order_relaxed);
  while (device_ns > longest && !device_ns_max_.compare_exchange_weak(longest, device_ns, std::memory_order_relaxed)) {
  }
}

std::string LiveEngine::phase_report() const {
  const std::size_t n = std::min<std::size_t>(waited_.load(std::memory_order_relaxed), kPhaseFrames);
  if (n == 0) return {};
  static constexpr const char* kNames[kPhases] = {"request seen -> block 0's columns copied", "-> its strip stored", "-> every staging seen by the model",
                                                 "-> profiles written"};
  std::string out;
  for (std::size_t k = 0; k < kPhases; ++k) {
    std::vector<std::uint32_t> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = phases_[i][k];
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n / 2), v.end());
    char part[96];
    std::snprintf(part, sizeof part, "%s%s %.1f us", out.empty() ? "" : ", ", kNames[k], v[n / 2] * 1e-3);
    out += part;
  }
  std::vector<std::uint32_t> whole(device_ns_.begin(), device_ns_.begin() + static_cast<std::ptrdiff_t>(n));
  std::sort(whole.begin(), whole.end());
  char tail[240];
  std::snprintf(tail, sizeof tail,
                " (medians of the last %zu frames; a frame's whole time on the device there: p50 %.1f us, p99 %.1f us); of all %llu, %llu over %.0f us on the "
                "device, the longest %.1f us",
                n, whole[n / 2] * 1e-3, whole[std::min(n - 1, n * 99 / 100)] * 1e-3,
                static_cast<unsigned long long>(waited_.load(std::memory_order_relaxed)),
                static_cast<unsigned long long>(slow_on_device_.load(std::memory_order_relaxed)), kSlowDeviceNs * 1e-3,
                device_ns_max_.load(std::memory_order_relaxed) * 1e-3);
  return out + tail;
}

void LiveEngine::hold() {
  const std::lock_guard lock(submit_mutex_);
  ++holds_;
  stop_after_submitted();
}

void LiveEngine::release() {
  const std::lock_guard lock(submit_mutex_);
  if (holds_ > 0) --holds_;
}

void LiveEngine::pause() {
  const std::lock_guard lock(submit_mutex_);
  stop_after_submitted();
}

void LiveEngine::stop_after_submitted() {
  if (!running_) return;
  kc::LiveMailbox& m = mailbox();
  const std::uint64_t last = submitted_;
  if (last >= first_ && !spin_until([&] { return load_acquire(m.finished[last % kc::kLiveSlots].done) >= last; }, kFrameTimeout, "pausing"))
    spdlog::warn("live engine: ticket {} not done after 5 s; stopping its kernels anyway", last);
  stop();
}

}  // namespace stripeline::cuda
