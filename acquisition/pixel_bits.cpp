#include "acquisition/pixel_bits.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <string>

namespace stripeline {

int pixel_format_significant_bits(std::string_view name) {
  if (!name.starts_with("Mono")) return 0;
  name.remove_prefix(4);
  int bits = 0, digits = 0;
  while (digits < static_cast<int>(name.size()) && digits < 2 && name[digits] >= '0' && name[digits] <= '9') bits = bits * 10 + (name[digits++] - '0');
  name.remove_prefix(static_cast<std::size_t>(digits));
  if (bits != 8 && bits != 10 && bits != 12 && bits != 14 && bits != 16) return 0;
  if (name.empty()) return bits;
  if ((name == "p" || name == "Packed") && bits != 8 && bits != 16) return bits;  // packed on the wire, unpacked to 16-bit words
  return 0;
}

std::uint32_t max_pixel_value(const Batch& batch) {
  std::uint32_t top = 0;
  with_pixel_type(batch.layout.format, [&](auto t) {
    using T = decltype(t);
    const T* p = reinterpret_cast<const T*>(batch.pixels.data());
    const std::size_t n = static_cast<std::size_t>(batch.frames) * batch.layout.frame_pixels();
    T m = 0;
    for (std::size_t i = 0; i < n; ++i) m = std::max(m, p[i]);
    top = m;
  });
  return top;
}

bool pixel_bits_need_data(int configured, const FrameSource& source) {
  return configured == 0 && !source.significant_bits().known() && source.frame_layout().format == PixelFormat::Mono16;
}

SignificantBits decide_pixel_bits(int configured, const FrameSource& source, std::optional<std::uint32_t> first_max) {
  SignificantBits b;
  const PixelFormat format = source.frame_layout().format;
  if (configured != 0)
    b = {configured, BitsOrigin::Config};
  else if (const SignificantBits known = source.significant_bits(); known.known())
    b = known;
  else if (format == PixelFormat::Mono8)
    b = {8, BitsOrigin::Format};
  else if (!first_max)
    b = {16, BitsOrigin::Format};
  else
    b = {bits_for_max_value(*first_max), BitsOrigin::Inferred};
  if (b.origin == BitsOrigin::Inferred && b.bits < 16)
    spdlog::warn("pixel bits: {} inferred from the first batch's highest value {} (neither the source nor a file tag says how many of the "
                 "16 bits carry signal; --pixel-bits N or [processing] pixel_bits sets them)",
                 b.bits, *first_max);
  else
    spdlog::info("pixel bits: {} ({}{})", b.bits, to_string(b.origin),
                 b.origin == BitsOrigin::Inferred ? ", the first batch's highest value " + std::to_string(*first_max) : std::string());
  return b;
}

}  // namespace stripeline
