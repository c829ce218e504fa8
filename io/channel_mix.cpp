// See channel_mix.h.
#include "io/channel_mix.h"

#include <cmath>
#include <cstring>
#include <sstream>
#include <vector>

#include "core/errors.h"

namespace stripeline::io {

ChannelMix parse_channel_mix(const std::string& text, const std::string& key) {
  if (text == "red") return {{256, 0, 0}, "red"};
  if (text == "green") return {{0, 256, 0}, "green"};
  if (text == "blue") return {{0, 0, 256}, "blue"};
  if (text == "luma") return {};
  const auto bad = [&] {
    throw ConfigError(key + " = '" + text + "' is not understood (expected red, green, blue, luma or three weights \"R,G,B\", e.g. \"0.8,0.2,0\")");
  };
  std::vector<double> w;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, ',');) {
    char* end = nullptr;
    const double v = std::strtod(part.c_str(), &end);
    if (part.empty() || end == part.c_str() || *end != '\0' || !std::isfinite(v) || v < 0.0) bad();
    w.push_back(v);
  }
  if (w.size() != 3 || w[0] + w[1] + w[2] <= 0.0) bad();
  const double sum = w[0] + w[1] + w[2];
  ChannelMix m;
  m.name = text;
  std::uint32_t total = 0;
  int largest = 0;
  for (int c = 0; c < 3; ++c) {
    m.weights[c] = static_cast<std::uint32_t>(std::lround(256.0 * w[c] / sum));
    total += m.weights[c];
    if (w[c] > w[largest]) largest = c;
  }
  m.weights[largest] = m.weights[largest] + 256 - total;  // exactly 256 after rounding
  return m;
}

namespace {

// Samples are loaded and stored with memcpy: a caller's row buffer need not be
// aligned for 16-bit access.
template <class T>
T load(const std::byte* p, std::size_t i) {
  T v;
  std::memcpy(&v, p + i * sizeof(T), sizeof(T));
  return v;
}

template <class T>
void mix(const std::byte* src, int channels, std::size_t pixels, const ChannelMix& m, std::byte* dst) {
  const auto n = static_cast<std::size_t>(channels);
  const std::uint32_t wr = m.weights[0], wg = m.weights[1], wb = m.weights[2];
  for (std::size_t i = 0; i < pixels; ++i) {
    T grey;
    if (channels == 2) {
      grey = load<T>(src, i * n);  // grey + alpha: the grey
    } else {
      const std::uint32_t r = load<T>(src, i * n), g = load<T>(src, i * n + 1), b = load<T>(src, i * n + 2);
      grey = static_cast<T>((wr * r + wg * g + wb * b + 128u) >> 8);
    }
    std::memcpy(dst + i * sizeof(T), &grey, sizeof(T));
  }
}

}  // namespace

void mix_to_grey(const std::byte* src, int channels, std::size_t pixels, bool bits16, const ChannelMix& m, std::byte* dst) {
  if (channels < 2 || channels > 4) throw RuntimeFailure("mix_to_grey: " + std::to_string(channels) + " channels (expected 2, 3 or 4)");
  if (bits16)
    mix<std::uint16_t>(src, channels, pixels, m, dst);
  else
    mix<std::uint8_t>(src, channels, pixels, m, dst);
}

}  // namespace stripeline::io
