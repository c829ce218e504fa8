#pragma once
// Typed exceptions. Two families matter to a user:
//  - InputError: something the user (or a file, or a config) got wrong. The
//    CLI prints its one line and exits 2.
//  - RuntimeFailure (and CudaError): the machine failed us. Exit 1.
#include <stdexcept>
#include <string>

namespace stripeline {

// Bad input: a file, a value or a flag that is not what was expected.
// what() is one line meant for the user: "<where>: <problem> (expected ...)".
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A configuration value out of range or inconsistent. Also bad input.
class ConfigError : public InputError {
 public:
  using InputError::InputError;
};

// A runtime failure that is not the user's fault: I/O error while writing,
// out of memory, a device that stopped answering.
class RuntimeFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A device (camera) that cannot be reached now: not found, not answering,
// or taken by another controller. Unlike a ConfigError it may go away by
// itself, so the daemon retries (docs/cameras.md).
class DeviceUnavailable : public RuntimeFailure {
 public:
  using RuntimeFailure::RuntimeFailure;
};

// A CUDA API call or kernel launch failed. Carries the call, file and line.
class CudaError : public RuntimeFailure {
 public:
  CudaError(const std::string& call, int code, const std::string& message, const char* file, int line)
      : RuntimeFailure(call + " failed: " + message + " (cuda error " + std::to_string(code) + ") at " + file + ":" +
                       std::to_string(line)),
        code_(code) {}
  int code() const noexcept { return code_; }

 private:
  int code_;
};

}  // namespace stripeline
