#include "io/inflate.h"

#include <cstdint>
#include <limits>
#include <new>

#if STRIPELINE_HAVE_ISAL
#include <isa-l/igzip_lib.h>
#else
#include <libdeflate.h>
#endif

namespace stripeline::io {

#if STRIPELINE_HAVE_ISAL

struct Inflater::State {
  inflate_state isal;
};

Inflater::Inflater() : state_(std::make_unique<State>()) {}
Inflater::~Inflater() = default;

bool Inflater::zlib(const std::byte* in, std::size_t in_bytes, std::byte* out, std::size_t out_bytes) {
  constexpr std::size_t kMax = std::numeric_limits<std::uint32_t>::max();
  if (in_bytes > kMax || out_bytes > kMax) return false;
  inflate_state& s = state_->isal;
  isal_inflate_init(&s);
  s.crc_flag = ISAL_ZLIB;  // zlib header and Adler-32 checked
  s.next_in = reinterpret_cast<std::uint8_t*>(const_cast<std::byte*>(in));
  s.avail_in = static_cast<std::uint32_t>(in_bytes);
  s.next_out = reinterpret_cast<std::uint8_t*>(out);
  s.avail_out = static_cast<std::uint32_t>(out_bytes);
  return isal_inflate_stateless(&s) == ISAL_DECOMP_OK && s.avail_out == 0;
}

const char* inflate_library() { return "isa-l (igzip)"; }

#else

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

#endif

}  // namespace stripeline::io
