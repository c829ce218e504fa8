#pragma once
// Colour recordings: how an RGB(A) pixel becomes the one grey value the
// extraction works on. A line laser is brightest in its own channel, so
// picking that channel (red for the common 635-660 nm lasers) beats luma; the
// default is luma because it is right for no laser in particular and wrong for
// none (docs/replay.md). Integer weights summing to 256, so the conversion is
// exact and the same everywhere: grey = (wr R + wg G + wb B + 128) >> 8.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace stripeline::io {

struct ChannelMix {
  std::array<std::uint32_t, 3> weights{77, 150, 29};  // R, G, B; sum 256 (ITU-R BT.601 luma)
  std::string name = "luma";
  bool operator==(const ChannelMix&) const = default;
};

// "red", "green", "blue", "luma", or three weights "R,G,B" (non-negative,
// not all zero; normalised to sum 256). ConfigError naming `key` otherwise.
ChannelMix parse_channel_mix(const std::string& text, const std::string& key = "channel");

// `pixels` pixels of `channels` interleaved native-endian samples (2: grey +
// alpha, the grey is kept; 3: RGB; 4: RGBA, alpha ignored), 8- or 16-bit, to
// one grey sample each in dst (same depth).
void mix_to_grey(const std::byte* src, int channels, std::size_t pixels, bool bits16, const ChannelMix& mix, std::byte* dst);

}  // namespace stripeline::io
