#pragma once
// The names of the chain's settings: the [processing] keys of a
// configuration (app/settings.cpp declares each key with these) and the
// names the chain's range errors give (stages/chain.cpp). One table, here
// beside the fields, so that a stage names a key without reaching up to the
// application that reads the file.
namespace stripeline::chain_keys {

inline constexpr const char* batch_frames = "batch_frames";  // PipelineOptions::batch_frames (the batch's frames)
inline constexpr const char* blur_size = "blur_size";
inline constexpr const char* blur_sigma = "blur_sigma";
inline constexpr const char* blur_across = "blur_across";  // ChainConfig::blur_across (false: along the columns only)
inline constexpr const char* threshold_stage = "threshold_stage";
inline constexpr const char* threshold = "threshold";
inline constexpr const char* method = "method";
inline constexpr const char* min_peak = "min_peak";
inline constexpr const char* min_width = "min_width";
inline constexpr const char* max_width = "max_width";
inline constexpr const char* window = "window";
inline constexpr const char* neighbours = "neighbours";
inline constexpr const char* selection = "selection";
inline constexpr const char* max_peaks = "max_peaks";
inline constexpr const char* max_points = "max_points";
// the adaptive method (AdaptiveConfig)
inline constexpr const char* estimator = "estimator";
inline constexpr const char* min_contrast = "min_contrast";
inline constexpr const char* contrast_level = "contrast_level";    // AdaptiveConfig::level
inline constexpr const char* centroid_level = "centroid_level";
inline constexpr const char* noise_factor = "noise_factor";
inline constexpr const char* stripe_max_width = "stripe_max_width";  // AdaptiveConfig::max_width
inline constexpr const char* steger_sigma = "steger_sigma";
inline constexpr const char* pixel_bits = "pixel_bits";
inline constexpr const char* cuda_graphs = "cuda_graphs";  // ChainConfig::cuda_graphs
inline constexpr const char* persistent_engine = "persistent_engine";  // ChainConfig::persistent_engine
// the neighbour check (NeighbourCheckConfig)
inline constexpr const char* neighbour_columns = "neighbour_columns";  // NeighbourCheckConfig::columns
inline constexpr const char* neighbour_step = "neighbour_step";        // NeighbourCheckConfig::step
// the line model (LineModelConfig)
inline constexpr const char* line_model = "line_model";                    // LineModelConfig::enabled
inline constexpr const char* line_candidates = "line_candidates";          // LineModelConfig::candidates
inline constexpr const char* line_step = "line_step";                      // LineModelConfig::step
inline constexpr const char* line_jump_cost = "line_jump_cost";            // LineModelConfig::jump_cost
inline constexpr const char* line_width_cost = "line_width_cost";          // LineModelConfig::width_cost
inline constexpr const char* line_intensity_cost = "line_intensity_cost";  // LineModelConfig::intensity_cost
inline constexpr const char* line_segment_cost = "line_segment_cost";      // LineModelConfig::segment_cost
inline constexpr const char* line_min_length = "line_min_length";          // LineModelConfig::min_length
inline constexpr const char* line_width = "line_width";                    // LineModelConfig::line_width

}  // namespace stripeline::chain_keys
