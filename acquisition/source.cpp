#include "acquisition/source.h"

#include <string>

#include "core/errors.h"

namespace stripeline {

const char* to_string(AcquisitionPath p) { return p == AcquisitionPath::Direct ? "direct" : "copy"; }

void check_fill_target(const Batch& batch, const BatchLayout& want, const char* source) {
  const BatchLayout& l = batch.layout;
  if (l.width != want.width || l.frame_height != want.frame_height || l.format != want.format)
    throw RuntimeFailure(std::string(source) + ": batch layout " + std::to_string(l.width) + "x" + std::to_string(l.frame_height) + " " +
                         to_string(l.format) + " does not match the source's " + std::to_string(want.width) + "x" +
                         std::to_string(want.frame_height) + " " + to_string(want.format));
  if (l.frames < 0 || batch.meta.size() < static_cast<std::size_t>(l.frames) || batch.pixels.size() < l.bytes())
    throw RuntimeFailure(std::string(source) + ": batch buffers are smaller than its layout");
}

}  // namespace stripeline
