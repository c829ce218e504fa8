#pragma once
// Everything a backend implements, as one table per backend: the CPU one
// (stages/cpu/) and the CUDA one (stages/cuda/) fill it, backend_factory()
// picks one. The make_* functions of stages.h, chain.h and
// heightmap_filters.h all go through it, so adding a stage is one entry here.
#include <memory>
#include <vector>

#include "stages/backend.h"
#include "stages/chain.h"
#include "stages/heightmap_filters.h"
#include "stages/stages.h"

namespace stripeline {

struct BackendFactory {
  std::unique_ptr<PixelStage> (*blur)(const BatchLayout&, const kernels::GaussianTaps&);
  std::unique_ptr<PixelStage> (*threshold)(const BatchLayout&, std::uint32_t);
  std::unique_ptr<ExtractStage> (*extract)(const BatchLayout&, const kernels::ColumnParams&);  // params.slots set
  std::unique_ptr<BatchProcessor> (*processor)(const BatchLayout&, const ChainConfig&);       // validates the chain
  std::unique_ptr<HeightMapFilter> (*heightmap_filter)(int width, int height, const std::vector<FilterStep>& steps);  // fused steps
};

// Backend::Cpu or Backend::Cuda (resolved). CUDA in a build without it: ConfigError.
const BackendFactory& backend_factory(Backend backend);

namespace cpu {
const BackendFactory& factory();
}
namespace cuda {
const BackendFactory& factory();  // only in builds with CUDA
}

}  // namespace stripeline
