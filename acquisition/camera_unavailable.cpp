// What a build without Aravis answers when asked for a camera: a
// ConfigError that says how to get camera support. Compiled instead of
// acquisition/aravis/ when libaravis-dev is not found.
#include <string>

#include "acquisition/camera_source.h"
#include "acquisition/simulated_camera.h"
#include "core/errors.h"

namespace stripeline {

namespace {
const char* kNoAravis =
    "this stripeline was built without Aravis, so it has no camera support (install libaravis-dev, e.g. with "
    "scripts/setup-debian.sh, and build again)";
}
bool camera_support_built() { return false; }
std::vector<CameraInfo> list_cameras() { throw ConfigError(kNoAravis); }
std::unique_ptr<CameraSource> open_camera(const CameraConfig&, int) { throw ConfigError(std::string("source.kind = \"camera\": ") + kNoAravis); }

struct SimulatedCamera::Impl {};
SimulatedCamera::SimulatedCamera(SimulatedCameraConfig) { throw ConfigError(kNoAravis); }
SimulatedCamera::~SimulatedCamera() = default;
std::string SimulatedCamera::id() const { return {}; }
std::uint64_t SimulatedCamera::frames_rendered() const { return 0; }

}  // namespace stripeline
