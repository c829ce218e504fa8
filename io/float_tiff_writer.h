#pragma once
// A float32 single-channel TIFF (rectified range maps: Z in mm, NaN = no
// data), written through an AtomicFile like every image (io/image_writer.h).
#include <cstdint>
#include <filesystem>
#include <string>

namespace stripeline::io {

// pixels: height rows of width floats. Deflate with the floating-point
// predictor. InputError for an unwritable path, RuntimeFailure on I/O errors.
void write_float_tiff(const std::filesystem::path& path, const float* pixels, int width, std::int64_t height, const std::string& description);

}  // namespace stripeline::io
