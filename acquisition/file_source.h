#pragma once
// Replays a recorded concatenated stripe image (TIFF, PNG, PGM, raw) as a
// stream of frames of `frame_height` rows, optionally paced at a frame rate
// (to emulate a live camera) and looped.
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "acquisition/source.h"
#include "io/image_reader.h"

namespace stripeline {

// Frames [start, end) of a recording, as `--frames START:END` writes them
// (0-based, END exclusive: 0:300 is the first 300 frames).
struct FrameSpan {
  std::uint64_t start = 0, end = 0;
  std::string settings;  // recorded with the range (FrameRange::settings): the replay's settings digest
};
// "START:END" -> FrameSpan. InputError naming `what` (the flag) and the text
// unless both are decimal frame numbers with START < END.
FrameSpan parse_frame_span(const std::string& text, const std::string& what = "--frames");

struct FileSourceConfig {
  std::filesystem::path path;
  int frame_height = 0;                       // required
  io::ImageFileFormat format = io::ImageFileFormat::Auto;
  std::optional<io::RawGeometry> raw;         // required for raw files
  double rate = 0.0;                          // frames per second; 0 = as fast as possible
  std::uint64_t loops = 1;                    // passes over the file; 0 = forever
  io::ChannelMix channel;                     // colour recordings: how a pixel becomes grey (default luma)
  // Only frames [start, end) of the recording (`replay --frames START:END`):
  // the reader seeks to the first (decoding only the strips that hold them,
  // docs/scale-out.md) and frames keep their numbers in the recording. One pass.
  std::optional<FrameSpan> frames;

  // Throws ConfigError naming the key (frame_height, rate). frame_height 0
  // means "not given yet" here; the source itself requires it.
  void validate() const;
};

class FileSource final : public FrameSource {
 public:
  // Opens the file and checks it: an image height that is not a multiple of
  // frame_height is an InputError naming the file and both numbers.
  explicit FileSource(FileSourceConfig config);
  ~FileSource() override;
  BatchLayout frame_layout() const override;
  bool fill(Batch& batch) override;
  std::optional<std::uint64_t> total_frames() const override;
  std::optional<FrameRange> frame_range() const override;
  std::string describe() const override;
  // What the file says (ImageInfo::significant_bits): TIFF tags, PNG sBIT, PGM maxval, the recording's description.
  SignificantBits significant_bits() const override { return reader_->info().significant_bits; }
  // A paced replay hands on the frames it has and ends within a frame or
  // kStopPollMs (a signal handler calls it: an atomic store only).
  void request_stop() noexcept override { stop_.store(true); }

 private:
  // A paced frame's wait polls for a stop this often (a Ctrl-C on `--rate 1` answers within it).
  static constexpr int kStopPollMs = 20;
  bool wait_until_due(std::int64_t due_ns) const;  // false: stopped meanwhile

  FileSourceConfig config_;
  std::unique_ptr<io::ImageReader> reader_;
  std::uint64_t frames_per_pass_ = 0;   // frames of one pass: the recording's, or those of config_.frames
  std::uint64_t recording_frames_ = 0;  // frames the whole recording holds
  std::uint64_t first_frame_ = 0;       // the first frame a pass delivers (config_.frames' start, else 0)
  std::uint64_t delivered_ = 0;
  std::uint64_t pass_ = 0;
  std::int64_t start_ns_ = 0;
  bool started_ = false;  // start_ns_ is set by the first fill()
  std::atomic<bool> stop_{false};
};

}  // namespace stripeline
