#pragma once
// The configured source, opened: the synthetic scanner, a recording, or a
// live camera (opened and configured here: DeviceUnavailable or ConfigError).
#include <memory>

#include "acquisition/source.h"
#include "app/config.h"

namespace stripeline {

std::unique_ptr<FrameSource> make_source(const Config& config);

}  // namespace stripeline
