// Shared pieces of the streaming readers. See reader_common.h.
#include "io/reader_common.h"

#include <unistd.h>

#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <nlohmann/json.hpp>

#include "core/metadata.h"

#include <algorithm>
#include <mutex>
#include <vector>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <system_error>
#include <utility>

namespace stripeline::io::detail {

namespace fs = std::filesystem;

std::uintmax_t check_input_file(const fs::path& path) {
  std::error_code ec;
  const auto st = fs::status(path, ec);
  if (!fs::exists(st)) input_error(path, "file not found (expected an existing image file)");
  if (fs::is_directory(st)) input_error(path, "is a directory (expected an image file)");
  if (!fs::is_regular_file(st)) input_error(path, "not a regular file (expected an image file)");
  const std::uintmax_t size = fs::file_size(path, ec);
  if (ec) input_error(path, "cannot read the file size: " + ec.message());
  if (size == 0) input_error(path, "file is empty (0 bytes; expected an image)");
  return size;
}

void check_dimensions(const fs::path& path, std::int64_t width, std::int64_t height) {
  if (width <= 0 || width > kMaxWidth) {
    input_error(path, "image width " + std::to_string(width) + " is out of range (expected 1.." +
                          std::to_string(kMaxWidth) + ")");
  }
  if (height <= 0) input_error(path, "image height " + std::to_string(height) + " is out of range (expected >= 1)");
}

namespace {
std::string size_text(long double bytes) {
  char buf[64];
  if (bytes >= 1e9L) std::snprintf(buf, sizeof buf, "%.1Lf GB", bytes / 1e9L);
  else if (bytes >= 1e6L) std::snprintf(buf, sizeof buf, "%.1Lf MB", bytes / 1e6L);
  else std::snprintf(buf, sizeof buf, "%.0Lf bytes", bytes);
  return buf;
}
}  // namespace

void check_claimed_size(const fs::path& path, std::int64_t width, std::int64_t height, long double decoded_bytes,
                        long double min_encoded_bytes, std::uintmax_t file_bytes, const std::string& codec) {
  if (min_encoded_bytes <= static_cast<long double>(file_bytes)) return;
  input_error(path, "claims " + std::to_string(width) + "x" + std::to_string(height) + " pixels (" + size_text(decoded_bytes) +
                        " decoded) but the file is " + std::to_string(file_bytes) + " bytes (" + codec + ": at least " +
                        size_text(min_encoded_bytes) + " needed; expected a complete image)");
}

double tiff_max_expansion(unsigned compression) {
  switch (compression) {
    case 1: return 64.0;      // none: 1:1, but a file cut short is read up to its cut (the row is named there); below 1/64 it is refused
    case 32773: return 64.0;  // PackBits: 2 bytes for a run of 128
    case 8:                   // Deflate (Adobe)
    case 32946: return 1032.0;  // Deflate: 2 bits for 258 bytes
    case 5: return 4096.0;    // LZW: a 9..12-bit code for at most 4096 bytes
    default: return 65536.0;
  }
}

void swap16(std::byte* data, std::size_t count) {
  // memcpy in and out: no alignment assumed; compilers vectorise the loop.
  for (std::size_t i = 0; i < count; ++i) {
    std::uint16_t v;
    std::memcpy(&v, data + 2 * i, 2);
    v = static_cast<std::uint16_t>((v >> 8) | (v << 8));
    std::memcpy(data + 2 * i, &v, 2);
  }
}

int recorded_frame_height(const std::string& description, int width) {
  if (description.empty() || description.front() != '{') return 0;
  const nlohmann::json j = nlohmann::json::parse(description, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return 0;
  const auto valid = [](const nlohmann::json& v) {
    return v.is_number_integer() && v.get<std::int64_t>() >= 1 && v.get<std::int64_t>() <= kMaxFrameHeight;
  };
  // A recording's metadata document (core/metadata.h; older recordings nest it, find_document reads both).
  if (const metadata::Json d = metadata::find_document(description); d.is_object() && d["stripeline"] == "recording") {
    if (const auto fh = d.find("frame_height"); fh != d.end() && valid(nlohmann::json(*fh))) return fh->get<int>();
  }
  // tifffile's shaped description of a stack: {"shape": [frames, rows, width]}.
  if (const auto shape = j.find("shape"); shape != j.end() && shape->is_array() && shape->size() >= 3) {
    const auto& dims = *shape;
    const auto& w = dims[dims.size() - 1];
    const auto& h = dims[dims.size() - 2];
    if (w.is_number_integer() && w.get<std::int64_t>() == width && valid(h)) return h.get<int>();
  }
  return 0;
}

SignificantBits recorded_significant_bits(const std::string& description) {
  if (description.empty() || description.front() != '{') return {};
  // A recording's metadata document (core/metadata.h; find_document also reads the older nested form).
  const metadata::Json d = metadata::find_document(description);
  if (!d.is_object() || d["stripeline"] != "recording") return {};
  const auto b = d.find("significant_bits");
  if (b == d.end() || !b->is_number_integer() || b->get<std::int64_t>() < 8 || b->get<std::int64_t>() > 15) return {};
  return {b->get<int>(), BitsOrigin::Recording};
}

SignificantBits significant_bits_of_max(PixelFormat format, double max_value, BitsOrigin origin) {
  if (format != PixelFormat::Mono16 || !(max_value >= 1.0) || max_value >= 65535.0) return {};
  return {bits_for_max_value(static_cast<std::uint32_t>(max_value)), origin};
}

std::size_t pread_full(int fd, void* dst, std::size_t bytes, std::uint64_t offset) {
  auto* out = static_cast<char*>(dst);
  std::size_t done = 0;
  while (done < bytes) {
    const ssize_t n = ::pread(fd, out + done, bytes - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return done;
    }
    if (n == 0) {
      errno = 0;
      return done;
    }
    done += static_cast<std::size_t>(n);
  }
  return done;
}

std::size_t read_chunk_bytes(std::size_t total_bytes) {
  constexpr std::size_t kMin = std::size_t{1} << 20, kMax = std::size_t{8} << 20;
  const std::size_t pieces = 4 * static_cast<std::size_t>(std::max(1, tbb::this_task_arena::max_concurrency()));
  return std::clamp(total_bytes / pieces, kMin, kMax);
}

std::size_t pread_parallel(int fd, std::byte* dst, std::size_t bytes, std::uint64_t offset) {
  // Below a couple of pieces one read is as fast: the copy out of the page
  // cache is the cost, and a thread hand-off costs more than it saves.
  const std::size_t kChunk = read_chunk_bytes(bytes);
  if (bytes < 2 * kChunk) return pread_full(fd, dst, bytes, offset);
  const std::size_t chunks = (bytes + kChunk - 1) / kChunk;
  std::mutex mutex;  // taken only on a short read
  std::size_t first_short = chunks, short_at = bytes;
  tbb::this_task_arena::isolate([&] {
    tbb::parallel_for(std::size_t{0}, chunks, [&](std::size_t c) {
      const std::size_t begin = c * kChunk;
      const std::size_t n = std::min(kChunk, bytes - begin);
      const std::size_t got = pread_full(fd, dst + begin, n, offset + begin);
      if (got != n) {
        // Keep the earliest short chunk: the bytes before it are all valid.
        const std::lock_guard lock(mutex);
        if (c < first_short) {
          first_short = c;
          short_at = begin + got;
        }
      }
    });
  });
  return short_at;
}

void ReaderBase::do_skip(std::int64_t rows) {
  // Bands of about 4 MiB, decoded and dropped.
  const std::size_t rb = row_bytes();
  const std::int64_t band = std::max<std::int64_t>(1, static_cast<std::int64_t>((std::size_t{4} << 20) / std::max<std::size_t>(rb, 1)));
  std::vector<std::byte> scratch(static_cast<std::size_t>(std::min(rows, band)) * rb);
  const std::int64_t start = next_row_;
  for (std::int64_t done = 0; done < rows;) {
    const std::int64_t n = std::min(band, rows - done);
    next_row_ = start + done;  // do_read reads from next_row_
    do_read(scratch.data(), n);
    done += n;
  }
  next_row_ = start;
}

}  // namespace stripeline::io::detail
