// The one mapping from a profile to points and height codes (core/profile_mapping.h),
// and the owner/view split of profiles (core/profile.h).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/errors.h"
#include "core/profile.h"
#include "core/profile_mapping.h"

using namespace stripeline;

namespace {
ProfileBatch sample_profiles() {
  ProfileBatch p(5, 4, 2, &allocate_host);
  p.poison();
  p.frames = 4;
  p.first_index = 100;
  for (int f = 0; f < 4; ++f) {
    p.meta[f].frame_id = 500 + f;
    p.meta[f].encoder = 40 * f;
    p.meta[f].has_encoder = f != 2;
    for (int x = 0; x < 5; ++x) {
      p.count[f * 5 + x] = static_cast<std::uint8_t>((x + f) % 4);  // 0..3 peaks, slots 2: one overflows
      for (int s = 0; s < 2; ++s) {
        const auto i = p.slot_index(f, s, x);
        p.position[i] = 256 * (3 + f + x) + 37 * s - 128;
        p.intensity[i] = static_cast<std::uint16_t>(100 + i);
        p.stripe_width[i] = static_cast<std::uint16_t>(i % 5);
      }
    }
  }
  return p;
}
}  // namespace

TEST(ProfileMapping, PixelsWithoutCalibrationAndTheInverseIsExact) {
  const ProfileMapping m(LinearCalibration{}, 6);
  EXPECT_STREQ(m.unit(), "px");
  EXPECT_DOUBLE_EQ(m.x(17), 17.0);
  for (std::int32_t p : {0, 1, 255, 256, 13 * 256 + 77, 4095 * 256 + 255, -128}) {
    EXPECT_DOUBLE_EQ(m.z(p), p / 256.0);
    EXPECT_EQ(m.position_from_z(static_cast<float>(m.z(p))), p) << "z -> position must be exact";
  }
}

TEST(ProfileMapping, LinearCalibrationRoundTripsThroughFloatZ) {
  LinearCalibration c;
  c.enabled = true;
  c.x_scale = 0.05, c.x_offset = -10;
  c.y_scale = 0.1, c.y_offset = 3;
  c.z_scale = 0.02, c.z_offset = 1.5;
  const ProfileMapping m(c, 6);
  EXPECT_STREQ(m.unit(), "mm");
  EXPECT_DOUBLE_EQ(m.x(200), 0.0);
  // What the wire carries is float z: the position comes back exactly.
  for (std::int32_t p = 0; p < 52 * 256; p += 97) EXPECT_EQ(m.position_from_z(static_cast<float>(m.z(p))), p) << p;
}

TEST(ProfileMapping, YComesFromTheFrameIndexOrTheEncoder) {
  const ProfileBatch p = sample_profiles();
  const ProfileSpan s = p.span();
  LinearCalibration c;
  EXPECT_DOUBLE_EQ(ProfileMapping(c, 6).y(s, 1), 101.0);
  c.enabled = true;
  c.y_from_encoder = true;
  c.y_scale = 0.5;
  const ProfileMapping m(c, 6);
  EXPECT_DOUBLE_EQ(m.y(s, 1), 20.0) << "encoder 40 x 0.5";
  EXPECT_DOUBLE_EQ(m.y(s, 2), 51.0) << "no encoder on that frame: its index, 102 x 0.5";
}

TEST(ProfileMapping, RowsOfCodesAndZMatchTheScalarFunctions) {
  const ProfileBatch p = sample_profiles();
  const ProfileSpan s = p.span();
  const ProfileMapping m(LinearCalibration{}, 6);
  std::vector<std::uint16_t> codes(5);
  std::vector<float> z(10);
  for (int f = 0; f < 4; ++f) {
    m.code_row(s, f, codes.data());
    m.z_row(s, f, z.data());
    for (int x = 0; x < 5; ++x) {
      const int n = s.peaks(f, x);
      EXPECT_EQ(codes[x], n ? encode_height(p.position[p.slot_index(f, 0, x)], 6) : 0);
      for (int slot = 0; slot < 2; ++slot) {
        const float v = z[slot * 5 + x];
        if (slot < n)
          EXPECT_FLOAT_EQ(v, p.position[p.slot_index(f, slot, x)] / 256.0f);
        else
          EXPECT_TRUE(std::isnan(v)) << "empty slot " << slot << " of column " << x << " frame " << f;
      }
    }
  }
  EXPECT_TRUE(std::isnan(m.z_of_code(0)));
  EXPECT_FLOAT_EQ(m.z_of_code(encode_height(5 * 256, 6)), 5.0f);
}

TEST(ProfileMapping, HeightCodeRulesAreCheckedInOnePlace) {
  EXPECT_THROW(ProfileMapping(LinearCalibration{}, 9), ConfigError);
  EXPECT_THROW(ProfileMapping(LinearCalibration{}, -1), ConfigError);
  EXPECT_NO_THROW(validate_height_code(6, 1023));
  EXPECT_THROW(validate_height_code(6, 1024), ConfigError);
  EXPECT_NO_THROW(validate_height_code(0, 4096));
}

TEST(ProfileSpan, IsAViewOfTheOwnerAndSubspansShareItsMemory) {
  const ProfileBatch p = sample_profiles();
  const ProfileSpan s = p.span();
  EXPECT_EQ(s.position, p.position);
  EXPECT_EQ(s.meta, p.meta.data());
  EXPECT_EQ(s.frames, 4);
  const ProfileSpan t = s.subspan(1, 2);
  EXPECT_EQ(t.frames, 2);
  EXPECT_EQ(t.first_index, 101u);
  EXPECT_EQ(t.meta[0].frame_id, 501u);
  for (int f = 0; f < 2; ++f)
    for (int x = 0; x < 5; ++x) {
      EXPECT_EQ(t.peaks(f, x), s.peaks(f + 1, x));
      EXPECT_EQ(t.primary(f, x), s.primary(f + 1, x));
      for (int slot = 0; slot < 2; ++slot) EXPECT_EQ(&t.position[t.slot_index(f, slot, x)], &p.position[p.slot_index(f + 1, slot, x)]);
    }
  EXPECT_EQ(s.primary(0, 0), kNoPeak) << "column with no peak";
}

TEST(ProfileLayout, OwnerAndDeviceUseOneLayout) {
  const ProfileLayout l = ProfileLayout::make(2048, 300, 1);
  const ProfileBatch p(2048, 300, 1, &allocate_host);
  EXPECT_EQ(reinterpret_cast<std::byte*>(p.intensity) - reinterpret_cast<std::byte*>(p.position), static_cast<std::ptrdiff_t>(l.intensity_offset));
  EXPECT_EQ(reinterpret_cast<std::byte*>(p.count) - reinterpret_cast<std::byte*>(p.position), static_cast<std::ptrdiff_t>(l.count_offset));
  EXPECT_EQ(p.storage().size(), l.bytes);
  EXPECT_EQ(l.intensity_offset % ProfileLayout::kAlign, 0u);
  EXPECT_EQ(l.width_offset % ProfileLayout::kAlign, 0u);
  EXPECT_EQ(l.count_offset % ProfileLayout::kAlign, 0u);
  EXPECT_GE(l.intensity_offset, l.slot_values(300) * 4);
}
