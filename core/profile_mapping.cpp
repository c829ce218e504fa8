#include "core/profile_mapping.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "core/errors.h"

namespace stripeline {

void validate_height_bits(int bits) {
  if (bits < 0 || bits > 8)
    throw ConfigError("height_bits = " + std::to_string(bits) + " is out of range (expected 0..8 fractional bits of the 16-bit height code)");
}

void validate_height_code(int bits, int frame_height) {
  validate_height_bits(bits);
  if (frame_height > max_frame_height_for_code(bits))
    throw ConfigError("height_bits = " + std::to_string(bits) + " cannot encode frames of " + std::to_string(frame_height) +
                      " rows in 16 bits (expected at most " + std::to_string(max_frame_height_for_code(bits)) + " rows; lower height_bits)");
}

ProfileMapping::ProfileMapping(const LinearCalibration& calibration, int height_bits) : calibration_(calibration), bits_(height_bits) {
  validate_height_bits(height_bits);
}

ProfileMapping::ProfileMapping(const LinearCalibration& calibration, int height_bits, std::shared_ptr<const AppliedCalibration> sheet)
    : ProfileMapping(calibration, height_bits) {
  sheet_ = std::move(sheet);
  if (sheet_) map_ = sheet_->model.map<double>();
}

std::int32_t ProfileMapping::position_from_z(double z) const {
  const double row = calibration_.enabled ? (z - calibration_.z_offset) / calibration_.z_scale : z;
  // A received z may be anything: no detection for what is not a number, and
  // positions clamped to +-2^30 (rows far beyond any frame), so that the
  // height code's arithmetic cannot overflow.
  if (!std::isfinite(row)) return kNoPeak;
  constexpr double kLimit = static_cast<double>(1 << 30);
  return static_cast<std::int32_t>(std::lround(std::clamp(row * kPositionOne, -kLimit, kLimit)));
}

float ProfileMapping::z_of_code(std::uint16_t code) const {
  const float row = decode_height(code, bits_);
  return code == 0 || !calibration_.enabled ? row : static_cast<float>(calibration_.z(row));
}

void ProfileMapping::z_row(const ProfileSpan& s, int f, float* out) const {
  const float none = std::numeric_limits<float>::quiet_NaN();
  for (int slot = 0; slot < s.slots; ++slot) {
    const std::int32_t* p = s.position + s.slot_index(f, slot, 0);
    float* o = out + static_cast<std::size_t>(slot) * s.width;
    for (int x = 0; x < s.width; ++x) o[x] = slot < s.peaks(f, x) ? static_cast<float>(z(p[x])) : none;
  }
}

void ProfileMapping::code_row(const ProfileSpan& s, int f, std::uint16_t* out) const {
  for (int x = 0; x < s.width; ++x) out[x] = height_code(s.primary(f, x));
}

}  // namespace stripeline
