#pragma once
// --realtime-priority N, --cpus LIST: the same flags on merge and proxy, over
// a ThreadScheduling (core/thread_scheduling.h; docs/scale-out.md, "Latency
// under load").
#include <string>

#include <CLI/CLI.hpp>

#include "core/thread_scheduling.h"

namespace stripeline::tools {

struct SchedulingFlags {
  int realtime_priority = 0;
  std::string cpus;

  void add(CLI::App* sub, const char* what) {
    sub->add_option("--realtime-priority", realtime_priority,
                    std::string("SCHED_FIFO priority 1..99 of the ") + what +
                        "'s thread and its I/O threads, so busy cores do not delay it (needs CAP_SYS_NICE or an RLIMIT_RTPRIO; 0 = off)")
        ->capture_default_str();
    sub->add_option("--cpus", cpus, std::string("The CPUs the ") + what + "'s thread and its I/O threads may run on, e.g. 1 or 2-3 (default: any)");
  }
  // ConfigError naming the flag for a priority or CPU list out of range, or
  // a scheduling this process has no right to.
  ThreadScheduling scheduling() const {
    ThreadScheduling s{realtime_priority, parse_cpu_list(cpus, "--cpus")};
    if (realtime_priority != 0) ThreadScheduling{realtime_priority, {}}.validate("--realtime-priority");
    s.validate("--cpus");
    s.check_permitted("--realtime-priority");
    return s;
  }
};

}  // namespace stripeline::tools
