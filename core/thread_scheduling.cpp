#include "core/thread_scheduling.h"

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <thread>

#include "core/errors.h"

namespace stripeline {

namespace {

int host_cpus() {
  const long n = ::sysconf(_SC_NPROCESSORS_CONF);
  return n > 0 ? static_cast<int>(n) : 1;
}

// 0 on success, else the errno of the call that failed.
int apply(const ThreadScheduling& s) {
  if (!s.cpus.empty()) {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int c : s.cpus) CPU_SET(c, &set);
    if (const int rc = ::pthread_setaffinity_np(::pthread_self(), sizeof set, &set)) return rc;
  }
  if (s.fifo_priority > 0) {
    sched_param p{};
    p.sched_priority = s.fifo_priority;
    if (const int rc = ::pthread_setschedparam(::pthread_self(), SCHED_FIFO, &p)) return rc;
  }
  return 0;
}

// The integer in a /proc/sys file; none when unreadable.
std::optional<long long> read_sysctl(const std::string& path) {
  std::ifstream in(path);
  long long v = 0;
  if (!(in >> v)) return std::nullopt;
  return v;
}

}  // namespace

std::string fifo_spin_throttling(const ThreadScheduling& s, const std::string& proc_sys_kernel) {
  if (s.fifo_priority <= 0) return {};
  const std::optional<long long> runtime = read_sysctl(proc_sys_kernel + "/sched_rt_runtime_us");
  const std::optional<long long> period = read_sysctl(proc_sys_kernel + "/sched_rt_period_us");
  if (!runtime || !period || *runtime < 0 || *period <= 0 || *runtime >= *period) return {};
  return "SCHED_FIFO threads that spin are stopped " + std::to_string((*period - *runtime) / 1000) + " ms of every " + std::to_string(*period / 1000) +
         " ms by the kernel's real-time throttling (kernel.sched_rt_runtime_us = " + std::to_string(*runtime) + " of sched_rt_period_us = " +
         std::to_string(*period) + "): set it to -1 (sysctl kernel.sched_rt_runtime_us=-1) on a host whose lane CPUs run nothing else (docs/daemon.md)";
}

std::string cpu_list_text(const std::vector<int>& cpus) {
  std::string out;
  for (int c : cpus) {
    if (!out.empty()) out += ',';
    out += std::to_string(c);
  }
  return out;
}

void ThreadScheduling::validate(const std::string& key) const {
  if (fifo_priority < 0 || fifo_priority > 99)
    throw ConfigError(key + ": real-time priority " + std::to_string(fifo_priority) + " (expected 0 = off, or 1..99 for SCHED_FIFO)");
  const int n = host_cpus();
  for (int c : cpus)
    if (c < 0 || c >= n || c >= CPU_SETSIZE)
      throw ConfigError(key + ": CPU " + std::to_string(c) + " (expected 0.." + std::to_string(n - 1) + " on this host)");
}

void ThreadScheduling::check_permitted(const std::string& key) const {
  if (is_default()) return;
  int rc = 0;
  std::thread([&] { rc = apply(*this); }).join();
  if (rc == 0) return;
  if (rc == EPERM && fifo_priority > 0)
    throw ConfigError(key + ": SCHED_FIFO priority " + std::to_string(fifo_priority) +
                      " not permitted (expected CAP_SYS_NICE, or an RLIMIT_RTPRIO of at least it: LimitRTPRIO= in a systemd unit, "
                      "rtprio in limits.conf; or 0 to leave the default scheduling)");
  throw ConfigError(key + ": cannot apply " + describe() + " (" + std::strerror(rc) + ")");
}

std::string ThreadScheduling::describe() const {
  if (is_default()) return "default";
  std::string out;
  if (fifo_priority > 0) out = "fifo " + std::to_string(fifo_priority);
  if (!cpus.empty()) {
    out += out.empty() ? "cpus " : ", cpus ";
    out += cpu_list_text(cpus);
  }
  return out;
}

void apply_to_current_thread(const ThreadScheduling& s, const std::string& what) {
  if (s.is_default()) return;
  if (const int rc = apply(s)) throw RuntimeFailure(what + ": cannot apply " + s.describe() + " (" + std::strerror(rc) + ")");
}

std::vector<int> parse_cpu_list(const std::string& text, const std::string& key) {
  std::vector<int> cpus;
  const auto bad = [&] { return ConfigError(key + ": '" + text + "' (expected CPU numbers such as 2,3 or 0-3,6)"); };
  std::size_t i = 0;
  const auto number = [&] {
    if (i >= text.size() || text[i] < '0' || text[i] > '9') throw bad();
    long v = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      v = v * 10 + (text[i++] - '0');
      if (v >= CPU_SETSIZE) throw bad();
    }
    return static_cast<int>(v);
  };
  if (text.empty()) return cpus;
  while (true) {
    const int first = number();
    int last = first;
    if (i < text.size() && text[i] == '-') {
      ++i;
      last = number();
      if (last < first) throw bad();
    }
    for (int c = first; c <= last; ++c) cpus.push_back(c);
    if (i == text.size()) break;
    if (text[i++] != ',') throw bad();
  }
  return cpus;
}

}  // namespace stripeline
