#pragma once
// Write-to-temporary-then-rename, so no reader ever sees a half-written file.
//   AtomicFile f(path);          // opens "<dir>/.<name>.tmp-<pid>-<n>"
//   f.write(...); ...            // or fwrite(..., f.handle())
//   f.commit();                  // flush, fsync, rename to path
// Destroying an uncommitted AtomicFile removes the temporary.
#include <cstddef>
#include <cstdio>
#include <filesystem>
#include <string_view>

namespace stripeline::io {

class AtomicFile {
 public:
  // Throws InputError naming the path when it cannot be created
  // (missing directory, no permission).
  explicit AtomicFile(std::filesystem::path target);
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile();

  std::FILE* handle() const { return file_; }
  const std::filesystem::path& temp_path() const { return temp_; }
  const std::filesystem::path& target() const { return target_; }
  // Throws RuntimeFailure on a short write (disk full...).
  void write(const void* data, std::size_t bytes);
  void seek(long offset);
  void commit();

 private:
  std::filesystem::path target_;
  std::filesystem::path temp_;
  std::FILE* file_ = nullptr;
  bool committed_ = false;
};

// The whole of `text` as `path`, atomically (JSON summaries, benchmark results).
void write_file_atomically(const std::filesystem::path& path, std::string_view text);

}  // namespace stripeline::io
