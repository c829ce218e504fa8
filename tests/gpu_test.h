#pragma once
// The fixture every GPU test derives from: where no usable GPU is present
// (no device, no driver, a build without CUDA, a GPU older than the
// architectures built) the test skips, and says why. It never passes silently.
#include <gtest/gtest.h>

#include "stages/backend.h"

namespace stripeline::test {

class CudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_available()) GTEST_SKIP() << "no usable GPU: " << cuda_status();
  }
};

}  // namespace stripeline::test
