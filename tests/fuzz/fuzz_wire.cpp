// libFuzzer target: the wire-format decoder and the subscriber's rebuilding
// of a series, fed a sequence of messages as `stripeline subscribe` handles
// them (tools/cmd_subscribe.cpp): wire::decode, the seq tracker, then
// series-start and profile rows into a SeriesRebuilder writing an in-memory
// height map. Framing of the input: tests/fuzz/wire_framing.h. Expected
// outcomes: messages decoded or refused with wire::MalformedMessage (or, for
// the sinks, an InputError as subscribe's exit 2); never a crash.
#include <cstdlib>

#include "core/fixed_point.h"
#include "pipeline/file_sinks.h"
#include "streaming/subscriber.h"
#include "streaming/wire_format.h"
#include "fuzz_common.h"
#include "wire_framing.h"

namespace {
using namespace stripeline;

// Checks every span it is fed: arrays as long as the shape says (and the
// carried points, [frame][slot][column][3], when the rebuilder hands them on).
class CheckingSink final : public ProfileSink {
 public:
  void begin(const ScanInfo& info) override { width_ = info.layout.width; }
  void consume(const ProfileSpan& p) override {
    if (p.width != width_ || p.frames < 0) std::abort();
    std::uint64_t sum = 0;
    for (int f = 0; f < p.frames; ++f)
      for (int x = 0; x < p.width; ++x) sum += p.peaks(f, x) ? static_cast<std::uint64_t>(p.primary(f, x)) : 0;
    sink_ += sum;
    if (p.xyz != nullptr)
      for (std::size_t i = 0; i < 3 * static_cast<std::size_t>(p.frames) * p.slots * p.width; ++i) sink_ += p.xyz[i] == p.xyz[i] ? 1 : 0;
  }
  void finish() override {}
  std::uint64_t sink_ = 0;
  int width_ = 0;
};
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 1 << 20) return 0;
  const auto messages = fuzz::split_messages(std::string_view(reinterpret_cast<const char*>(data), size));
  HeightMapSink heightmap("", "", kDefaultHeightCodeBits);
  CheckingSink check;
  SeriesRebuilder rebuild({&heightmap, &check});
  wire::GapTracker gaps;
  std::string series;
  fuzz::expect_input_errors_only([&] {
    for (const auto& parts : messages) {
      try {
        wire::Decoded d = wire::decode(parts);
        if (series.empty()) series = d.series;
        if (d.series != series) continue;
        gaps.observe(d.series, d.seq);
        if (gaps.backwards()) continue;
        if (d.topic == wire::Topic::SeriesStart) {
          rebuild.start(d);
          (void)wire::calibration_from_json(d.header.value("calibration", nlohmann::json::object()));
          (void)d.header.value("width", 0), (void)d.header.value("source", "?"), (void)d.header.value("point_unit", std::string());
        } else if (d.topic == wire::Topic::Profile) {
          rebuild.rows(*d.rows, ProfileMapping(d.calibration, d.header.value("height_bits", kDefaultHeightCodeBits)), d.seq);
        } else if (d.topic == wire::Topic::SeriesEnd) {  // what subscribe prints of it
          const auto dropped = d.header.value("rows_dropped", nlohmann::json::object());
          (void)d.header.value("profile_rows", std::uint64_t{0}), (void)d.header.value("reason", "?");
          (void)dropped.value("hwm", 0ull), (void)dropped.value("no_subscriber", 0ull), (void)dropped.value("error", 0ull);
        }
      } catch (const wire::MalformedMessage& e) {
        const std::string what = e.what();
        for (char c : what)  // one printable line
          if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7F) std::abort();
      }
    }
    rebuild.finish();
  });
  return 0;
}
