#pragma once
// Whole-buffer zlib inflate for the readers' fast paths (TIFF Deflate strips,
// whole PNG streams): ISA-L's igzip where the build found it (libisal-dev:
// about 25% faster than libdeflate on noisy stripe frames, bench/README.md),
// else libdeflate. One Inflater per thread.
#include <cstddef>
#include <memory>

namespace stripeline::io {

class Inflater {
 public:
  Inflater();
  ~Inflater();
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;
  // True only when `in` is one complete zlib stream (checksum verified) that
  // inflates to exactly `out_bytes` bytes.
  bool zlib(const std::byte* in, std::size_t in_bytes, std::byte* out, std::size_t out_bytes);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// "isa-l 2.30" or "libdeflate 1.14": the library behind Inflater.
const char* inflate_library();

}  // namespace stripeline::io
