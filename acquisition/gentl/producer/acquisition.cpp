// The acquisition thread of a data stream: it takes buffers from the input
// pool, exposes the camera's frames at the frame rate (or on software
// triggers), writes them (only as many as fit), and puts each buffer in the
// output queue. It takes the stream lock only, never the library lock.
#include <algorithm>
#include <cstring>

#include "acquisition/gentl/frame_info_chunk.h"
#include "acquisition/gentl/producer/render_team.h"
#include "acquisition/gentl/producer/sim_producer.h"
#include "acquisition/synthetic_scanner.h"

namespace stripeline::gentl_sim {
namespace {

using gentl::FrameInfoRecord;

bool every(std::int64_t period, std::uint64_t i) {
  return period > 0 && i % static_cast<std::uint64_t>(period) == static_cast<std::uint64_t>(period) - 1;
}

SyntheticConfig scene_of(const Settings& s) {
  SyntheticConfig scene;
  scene.width = s.width;
  scene.frame_height = s.height;
  scene.frames = 0;
  scene.format = s.pixel_format == kMono8 ? PixelFormat::Mono8 : PixelFormat::Mono16;
  scene.seed = static_cast<std::uint64_t>(s.scene_seed);
  scene.validate();
  return scene;
}

// One run of DSStartAcquisition .. DSStopAcquisition.
class Acquisition {
 public:
  explicit Acquisition(Stream& st)
      : st_(st), d_(st.device), s_(st.snapshot), n_(static_cast<std::uint64_t>(s_.frames_per_buffer)), fb_(s_.frame_bytes()),
        scene_(scene_of(s_)), cache_(static_cast<std::size_t>(s_.cached_frames) * fb_), records_(n_),
        software_(s_.trigger_mode == 1 && s_.trigger_source == 0) {
    team_.for_each(static_cast<std::uint64_t>(s_.cached_frames), [&](std::uint64_t f) {
      render_synthetic_frame(scene_, f, reinterpret_cast<std::byte*>(cache_.data() + static_cast<std::size_t>(f) * fb_));
    });
  }

  void loop() {
    std::unique_lock lock(st_.mu);
    while (st_.delivered < st_.to_acquire) {
      if (!await_acquiring(lock)) return;
      if (unplugged()) return;
      Buffer* b = take_buffer(lock);
      if (st_.stop) return give_back(b);
      const bool lost = b && every(d_->drop_every.load(), buffer_id_);
      const std::uint64_t frames = b && !lost && every(d_->incomplete_every.load(), buffer_id_) ? n_ / 2 : n_;
      lock.unlock();
      const bool exposed = expose();
      if (exposed && b && !lost) write(b, frames);
      lock.lock();
      // The buffer is complete when its last frame is exposed (a stop wakes us).
      if (exposed && !software_) st_.cv.wait_until(lock, frame_time(frame_ + n_ - 1), [&] { return halted(); });
      if (halted()) {  // DSStopAcquisition or AcquisitionStop: the buffer goes back unfilled
        give_back(b);
        if (st_.stop) return;
        continue;
      }
      finish(b, lost, frames);
      frame_ += n_;
      ++buffer_id_;
    }
  }

 private:
  bool halted() const { return st_.stop || !d_->acquiring.load(); }

  // Frames flow while the camera is started (AcquisitionStart); each start
  // sets the time base anew. False when the stream stops.
  bool await_acquiring(std::unique_lock<std::mutex>& lock) {
    if (d_->acquiring.load() && started_) return !st_.stop;
    st_.cv.wait(lock, [&] { return st_.stop || d_->acquiring.load(); });
    if (st_.stop) return false;
    started_ = true;
    t0_ = clock::now();
    t0_ns_ = now_ns();
    frame_base_ = frame_;
    return true;
  }

  // SimUnplugAfterBuffers: the link is gone; no more buffers, and the
  // consumer's next wait fails (GC_ERR_IO).
  bool unplugged() {
    const std::int64_t after = d_->unplug_after.load();
    if (after <= 0 || buffer_id_ < static_cast<std::uint64_t>(after)) return false;
    st_.link_lost = true;
    st_.event_cv.notify_all();
    return true;
  }

  Buffer* take_buffer(std::unique_lock<std::mutex>& lock) {
    if (st_.input.empty() && s_.wait_for_buffers) st_.cv.wait(lock, [&] { return halted() || !st_.input.empty(); });
    if (st_.input.empty() || halted()) return nullptr;
    Buffer* b = st_.input.front();
    st_.input.pop_front();
    b->state = Buffer::State::Filling;
    ++st_.started;
    return b;
  }

  void give_back(Buffer* b) {
    if (!b) return;
    b->state = Buffer::State::Queued;
    st_.input.push_front(b);
  }

  clock::time_point frame_time(std::uint64_t f) const {
    const double seconds = static_cast<double>(f - frame_base_) / d_->frame_rate.load();
    return t0_ + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(seconds));
  }

  // The camera exposes the buffer's frames: their records. False when the
  // acquisition halted meanwhile (software trigger mode waits for triggers).
  bool expose() {
    const std::int64_t fail_every = d_->fail_every.load();
    for (std::uint64_t i = 0; i < n_; ++i) {
      const std::uint64_t f = frame_ + i;
      std::int64_t ts = 0;
      if (software_) {
        std::unique_lock wait(st_.mu);
        st_.cv.wait(wait, [&] { return halted() || d_->trigger_credits.load() > 0; });
        if (halted()) return false;
        d_->trigger_credits.fetch_sub(1);
        ts = now_ns();
      } else {
        ts = t0_ns_ + std::chrono::duration_cast<std::chrono::nanoseconds>(frame_time(f) - t0_).count();
      }
      records_[i] = FrameInfoRecord{f, ts, static_cast<std::int64_t>(f) * s_.encoder_step,
                                    every(fail_every, f) ? gentl::kFrameFailed : gentl::kFrameComplete,
                                    s_.encoder_step != 0 ? gentl::kFrameHasEncoder : 0u};
    }
    return true;
  }

  // Whole frames that fit in the buffer; the chunk only after all n frames.
  std::uint64_t fitting(const Buffer* b, std::uint64_t frames) const { return std::min<std::uint64_t>(frames, b->size / fb_); }
  bool chunk_fits(const Buffer* b, std::uint64_t frames) const {
    return s_.chunk_mode && frames == n_ && fitting(b, frames) == n_ && b->size - n_ * fb_ >= n_ * sizeof(FrameInfoRecord);
  }

  void write(Buffer* b, std::uint64_t frames) {
    const std::uint64_t fit = fitting(b, frames);
    if (s_.write_pixels) {
      team_.for_each(fit, [&](std::uint64_t i) {
        std::uint8_t* dst = b->base + i * fb_;
        if (s_.cached_frames > 0)
          std::memcpy(dst, cache_.data() + ((frame_ + i) % static_cast<std::uint64_t>(s_.cached_frames)) * fb_, fb_);
        else
          render_synthetic_frame(scene_, frame_ + i, reinterpret_cast<std::byte*>(dst));
      });
    }
    if (chunk_fits(b, frames)) std::memcpy(b->base + n_ * fb_, records_.data(), n_ * sizeof(FrameInfoRecord));
  }

  // Under the stream lock: the buffer's outcome.
  void finish(Buffer* b, bool lost, std::uint64_t frames) {
    if (!b) {
      ++st_.underruns;  // the grabber had no buffer: these frames are gone
      return;
    }
    if (lost) {
      give_back(b);
      fire_error(&st_, GC_ERR_IO, "buffer " + std::to_string(buffer_id_) + " lost (simulated link error)");
      return;
    }
    const std::uint64_t fit = fitting(b, frames);
    const std::size_t needed = frames * fb_ + (s_.chunk_mode && frames == n_ ? n_ * sizeof(FrameInfoRecord) : 0);
    b->frame_id = buffer_id_;
    b->timestamp_ns = records_[0].timestamp_ns;
    b->width = static_cast<std::size_t>(s_.width);
    b->height = n_ * static_cast<std::size_t>(s_.height);
    b->delivered_height = fit * static_cast<std::size_t>(s_.height);
    b->chunk_bytes = chunk_fits(b, frames) ? n_ * sizeof(FrameInfoRecord) : 0;
    b->filled = fit * fb_ + b->chunk_bytes;
    b->larger_than_buffer = needed > b->size;
    b->incomplete = fit < n_ || b->larger_than_buffer;
    b->pixel_format = s_.pixel_format;
    b->new_data = true;
    ++st_.delivered;
    st_.to_output(b);
  }

  Stream& st_;
  Device* d_;
  const Settings s_;
  const std::uint64_t n_;
  const std::size_t fb_;
  const SyntheticConfig scene_;
  RenderTeam team_;  // joined when the acquisition ends
  std::vector<std::uint8_t> cache_;
  std::vector<FrameInfoRecord> records_;
  const bool software_;
  bool started_ = false;
  clock::time_point t0_{};
  std::int64_t t0_ns_ = 0;
  std::uint64_t frame_ = 0, frame_base_ = 0, buffer_id_ = 0;
};

}  // namespace

void Stream::run() noexcept {
  try {
    Acquisition(*this).loop();
  } catch (const std::exception& e) {
    // Out of memory for the frame cache, a scene it cannot render: the
    // stream ends as a lost link would, and says why on EVENT_ERROR.
    std::lock_guard l(mu);
    link_lost = true;
    fire_error(this, GC_ERR_IO, std::string("the acquisition thread failed: ") + e.what());
    event_cv.notify_all();
  }
}

}  // namespace stripeline::gentl_sim
