#include "app/sources.h"

#include "core/errors.h"

namespace stripeline {

std::unique_ptr<FrameSource> make_source(const Config& c) {
  switch (c.source) {
    case SourceKind::Synthetic: return std::make_unique<SyntheticScanner>(c.synthetic);
    case SourceKind::File: return std::make_unique<FileSource>(c.file);
    case SourceKind::Camera:
      if (c.camera.transport == "gentl") return open_gentl_camera(c.camera, c.gentl, c.pipeline.batch_frames);
      return open_camera(c.camera, c.pipeline.batch_frames);
  }
  throw ConfigError("source.kind: unknown");
}

}  // namespace stripeline
