#pragma once
// A sink that looks at the first batch only: when the stripe was found in
// fewer than `min_fraction` of its columns (over all its frames), the frame
// height is probably wrong (a recording replayed with the wrong -H cuts the
// stripe across frames, or a frame holds no stripe at all) and it logs a
// warning saying so; with 16-bit pixels whose significant bits were given
// (configuration, tags, camera) rather than measured, it names them too: too
// many scale the contrast floor above the stripe. It never fails a run and
// writes nothing.
#include <string>

#include "pipeline/sink.h"

namespace stripeline {

class StripeCoverageCheck final : public ProfileSink {
 public:
  explicit StripeCoverageCheck(std::string what, double min_fraction = 0.10) : what_(std::move(what)), min_fraction_(min_fraction) {}
  void begin(const ScanInfo& info) override;
  void consume(const ProfileSpan& profiles) override;
  void finish() override {}
  // After the first batch: the fraction of (frame, column) cells with a detection; < 0 before.
  double fraction() const { return fraction_; }
  bool warned() const { return warned_; }

 private:
  std::string what_;
  double min_fraction_;
  int frame_height_ = 0;
  PixelFormat format_ = PixelFormat::Mono8;
  SignificantBits pixel_bits_;
  double fraction_ = -1.0;
  bool warned_ = false;
};

}  // namespace stripeline
