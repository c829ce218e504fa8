// libFuzzer target: calibration target files (calibration/target.h, parse_target).
#include "calibration/target.h"
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 64 * 1024) return 0;
  stripeline::fuzz::expect_input_errors_only([&] {
    const stripeline::CalibrationTarget t = stripeline::parse_target(stripeline::fuzz::text_of(data, size), "fuzz.toml");
    stripeline::validate_target(t);  // what parses passes the checks a target built in code gets
  });
  return 0;
}
