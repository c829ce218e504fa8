#pragma once
// What /metrics says about the process and the build: the standard
// Prometheus process metrics (process_resident_memory_bytes,
// process_virtual_memory_bytes, process_open_fds, process_max_fds,
// process_threads, process_cpu_seconds_total, process_start_time_seconds,
// read from /proc/self) and stripeline_build_info{version,cuda,...} 1.
//
// Thread-safety: update() is called from the registry's collector (the HTTP
// thread, the main thread), serialised by DaemonMetrics' lock.
#include <string>

#include "daemon/metrics.h"

namespace stripeline::daemon {

struct ProcessSample {
  double resident_bytes = 0, virtual_bytes = 0, cpu_seconds = 0, start_time_seconds = 0;
  double open_fds = 0, max_fds = 0, threads = 0;
};

// Reads /proc/self/stat, /proc/stat (boot time) and /proc/self/fd. A field
// that cannot be read stays 0.
ProcessSample sample_process();

// The label text of stripeline_build_info (version, cuda, cuda_architectures, aravis, zeromq, curve).
std::string build_info_labels();

class ProcessMetrics {
 public:
  explicit ProcessMetrics(Registry& registry);
  void update();

 private:
  Gauge *resident_, *virtual_, *open_fds_, *max_fds_, *threads_, *start_;
  Counter* cpu_;
};

}  // namespace stripeline::daemon
