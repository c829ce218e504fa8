// What a build without Aravis answers for GenTL: the consumer needs Aravis'
// GenICam engine (port_node_map.h), so it says how to get it. Compiled only
// when Aravis is not found (CMakeLists.txt, the GenTL block).
#include <fmt/format.h>

#include "acquisition/gentl/gentl_camera.h"
#include "core/errors.h"

namespace stripeline {

namespace {
const char* kNoGenApi =
    "this stripeline was built without Aravis, whose GenICam engine the GenTL consumer uses (install libaravis-dev, e.g. with "
    "scripts/setup-debian.sh, and build again)";
}

void GenTLConfig::validate() const {}
bool gentl_support_built() { return false; }
std::vector<GenTLDeviceInfo> list_gentl_devices(const std::string&, std::vector<std::string>*) { throw ConfigError(kNoGenApi); }
std::unique_ptr<GenTLCamera> open_gentl_camera(const CameraConfig&, const GenTLConfig&, int) {
  throw ConfigError(std::string("camera.transport = \"gentl\": ") + kNoGenApi);
}

}  // namespace stripeline
