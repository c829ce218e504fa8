#include "io/atomic_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sched.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>
#include <system_error>

#include "core/errors.h"

namespace stripeline::io {
namespace {

std::atomic<unsigned long> g_temp_counter{0};

// The live temporaries, for remove_live_temporaries() (async-signal-safe: a
// fixed table, atomics that are lock-free, unlink(2)). A slot's state: 0 free,
// 1 being filled, 2 live, 3 being removed by remove_live_temporaries().
constexpr int kTempSlots = 256;
struct TempSlot {
  std::atomic<int> state{0};
  char path[4096];
};
TempSlot g_temp_slots[kTempSlots];
static_assert(std::atomic<int>::is_always_lock_free);

int register_temporary(const std::filesystem::path& p) noexcept {
  const std::string& s = p.native();
  if (s.size() >= sizeof(TempSlot::path)) return -1;  // not listed: the next run's sweep removes it if it survives
  for (int i = 0; i < kTempSlots; ++i) {
    int expected = 0;
    if (g_temp_slots[i].state.compare_exchange_strong(expected, 1, std::memory_order_acquire)) {
      std::memcpy(g_temp_slots[i].path, s.c_str(), s.size() + 1);
      g_temp_slots[i].state.store(2, std::memory_order_release);
      return i;
    }
  }
  return -1;
}

void unregister_temporary(int slot) noexcept {
  if (slot < 0) return;
  while (true) {  // a remover on another thread holds it for one unlink at most
    int expected = 2;
    if (g_temp_slots[slot].state.compare_exchange_weak(expected, 0, std::memory_order_acq_rel)) return;
    if (expected != 3) return;
    ::sched_yield();
  }
}

std::string quoted(const std::filesystem::path& p) { return "'" + p.string() + "'"; }

std::string errno_text(int err) { return std::strerror(err); }

// fsync the directory so that the rename itself survives a power cut. Best
// effort: some file systems refuse fsync on a directory.
void sync_directory(const std::filesystem::path& dir) noexcept {
  const int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    (void)::fsync(fd);
    (void)::close(fd);
  }
}

}  // namespace

AtomicFile::AtomicFile(std::filesystem::path target) : target_(std::move(target)) {
  if (target_.empty() || !target_.has_filename()) {
    throw InputError(target_.string() + ": not a file name (expected a path to a file, not a directory)");
  }
  std::error_code ec;
  if (std::filesystem::is_directory(target_, ec)) {
    throw InputError(target_.string() + ": is a directory (expected a path to a file)");
  }
  // A stream or device target (FIFO, character device, /dev/stdout) is written
  // in place: renaming a temporary over it would replace the special file.
  const auto target_status = std::filesystem::status(target_, ec);
  if (target_ == "-" || (std::filesystem::exists(target_status) && !std::filesystem::is_regular_file(target_status))) {
    const bool to_stdout = target_ == "-";
    if (!to_stdout && !std::filesystem::is_fifo(target_status) && !std::filesystem::is_character_file(target_status))
      throw InputError(target_.string() + ": exists and is not a regular file, a FIFO or a character device (expected a file path)");
    const int fd = to_stdout ? ::dup(STDOUT_FILENO) : ::open(target_.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
      const int err = errno;
      throw InputError(target_.string() + ": cannot open for writing: " + errno_text(err));
    }
    file_ = ::fdopen(fd, "wb");
    if (file_ == nullptr) {
      const int err = errno;
      ::close(fd);
      throw RuntimeFailure(target_.string() + ": cannot open a stream: " + errno_text(err));
    }
    in_place_ = true;
    return;
  }
  const std::filesystem::path dir = target_.parent_path();
  if (!dir.empty()) {
    const auto st = std::filesystem::status(dir, ec);
    if (!std::filesystem::exists(st)) {
      throw InputError(target_.string() + ": cannot write: directory " + quoted(dir) +
                       " does not exist (expected an existing, writable directory)");
    }
    if (!std::filesystem::is_directory(st)) {
      throw InputError(target_.string() + ": cannot write: " + quoted(dir) +
                       " is not a directory (expected an existing, writable directory)");
    }
  }

  // Keep the temporary name within NAME_MAX (255) even for a long target name.
  std::string base = target_.filename().string();
  if (base.size() > 200) base.resize(200);
  const std::string name = "." + base + ".tmp-" + std::to_string(::getpid()) + "-" +
                           std::to_string(g_temp_counter.fetch_add(1, std::memory_order_relaxed));
  temp_ = dir.empty() ? std::filesystem::path(name) : dir / name;

  // O_EXCL: never clobber somebody else's temporary. 0666 & umask like fopen.
  // Read-write, because libtiff may read back what it wrote.
  const int fd = ::open(temp_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) {
    const int err = errno;
    temp_.clear();
    const bool users_fault = err == EACCES || err == EPERM || err == EROFS || err == ENOENT || err == ENOTDIR ||
                             err == ENAMETOOLONG || err == EISDIR || err == ELOOP;
    if (!users_fault) {
      throw RuntimeFailure(target_.string() + ": cannot create a file in " + quoted(dir.empty() ? "." : dir) + ": " +
                           errno_text(err));
    }
    throw InputError(target_.string() + ": cannot create a file in " + quoted(dir.empty() ? "." : dir) + ": " +
                     errno_text(err) + " (expected an existing, writable directory)");
  }
  slot_ = register_temporary(temp_);
  file_ = ::fdopen(fd, "w+b");
  if (file_ == nullptr) {
    const int err = errno;
    ::close(fd);
    std::error_code ignored;
    std::filesystem::remove(temp_, ignored);
    unregister_temporary(slot_);
    slot_ = -1;
    temp_.clear();
    throw RuntimeFailure(target_.string() + ": cannot open a stream on the temporary file: " + errno_text(err));
  }
}

AtomicFile::~AtomicFile() {
  // Never throws: an uncommitted file is simply discarded.
  if (file_ != nullptr) {
    std::fclose(file_);
    file_ = nullptr;
  }
  if (!committed_ && !temp_.empty()) {
    std::error_code ignored;
    std::filesystem::remove(temp_, ignored);
  }
  unregister_temporary(slot_);
}

void AtomicFile::require_seekable(const char* what) const {
  if (in_place_)
    throw InputError(target_.string() + ": is a stream or device; " + what +
                     " must seek back into its output (expected a regular file path)");
}

void AtomicFile::write(const void* data, std::size_t bytes) {
  if (file_ == nullptr) throw std::logic_error("AtomicFile::write on a closed file " + quoted(target_));
  if (bytes == 0) return;
  errno = 0;
  const std::size_t written = std::fwrite(data, 1, bytes, file_);
  if (written != bytes) {
    const int err = errno;
    throw RuntimeFailure(target_.string() + ": write failed after " + std::to_string(written) + " of " +
                         std::to_string(bytes) + " bytes: " + (err != 0 ? errno_text(err) : "short write"));
  }
}

void AtomicFile::seek(long offset) {
  if (file_ == nullptr) throw std::logic_error("AtomicFile::seek on a closed file " + quoted(target_));
  if (std::fseek(file_, offset, SEEK_SET) != 0) {
    const int err = errno;
    throw RuntimeFailure(target_.string() + ": seek to byte " + std::to_string(offset) + " failed: " + errno_text(err));
  }
}

void AtomicFile::commit() {
  if (committed_) throw std::logic_error("AtomicFile::commit called twice for " + quoted(target_));
  if (file_ == nullptr) throw std::logic_error("AtomicFile::commit on a closed file " + quoted(target_));

  auto fail = [&](const std::string& what, int err) {
    // The destructor removes the temporary; close it now so nothing is pending.
    if (file_ != nullptr) {
      std::fclose(file_);
      file_ = nullptr;
    }
    throw RuntimeFailure(target_.string() + ": " + what + ": " + errno_text(err));
  };

  if (std::fflush(file_) != 0 || std::ferror(file_) != 0) fail("write failed", errno != 0 ? errno : EIO);
  if (in_place_) {  // a stream or device: nothing to rename
    std::FILE* f = file_;
    file_ = nullptr;
    committed_ = true;
    if (std::fclose(f) != 0) fail("close failed", errno);
    return;
  }
  if (::fsync(::fileno(file_)) != 0 && errno != EINVAL && errno != EROFS) fail("fsync failed", errno);
  std::FILE* f = file_;
  file_ = nullptr;
  if (std::fclose(f) != 0) fail("close failed", errno);
  if (std::rename(temp_.c_str(), target_.c_str()) != 0) {
    const int err = errno;
    throw RuntimeFailure(target_.string() + ": cannot rename " + quoted(temp_) + " into place: " + errno_text(err));
  }
  committed_ = true;
  unregister_temporary(slot_);
  slot_ = -1;
  sync_directory(target_.parent_path());
}

void write_file_atomically(const std::filesystem::path& path, std::string_view text) {
  AtomicFile f(path);
  f.write(text.data(), text.size());
  f.commit();
}

int remove_live_temporaries() noexcept {
  int removed = 0;
  for (TempSlot& slot : g_temp_slots) {
    int expected = 2;
    if (!slot.state.compare_exchange_strong(expected, 3, std::memory_order_acq_rel)) continue;
    if (::unlink(slot.path) == 0) ++removed;
    slot.state.store(2, std::memory_order_release);
  }
  return removed;
}

int live_temporaries() noexcept {
  int n = 0;
  for (const TempSlot& slot : g_temp_slots) n += slot.state.load(std::memory_order_acquire) >= 2 ? 1 : 0;
  return n;
}

bool parse_temporary_name(std::string_view file_name, std::string* name, long* pid) {
  // ".<name>.tmp-<pid>-<n>"
  if (file_name.size() < 2 || file_name[0] != '.') return false;
  const std::size_t tmp = file_name.rfind(".tmp-");
  if (tmp == std::string_view::npos || tmp < 2) return false;
  const std::string_view rest = file_name.substr(tmp + 5);
  const std::size_t dash = rest.find('-');
  if (dash == std::string_view::npos || dash == 0 || dash + 1 >= rest.size() || dash > 10) return false;
  auto digits = [](std::string_view d) {
    for (char c : d)
      if (c < '0' || c > '9') return false;
    return !d.empty();
  };
  if (!digits(rest.substr(0, dash)) || !digits(rest.substr(dash + 1))) return false;
  if (name) *name = std::string(file_name.substr(1, tmp - 1));
  if (pid) *pid = std::stol(std::string(rest.substr(0, dash)));
  return true;
}

std::vector<std::filesystem::path> sweep_stale_temporaries(const std::filesystem::path& dir, const std::vector<std::string>& names) {
  std::vector<std::filesystem::path> removed;
  try {
    std::error_code ec;
    const std::filesystem::path where = dir.empty() ? std::filesystem::path(".") : dir;
    for (std::filesystem::directory_iterator it(where, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string file = it->path().filename().string();
      std::string name;
      long pid = 0;
      if (!parse_temporary_name(file, &name, &pid)) continue;
      bool ours = false;
      for (const std::string& n : names) {
        if (n.empty()) continue;
        const std::string base = std::filesystem::path(n).filename().string();
        ours = ours || name == base ||
               (name.size() > base.size() + 1 && name.compare(name.size() - base.size(), base.size(), base) == 0 &&
                name[name.size() - base.size() - 1] == '-');
      }
      if (!ours || pid <= 0 || pid == static_cast<long>(::getpid())) continue;
      if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // alive (or not ours to ask): leave it
      std::error_code sec;
      if (!std::filesystem::is_regular_file(std::filesystem::symlink_status(it->path(), sec))) continue;
      if (std::filesystem::remove(it->path(), sec)) removed.push_back(it->path());
    }
  } catch (...) {  // best effort: a sweep never fails a run
  }
  return removed;
}

}  // namespace stripeline::io
