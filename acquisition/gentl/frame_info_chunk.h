#pragma once
// Per-frame information in a multi-frame GenTL buffer. A grabber that
// concatenates N frames into one buffer reports one frame id and one
// timestamp for the whole buffer; stripeline's simulated producer adds this
// chunk (chunk mode on) so that every frame keeps its own id, timestamp,
// encoder count and status. The consumer reads it when a buffer carries it
// (DSGetBufferChunkData) and derives the per-frame values otherwise
// (docs/cameras.md, "GenTL").
//
// Layout: N records of 32 bytes, little-endian, one per frame of the buffer
// in order, right after the N frames' pixels.
#include <cstdint>

namespace stripeline::gentl {

inline constexpr std::uint64_t kFrameInfoChunkId = 0x53544C46;  // "STLF"

struct FrameInfoRecord {
  std::uint64_t frame_id;
  std::int64_t timestamp_ns;  // device clock
  std::int64_t encoder;       // valid when flags & kFrameHasEncoder
  std::uint32_t status;       // kFrameComplete, or kFrameFailed (a corrupt frame: its pixels are not to be used)
  std::uint32_t flags;
};
static_assert(sizeof(FrameInfoRecord) == 32, "the chunk's record layout is fixed");

inline constexpr std::uint32_t kFrameComplete = 0;
inline constexpr std::uint32_t kFrameFailed = 1;
inline constexpr std::uint32_t kFrameHasEncoder = 1;

}  // namespace stripeline::gentl
