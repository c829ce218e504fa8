#include "app/sources.h"

#include "core/errors.h"

namespace stripeline {

std::unique_ptr<FrameSource> make_source(const Config& c) {
  switch (c.source) {
    case SourceKind::Synthetic: return std::make_unique<SyntheticScanner>(c.synthetic);
    case SourceKind::File: return std::make_unique<FileSource>(c.file);
    case SourceKind::Camera: {
      // A camera's batch (its default gap-fill limit) before the budget decides: the configured one, else the default.
      const int batch = c.pipeline.batch_frames > 0 ? c.pipeline.batch_frames : kDefaultBatchFrames;
      if (c.camera.transport == "gentl") return open_gentl_camera(c.camera, c.gentl, batch);
      return open_camera(c.camera, batch);
    }
  }
  throw ConfigError("source.kind: unknown");
}

}  // namespace stripeline
