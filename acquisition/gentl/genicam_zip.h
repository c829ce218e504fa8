#pragma once
// GenICam XML files are often served zipped (a ".zip" URL holding one
// ".xml"). The reader takes the first .xml entry of such an archive (stored
// or deflated); the writer makes a one-entry archive (our producer serves its
// camera XML that way, so the consumer's unzip path is tested).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace stripeline::gentl {

// The contents of the first entry whose name ends in ".xml" (case-insensitive).
// Throws std::runtime_error naming what is wrong with the archive.
std::string unzip_genicam_xml(const std::uint8_t* data, std::size_t size);

// A zip archive of one deflated entry `name` holding `contents`.
std::vector<std::uint8_t> zip_one_file(const std::string& name, const std::string& contents);

}  // namespace stripeline::gentl
