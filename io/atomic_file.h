#pragma once
// Write-to-temporary-then-rename, so no reader ever sees a half-written file.
//   AtomicFile f(path);          // opens "<dir>/.<name>.tmp-<pid>-<n>"
//   f.write(...); ...            // or fwrite(..., f.handle())
//   f.commit();                  // flush, fsync, rename to path
// Destroying an uncommitted AtomicFile removes the temporary.
//
// A target that exists and is not a regular file (a FIFO, a character device,
// /dev/stdout, or a symbolic link to one of these), and "-" (standard output),
// is written in place instead: never renamed over. Writers that must seek
// back (PLY, TIFF) refuse such a target up front (in_place()).
#include <cstddef>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

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
  // Written straight into an existing non-regular target (no temporary, no rename).
  bool in_place() const { return in_place_; }
  // Throws InputError when the target is written in place: for writers that
  // seek back into their output; `what` says which.
  void require_seekable(const char* what) const;
  // Throws RuntimeFailure on a short write (disk full...).
  void write(const void* data, std::size_t bytes);
  void seek(long offset);
  void commit();

 private:
  std::filesystem::path target_;
  std::filesystem::path temp_;
  std::FILE* file_ = nullptr;
  bool committed_ = false;
  bool in_place_ = false;
  int slot_ = -1;  // in the table of live temporaries (remove_live_temporaries)
};

// The whole of `text` as `path`, atomically (JSON summaries, benchmark results).
void write_file_atomically(const std::filesystem::path& path, std::string_view text);

// Every temporary of this process that is still open is listed in a fixed
// table (up to 256 at once) so that a signal handler, or a path that ends
// the process without unwinding (std::_Exit), can remove them:
// remove_live_temporaries() only calls unlink(2) and is async-signal-safe.
// Returns how many it removed. Committed files are never touched (their
// temporary name no longer exists).
int remove_live_temporaries() noexcept;
// Temporaries open now (tests).
int live_temporaries() noexcept;

// The temporary-name pattern: ".<name>.tmp-<pid>-<n>". True when `file_name`
// matches it; then `name` and `pid` are what it holds.
bool parse_temporary_name(std::string_view file_name, std::string* name, long* pid);

// Leftovers of a run that was killed (SIGKILL, a power cut) before it could
// remove its temporaries: in `dir`, every regular file whose name matches the
// temporary pattern exactly, whose <name> is one of `names` or ends with
// "-" + one of them (the daemon's per-scan prefixes), and whose <pid> is not
// a live process, is removed. Returns the paths removed. Never throws;
// files it cannot remove are skipped.
std::vector<std::filesystem::path> sweep_stale_temporaries(const std::filesystem::path& dir,
                                                           const std::vector<std::string>& names);

}  // namespace stripeline::io
