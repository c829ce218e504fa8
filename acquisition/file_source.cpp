// Replays a recorded concatenated stripe image as frames. See file_source.h.
//
// Frames are read straight into the batch buffer (no intermediate copy):
// without a rate, all the frames of a batch (up to the end of a pass) in one
// read_rows(), which the reader decodes in parallel. With a rate, frame i of the replay is delivered no earlier than
// start + i / rate (steady clock), start being the first fill() call, and is
// stamped with that due time; without one, frames are stamped with the
// steady-clock time their read completed. Both are nanoseconds since start.
#include "acquisition/file_source.h"

#include <algorithm>
#include <charconv>
#include <string_view>
#include <chrono>
#include <cmath>
#include <sstream>
#include <thread>
#include <utility>

#include <spdlog/spdlog.h>

#include "core/errors.h"

namespace stripeline {

namespace {

std::int64_t steady_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

FrameSpan parse_frame_span(const std::string& text, const std::string& what) {
  const auto bad = [&](const std::string& why) {
    throw InputError(what + " '" + text + "': " + why + " (expected START:END, frame numbers from 0 with START < END, END exclusive)");
  };
  const std::size_t colon = text.find(':');
  if (colon == std::string::npos) bad("no ':'");
  const auto number = [&](std::string_view t, const char* name) {
    std::uint64_t v = 0;
    const auto r = std::from_chars(t.data(), t.data() + t.size(), v);
    if (t.empty() || r.ec != std::errc() || r.ptr != t.data() + t.size()) bad(std::string(name) + " '" + std::string(t) + "' is not a frame number");
    return v;
  };
  const std::string_view all(text);
  const FrameSpan span{number(all.substr(0, colon), "START"), number(all.substr(colon + 1), "END"), {}};
  if (span.start >= span.end) bad("START must be below END");
  return span;
}

void FileSourceConfig::validate() const {
  if (frame_height < 0 || frame_height > kMaxFrameHeight)
    throw ConfigError("frame_height " + std::to_string(frame_height) + " is out of range (expected 1.." + std::to_string(kMaxFrameHeight) + ")");
  if (!(rate >= 0.0 && std::isfinite(rate))) {
    std::ostringstream s;
    s << "rate " << rate << " is out of range (expected 0 for as fast as possible, or frames per second > 0)";
    throw ConfigError(s.str());
  }
}

FileSource::FileSource(FileSourceConfig config) : config_(std::move(config)) {
  const std::string file = config_.path.string();
  try {
    config_.validate();
    if (config_.frame_height == 0) throw ConfigError("frame_height 0 is out of range (expected 1.." + std::to_string(kMaxFrameHeight) + ")");
  } catch (const ConfigError& e) {
    throw ConfigError(file + ": " + e.what());
  }

  io::ImageReadOptions read_options;
  read_options.channel = config_.channel;
  reader_ = io::open_image(config_.path, config_.format, config_.raw, read_options);
  const io::ImageInfo& info = reader_->info();
  if (info.height % config_.frame_height != 0)
    throw InputError(file + ": image height " + std::to_string(info.height) + " is not a multiple of the frame height " +
                     std::to_string(config_.frame_height) + " (expected a whole number of frames)");
  if (info.height == 0)
    throw InputError(file + ": image height 0 holds no frame (expected at least " + std::to_string(config_.frame_height) +
                     " rows)");
  recording_frames_ = frames_per_pass_ = static_cast<std::uint64_t>(info.height / config_.frame_height);
  if (info.recorded_frame_height > 0 && info.recorded_frame_height != config_.frame_height)
    throw InputError(file + ": the file records frames of " + std::to_string(info.recorded_frame_height) +
                     " rows (its TIFF ImageDescription / PNG tEXt Description), but the frame height given is " +
                     std::to_string(config_.frame_height) + " (-H / source.frame_height; expected " +
                     std::to_string(info.recorded_frame_height) + ")");
  if (const auto& span = config_.frames) {
    const std::string flag = "--frames " + std::to_string(span->start) + ":" + std::to_string(span->end);
    if (span->start >= span->end || span->end > recording_frames_)
      throw InputError(file + ": " + flag + " is beyond the recording's " + std::to_string(recording_frames_) + " frames of " +
                       std::to_string(config_.frame_height) + " rows (expected START < END <= " + std::to_string(recording_frames_) + ")");
    if (config_.loops != 1)
      throw InputError(file + ": " + flag + " with " + (config_.loops == 0 ? std::string("endless loops") : std::to_string(config_.loops) + " loops") +
                       " (expected one pass over a part of a recording: --loops 1)");
    first_frame_ = span->start;
    frames_per_pass_ = span->end - span->start;
  }
}

std::optional<FrameRange> FileSource::frame_range() const {
  if (!config_.frames) return std::nullopt;
  return FrameRange{config_.frames->start, config_.frames->end, recording_frames_, config_.frames->settings};
}

FileSource::~FileSource() = default;

BatchLayout FileSource::frame_layout() const {
  const io::ImageInfo& info = reader_->info();
  return BatchLayout{info.width, config_.frame_height, 0, info.format};
}

std::optional<std::uint64_t> FileSource::total_frames() const {
  if (config_.loops == 0) return std::nullopt;
  return frames_per_pass_ * config_.loops;
}

std::string FileSource::describe() const {
  const io::ImageInfo& info = reader_->info();
  std::ostringstream s;
  // The recording's own description, whatever part of it is replayed: every
  // part's outputs record the same source as the whole replay's (frame_range() says which part).
  s << "file " << config_.path.string() << " " << info.width << "x" << config_.frame_height << " "
    << to_string(info.format) << ", " << recording_frames_ << " frames per pass, ";
  if (config_.loops == 0)
    s << "looping forever";
  else
    s << config_.loops << (config_.loops == 1 ? " pass" : " passes");
  if (config_.rate > 0.0)
    s << ", paced at " << config_.rate << " fps";
  else
    s << ", as fast as possible";
  return s.str();
}

bool FileSource::wait_until_due(std::int64_t due_ns) const {
  using namespace std::chrono;
  const auto due = steady_clock::time_point(duration_cast<steady_clock::duration>(nanoseconds(due_ns)));
  while (!stop_.load()) {
    const auto now = steady_clock::now();
    if (now >= due) return true;
    std::this_thread::sleep_until(std::min(due, now + milliseconds(kStopPollMs)));
  }
  return false;
}

bool FileSource::fill(Batch& batch) {
  check_fill_target(batch, frame_layout(), "file source");
  const BatchLayout& l = batch.layout;

  if (!started_) {
    start_ns_ = steady_now_ns();
    started_ = true;
    // A part of the recording: straight to its first row (io/image_reader.h
    // seek_row: strips and rows before it are not decoded where the file allows).
    if (first_frame_ > 0) reader_->seek_row(static_cast<std::int64_t>(first_frame_) * config_.frame_height);
  }

  int n = 0;
  while (n < l.frames && !stop_.load()) {
    // End of a pass: rewind for the next one, or stop.
    const std::uint64_t in_pass = delivered_ - pass_ * frames_per_pass_;
    if (in_pass == frames_per_pass_) {
      if (config_.loops != 0 && pass_ + 1 >= config_.loops) break;
      reader_->rewind();
      ++pass_;
      continue;
    }
    if (config_.rate > 0.0) {
      // Paced: frame by frame, each delivered no earlier than its due time,
      // as a live camera would.
      reader_->read_rows(batch.frame_data(n), config_.frame_height);
      FrameMeta& m = batch.meta[static_cast<std::size_t>(n)];
      m = FrameMeta{};
      m.frame_id = first_frame_ + delivered_;
      const auto due_ns =
          static_cast<std::int64_t>(std::llround(static_cast<double>(delivered_) * 1e9 / config_.rate));
      if (!wait_until_due(start_ns_ + due_ns)) break;  // stopped: this frame is not handed on
      m.timestamp_ns = due_ns;
      ++delivered_;
      ++n;
      continue;
    }
    // As fast as possible: every frame of this pass that fits, in one read
    // (the reader decodes it in parallel straight into the batch).
    const int k = static_cast<int>(std::min<std::uint64_t>(static_cast<std::uint64_t>(l.frames - n), frames_per_pass_ - in_pass));
    reader_->read_rows(batch.frame_data(n), static_cast<std::int64_t>(k) * config_.frame_height);
    const std::int64_t now = steady_now_ns() - start_ns_;
    for (int i = 0; i < k; ++i) {
      FrameMeta& m = batch.meta[static_cast<std::size_t>(n + i)];
      m = FrameMeta{};
      m.frame_id = first_frame_ + delivered_ + static_cast<std::uint64_t>(i);
      m.timestamp_ns = now;
    }
    delivered_ += static_cast<std::uint64_t>(k);
    n += k;
  }
  batch.frames = n;
  return n > 0;
}

}  // namespace stripeline
