#pragma once
// Checks shared by the camera tests of both paths (tests/camera: Aravis,
// tests/gentl: GenTL).
#include <gtest/gtest.h>

#include "acquisition/camera_source.h"

namespace stripeline::test {

// The region and pixel format the camera reports are the ones asked.
inline void expect_region_as_asked(const CameraSettings& s, const CameraConfig& asked) {
  EXPECT_EQ(s.width, asked.width);
  EXPECT_EQ(s.height, asked.height);
  EXPECT_EQ(s.offset_x, asked.offset_x);
  EXPECT_EQ(s.offset_y, asked.offset_y);
  EXPECT_EQ(s.pixel_format, asked.pixel_format);
}

}  // namespace stripeline::test
