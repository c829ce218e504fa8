#pragma once
// CPU (oneTBB) implementations of the stages and of the fused chain.
#include <memory>

#include "stages/chain.h"
#include "stages/stages.h"

namespace stripeline::cpu {

std::unique_ptr<BlurStage> make_blur_stage(const BatchLayout& layout, const kernels::GaussianTaps& taps);
std::unique_ptr<ThresholdStage> make_threshold_stage(const BatchLayout& layout, std::uint32_t threshold);
std::unique_ptr<ExtractStage> make_extract_stage(const BatchLayout& layout, const kernels::ColumnParams& params);
std::unique_ptr<BatchProcessor> make_cpu_processor(const BatchLayout& layout, const ChainConfig& config);

}  // namespace stripeline::cpu
