#pragma once
// From a profile to what a user sees: points (x, y, z) and 16-bit height
// codes. Every output goes through here (the PLY and height-map sinks, the
// publisher's rows, the subscriber's rebuilt scans), so this is the one place
// a calibration is applied and the one place the height code is chosen.
//
// Without calibration: x = column, y = global frame index, z = row within the
// frame in pixels from the top row's centre (core/fixed_point.h). With the
// linear calibration (core/calibration.h), each axis is scaled and offset; y
// may come from the encoder count. With a sheet-of-light calibration
// (core/applied_calibration.h) a point is the model's image_to_world of
// (u, v) = (roi_x + column, roi_y + sub-pixel row), in mm; height codes and
// the stream's z stay in rows (the sensor form), see docs/calibration.md.
#include <cstdint>
#include <memory>

#include "core/applied_calibration.h"
#include "core/calibrated_point.h"
#include "core/calibration.h"
#include "core/fixed_point.h"
#include "core/profile.h"

namespace stripeline {

// Throws ConfigError unless 0 <= bits <= 8 (fractional bits of the 16-bit height code).
void validate_height_bits(int bits);
// Throws ConfigError when frames of `frame_height` rows do not fit the code with `bits`.
void validate_height_code(int bits, int frame_height);

class ProfileMapping {
 public:
  ProfileMapping() = default;
  // Throws ConfigError for bad height_bits.
  ProfileMapping(const LinearCalibration& calibration, int height_bits);
  // With a sheet-of-light calibration (nullptr: as above). It replaces the
  // linear one for points (point(), point_y()).
  ProfileMapping(const LinearCalibration& calibration, int height_bits, std::shared_ptr<const AppliedCalibration> sheet);

  const LinearCalibration& calibration() const { return calibration_; }
  const AppliedCalibration* sheet() const { return sheet_.get(); }
  int height_bits() const { return bits_; }
  // Unit of point(): "mm" with any calibration, "px" without.
  const char* unit() const { return sheet_ ? "mm" : calibration_.unit(); }

  // Y of profile f's points in the unit of point(): the sheet's motion axis
  // (frame index or encoder count times its step), or y() below.
  double point_y(std::uint64_t index, const FrameMeta& meta) const {
    if (!sheet_) return y(index, meta);
    return motion_y(map_, index, meta.has_encoder ? meta.encoder : static_cast<std::int64_t>(index));
  }
  // The point of a detection at `column` with `position` in a frame whose
  // motion position is y (point_y). False when the sheet-of-light model has
  // no point there (beyond the laser plane's horizon). With a sheet, X and Z
  // (and Y - y) are the floats of core/calibrated_point.h, which the CUDA
  // kernel computes to the same bits.
  bool point(double y, int column, std::int32_t position, double& X, double& Y, double& Z) const {
    if (!sheet_) {
      X = x(column);
      Y = y;
      Z = z(position);
      return true;
    }
    float px, pdy, pz;
    if (!calibrated_point(map_, sheet_->roi_x, sheet_->roi_y, column, position, px, pdy, pz)) return false;
    X = px;
    Y = y + static_cast<double>(pdy);
    Z = pz;
    return true;
  }
  // The point of slot s, column x of span row f (y = point_y of that row):
  // the processor's points when the span carries them (computed on the
  // batch's backend, the GPU's inside the batch), else point() above. The
  // same values either way.
  bool point(const ProfileSpan& p, int f, int s, int x, double y, double& X, double& Y, double& Z) const {
    const std::size_t i = p.slot_index(f, s, x);
    if (p.xyz == nullptr || !sheet_) return point(y, x, p.position[i], X, Y, Z);
    const float* o = p.xyz + 3 * i;
    if (o[0] != o[0]) return false;  // NaN: no point there
    X = o[0];
    Y = y + static_cast<double>(o[1]);
    Z = o[2];
    return true;
  }

  double x(int column) const { return calibration_.x(column); }
  // Scan axis of profile f: the global frame index, or the encoder count
  // when the calibration takes y from the encoder and the frame has one.
  double y(std::uint64_t index, const FrameMeta& meta) const {
    const bool encoder = calibration_.enabled && calibration_.y_from_encoder && meta.has_encoder;
    return calibration_.y(encoder ? static_cast<double>(meta.encoder) : static_cast<double>(index));
  }
  double y(const ProfileSpan& s, int f) const { return y(s.index(f), s.meta[f]); }
  // z of a detected position (not kNoPeak).
  double z(std::int32_t position) const { return calibration_.z(static_cast<double>(position_to_row(position))); }
  // The inverse of z() on the fixed-point grid: the position a received z
  // came from (exact for the values z() produces).
  std::int32_t position_from_z(double z) const;

  std::uint16_t height_code(std::int32_t position) const { return encode_height(position, bits_); }
  // z of a height code; NaN for 0 (no detection). Decoded filtered height maps.
  float z_of_code(std::uint16_t code) const;

  // Row f of a span as z values [slot][column] (NaN where a slot is empty): slots*width floats.
  void z_row(const ProfileSpan& s, int f, float* out) const;
  // Row f's primary peaks (slot 0) as height codes: width values.
  void code_row(const ProfileSpan& s, int f, std::uint16_t* out) const;

 private:
  LinearCalibration calibration_;
  std::shared_ptr<const AppliedCalibration> sheet_;
  SheetOfLightMap<double> map_{};
  int bits_ = kDefaultHeightCodeBits;
};

}  // namespace stripeline
