// libFuzzer target: sheet-of-light calibration files (calibration/calibration_file.h,
// parse_calibration) and, for what parses, the text written back
// (format_calibration), which must parse again to the same model id.
#include <cstdlib>

#include "calibration/calibration_file.h"
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 64 * 1024) return 0;
  stripeline::fuzz::expect_input_errors_only([&] {
    const stripeline::CalibrationFile c = stripeline::parse_calibration(stripeline::fuzz::text_of(data, size), "fuzz.toml");
    const stripeline::CalibrationFile again = stripeline::parse_calibration(stripeline::format_calibration(c), "fuzz-written.toml");
    if (stripeline::model_id(again.model) != stripeline::model_id(c.model)) std::abort();  // written files read back identical
  });
  return 0;
}
