#pragma once
// Whole-buffer zlib inflate for the readers' fast paths (TIFF Deflate strips,
// whole PNG streams), by libdeflate. One Inflater per thread.
//
// Why not ISA-L's igzip, 25 % faster on these strips in isolation: its
// hand-written AVX routines return without vzeroupper, and the CPU backend's
// SSE blur that runs next on the same thread then ran 3-4x slower: replay
// from a Deflate TIFF used twice the CPU (bench/README.md).
#include <cstddef>
#include <memory>

namespace stripeline::io {

class Inflater {
 public:
  Inflater();
  ~Inflater();
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;
  // True only when `in` is one complete zlib stream (Adler-32 verified) that
  // inflates to exactly `out_bytes` bytes.
  bool zlib(const std::byte* in, std::size_t in_bytes, std::byte* out, std::size_t out_bytes);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// "libdeflate 1.14": the library behind Inflater.
const char* inflate_library();

}  // namespace stripeline::io
