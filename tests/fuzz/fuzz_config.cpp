// libFuzzer target: the TOML configuration parser and every section's
// validation (app/config.h, parse_config), as `stripeline run --config` reads
// a file. Expected outcomes: a Config, or an InputError/ConfigError line.
#include "app/config.h"
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 64 * 1024) return 0;  // configurations are small; keep the runs fast
  stripeline::fuzz::expect_input_errors_only([&] { (void)stripeline::parse_config(stripeline::fuzz::text_of(data, size), "fuzz.toml"); });
  return 0;
}
