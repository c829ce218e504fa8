#include "io/png_fast.h"

#include <fcntl.h>
#include <unistd.h>


#include <cstdlib>
#include <cstring>
#include <memory>

#include "io/inflate.h"
#include "io/reader_common.h"

namespace stripeline::io::detail {
namespace {

std::uint32_t be32(const unsigned char* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | std::uint32_t{p[3]};
}

struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

bool png_inflate_whole(const std::filesystem::path& path, std::size_t filtered_bytes, std::vector<std::byte>& filtered) {
  if (filtered_bytes > kPngFastLimit) return false;
  const Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0) return false;
  const off_t size = ::lseek(f.fd, 0, SEEK_END);
  if (size < 8 || static_cast<std::uint64_t>(size) > kPngFastLimit) return false;
  std::vector<unsigned char> file(static_cast<std::size_t>(size));
  if (pread_full(f.fd, file.data(), file.size(), 0) != file.size()) return false;
  // Gather the IDAT payloads (consecutive chunks) in place, at the front.
  std::size_t pos = 8, idat = 0;
  bool seen_idat = false, ended = false;
  while (pos + 12 <= file.size()) {
    const std::uint32_t length = be32(&file[pos]);
    if (length > file.size() - pos - 12) return false;
    const unsigned char* type = &file[pos + 4];
    if (std::memcmp(type, "IDAT", 4) == 0) {
      std::memmove(&file[idat], &file[pos + 8], length);
      idat += length;
      seen_idat = true;
    } else if (std::memcmp(type, "IEND", 4) == 0) {
      ended = true;
      break;
    }
    pos += 12 + static_cast<std::size_t>(length);
  }
  if (!seen_idat || !ended) return false;
  filtered.resize(filtered_bytes);
  Inflater inflater;
  return inflater.zlib(reinterpret_cast<const std::byte*>(file.data()), idat, filtered.data(), filtered_bytes);
}

bool png_unfilter(const std::byte* filtered, std::byte* dst, std::byte* previous, std::size_t row_bytes, std::size_t bpp,
                  std::int64_t rows) {
  const auto* in = reinterpret_cast<const unsigned char*>(filtered);
  auto* out = reinterpret_cast<unsigned char*>(dst);
  auto* prev = reinterpret_cast<unsigned char*>(previous);
  for (std::int64_t y = 0; y < rows; ++y, in += row_bytes + 1, out += row_bytes) {
    const unsigned char* s = in + 1;
    const unsigned char* up = y == 0 ? prev : out - row_bytes;
    switch (in[0]) {
      case 0:
        std::memcpy(out, s, row_bytes);
        break;
      case 1:  // Sub
        for (std::size_t x = 0; x < bpp; ++x) out[x] = s[x];
        for (std::size_t x = bpp; x < row_bytes; ++x) out[x] = static_cast<unsigned char>(s[x] + out[x - bpp]);
        break;
      case 2:  // Up
        for (std::size_t x = 0; x < row_bytes; ++x) out[x] = static_cast<unsigned char>(s[x] + up[x]);
        break;
      case 3:  // Average
        for (std::size_t x = 0; x < bpp; ++x) out[x] = static_cast<unsigned char>(s[x] + (up[x] >> 1));
        for (std::size_t x = bpp; x < row_bytes; ++x)
          out[x] = static_cast<unsigned char>(s[x] + ((out[x - bpp] + up[x]) >> 1));
        break;
      case 4:  // Paeth
        for (std::size_t x = 0; x < bpp; ++x) out[x] = static_cast<unsigned char>(s[x] + up[x]);
        for (std::size_t x = bpp; x < row_bytes; ++x) {
          const int a = out[x - bpp], b = up[x], c = up[x - bpp];
          const int pa = std::abs(b - c), pb = std::abs(a - c), pc = std::abs(a + b - 2 * c);
          out[x] = static_cast<unsigned char>(s[x] + ((pa <= pb && pa <= pc) ? a : (pb <= pc ? b : c)));
        }
        break;
      default:
        return false;
    }
  }
  if (rows > 0) std::memcpy(prev, out - row_bytes, row_bytes);
  return true;
}

}  // namespace stripeline::io::detail
