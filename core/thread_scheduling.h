#pragma once
// How a latency-critical thread is scheduled (the merge's thread, the fan-out
// proxy's, and ZeroMQ's I/O threads beside them): the real-time FIFO policy
// at a priority, and/or a set of CPUs. On a host whose cores the heads'
// extraction keeps busy, a time-shared thread that a message wakes waits for
// a core behind them; a SCHED_FIFO thread preempts them at once
// (docs/scale-out.md, "Latency under load").
#include <string>
#include <vector>

namespace stripeline {

struct ThreadScheduling {
  int fifo_priority = 0;  // 1..99: SCHED_FIFO at this priority; 0: the default time-sharing policy
  std::vector<int> cpus;  // the CPUs the thread may run on; empty: any

  bool is_default() const { return fifo_priority == 0 && cpus.empty(); }
  // ConfigError naming `key` for a priority outside 0..99 or a CPU this host
  // does not have.
  void validate(const std::string& key) const;
  // Whether this process may apply it: probed on a short-lived thread (the
  // caller's own scheduling is untouched). ConfigError, one line naming `key`
  // and what grants the right (CAP_SYS_NICE, or an RLIMIT_RTPRIO such as
  // systemd's LimitRTPRIO=), when it may not.
  void check_permitted(const std::string& key) const;
  // "default", "fifo 20", "fifo 20, cpus 2,3", "cpus 2,3".
  std::string describe() const;
};

// What the kernel's real-time throttling does to a thread that spins at
// SCHED_FIFO (the live path's lane threads): one line saying how long of
// each period it is stopped and how to turn that off, or "" when `s` is
// not FIFO, the throttling is off (kernel.sched_rt_runtime_us = -1) or
// cannot be read. Read from `proc_sys_kernel` (tests point elsewhere).
// Measured (session 20, docs/cuda.md): 50 ms a second, p99 15.7-43.6 ms.
std::string fifo_spin_throttling(const ThreadScheduling& s, const std::string& proc_sys_kernel = "/proc/sys/kernel");

// Applies `s` to the calling thread; RuntimeFailure naming `what` if the
// kernel refuses (check_permitted first gives the user's error instead).
void apply_to_current_thread(const ThreadScheduling& s, const std::string& what);

// "2,3" or "0-3,6" (the form taskset and systemd's CPUAffinity= take) into CPU
// numbers; ConfigError naming `key` otherwise.
std::vector<int> parse_cpu_list(const std::string& text, const std::string& key);
// "2,3": the CPUs as parse_cpu_list reads them back ("" = none).
std::string cpu_list_text(const std::vector<int>& cpus);

}  // namespace stripeline
