#pragma once
// Shared by the libFuzzer targets (tests/fuzz/, docs/fuzzing.md): what a
// target may throw for bad input (InputError and its kind) is the expected
// outcome; anything else escaping, a crash, a sanitizer report, a leak, a
// timeout or an allocation above -malloc_limit_mb is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/errors.h"

namespace stripeline::fuzz {

inline std::string text_of(const std::uint8_t* data, std::size_t size) { return std::string(reinterpret_cast<const char*>(data), size); }

// Runs f(); bad-input errors are the expected answer to bad input.
template <class F>
void expect_input_errors_only(F&& f) {
  try {
    f();
  } catch (const InputError&) {
  }
}

}  // namespace stripeline::fuzz
