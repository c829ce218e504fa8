#pragma once
// Reads back the float32 TIFFs stripeline writes (io/float_tiff_writer.h: a
// range map of Z mm, one plane; io/image_writer.h write_float_planes_tiff: the
// organised X/Y/Z export, planes separate) for `stripeline join` and tests.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace stripeline::io {

struct FloatPlanes {
  int width = 0;
  std::int64_t height = 0;
  std::vector<std::vector<float>> planes;  // [plane][row * width + column]
  std::string description;                 // the ImageDescription ("" when none)
};

// A float32 TIFF of 1..16 samples per pixel (one sample, or planes separate),
// one page, in strips, any compression libtiff decodes. InputError naming the
// file when it is none of these or is corrupt; its claimed size is checked
// against the file's bytes before anything is allocated for it.
FloatPlanes read_float_tiff(const std::filesystem::path& path);

}  // namespace stripeline::io
