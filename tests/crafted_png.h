#pragma once
// A 16-bit grey PNG written byte by byte around a given zlib stream: the
// crafted files of the fault and memory-budget tests (a header claiming any
// size, data as small, large or corrupt as the test needs).
#include <zlib.h>

#include <cstdint>
#include <string>

namespace stripeline::test {

inline std::uint32_t png_be32(std::uint32_t v) { return __builtin_bswap32(v); }

inline void png_chunk(std::string& out, const char* type, const std::string& data) {
  const std::uint32_t len = png_be32(static_cast<std::uint32_t>(data.size()));
  out.append(reinterpret_cast<const char*>(&len), 4);
  const std::string body = std::string(type, 4) + data;
  out += body;
  const std::uint32_t crc = png_be32(static_cast<std::uint32_t>(::crc32(0, reinterpret_cast<const Bytef*>(body.data()), static_cast<uInt>(body.size()))));
  out.append(reinterpret_cast<const char*>(&crc), 4);
}

// Signature, IHDR (width x height, 16-bit grey, deflate, filter 0, no
// interlace), one IDAT holding `zlib`, IEND.
inline std::string grey16_png(std::uint32_t width, std::uint32_t height, const std::string& zlib) {
  std::string out = "\x89PNG\r\n\x1a\n";
  std::string ihdr;
  const std::uint32_t w = png_be32(width), h = png_be32(height);
  ihdr.append(reinterpret_cast<const char*>(&w), 4);
  ihdr.append(reinterpret_cast<const char*>(&h), 4);
  ihdr += std::string("\x10\x00\x00\x00\x00", 5);
  png_chunk(out, "IHDR", ihdr);
  png_chunk(out, "IDAT", zlib);
  png_chunk(out, "IEND", "");
  return out;
}

}  // namespace stripeline::test
