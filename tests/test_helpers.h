#pragma once
// Small helpers shared by the tests: temporary directories, batches from
// literal pixel tables, running the CLI.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "core/batch.h"
#include "core/profile.h"

namespace stripeline::test {

// A text file with exactly `text` in it (configurations, jobs, calibrations of the tests).
inline void write_text(const std::filesystem::path& p, const std::string& text) { std::ofstream(p) << text; }

// A fresh directory removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = info ? std::string(info->test_suite_name()) + "_" + info->name() : "test";
    for (auto& ch : name)
      if (ch == '/') ch = '_';
    path_ = std::filesystem::temp_directory_path() / ("stripeline_" + name + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }
  // Names of everything in the directory, sorted.
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(path_)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }

 private:
  std::filesystem::path path_;
};

// A batch of `frames` frames (capacity `capacity`, default = frames) of T pixels.
template <class T>
Batch make_batch(int width, int frame_height, int frames, int capacity = 0) {
  BatchLayout l{width, frame_height, capacity > 0 ? capacity : frames, sizeof(T) == 1 ? PixelFormat::Mono8 : PixelFormat::Mono16};
  Batch b(l, &allocate_host);
  b.frames = frames;
  std::memset(b.pixels.data(), 0, b.pixels.size());
  for (int i = 0; i < frames; ++i) b.meta[i].frame_id = static_cast<std::uint64_t>(i);
  return b;
}

template <class T>
T& px(Batch& b, int frame, int x, int y) {
  return reinterpret_cast<T*>(b.frame_data(frame))[static_cast<std::size_t>(y) * b.layout.width + x];
}

// Pixels 0xA5 and impossible meta in every slot of a batch (frames = 0), so
// that an element a source or an assembler never wrote shows.
inline void poison_batch(Batch& b) {
  b.frames = 0;
  std::memset(b.pixels.data(), 0xA5, b.pixels.size());
  for (FrameMeta& m : b.meta) {
    m.frame_id = 0xDEADBEEF;
    m.timestamp_ns = -12345;
    m.encoder = -777;
    m.has_encoder = true;
    m.missing = true;
  }
}
// A poisoned batch of `capacity` frames of the given frame layout.
inline Batch make_poisoned_batch(const BatchLayout& frame_layout, int capacity) {
  BatchLayout l = frame_layout;
  l.frames = capacity;
  Batch b(l, &allocate_host);
  poison_batch(b);
  return b;
}

// The stripeline binary and the source tree: where CMake built them, unless
// the environment says otherwise (a bundle run on another machine).
inline std::string binary_path() {
  const char* env = std::getenv("STRIPELINE_BINARY");
  return env && *env ? env : STRIPELINE_BINARY;
}
inline std::string source_dir() {
  const char* env = std::getenv("STRIPELINE_SOURCE_DIR");
  return env && *env ? env : STRIPELINE_SOURCE_DIR;
}

// Runs any shell command; returns its exit code, fills `output` with stdout+stderr.
inline int run_cli_command(const std::string& command, std::string* output = nullptr) {
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return -1;
  std::string out;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
  const int status = ::pclose(pipe);
  if (output) *output = out;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Runs the stripeline binary with arguments; returns the exit code and fills
// `output` with stdout+stderr.
inline int run_cli(const std::string& args, std::string* output = nullptr) {
  return run_cli_command(binary_path() + " " + args, output);
}

}  // namespace stripeline::test
