#include "io/inflate.h"

#include <libdeflate.h>

#include <new>

namespace stripeline::io {

struct Inflater::State {
  libdeflate_decompressor* d = nullptr;
  ~State() { libdeflate_free_decompressor(d); }
};

Inflater::Inflater() : state_(std::make_unique<State>()) {
  state_->d = libdeflate_alloc_decompressor();
  if (state_->d == nullptr) throw std::bad_alloc();
}
Inflater::~Inflater() = default;

bool Inflater::zlib(const std::byte* in, std::size_t in_bytes, std::byte* out, std::size_t out_bytes) {
  std::size_t produced = 0;
  return libdeflate_zlib_decompress(state_->d, in, in_bytes, out, out_bytes, &produced) == LIBDEFLATE_SUCCESS &&
         produced == out_bytes;
}

const char* inflate_library() { return "libdeflate " LIBDEFLATE_VERSION_STRING; }

}  // namespace stripeline::io
