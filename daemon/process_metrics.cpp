#include "daemon/process_metrics.h"

#include <sys/resource.h>
#include <unistd.h>
#include <zmq.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include <fmt/format.h>

// Set for this file only by CMakeLists.txt (what the build has).
#ifndef STRIPELINE_BUILD_CUDA
#define STRIPELINE_BUILD_CUDA ""
#endif
#ifndef STRIPELINE_BUILD_CUDA_ARCHS
#define STRIPELINE_BUILD_CUDA_ARCHS ""
#endif
#ifndef STRIPELINE_BUILD_ARAVIS
#define STRIPELINE_BUILD_ARAVIS ""
#endif

namespace stripeline::daemon {

namespace {
double boot_time_seconds() {
  std::ifstream in("/proc/stat");
  std::string key;
  double value = 0;
  while (in >> key) {
    if (key == "btime") {
      in >> value;
      return value;
    }
    std::string rest;
    std::getline(in, rest);
  }
  return 0;
}

// Label values: backslash, double quote and newline escaped.
std::string label_value(const std::string& v) {
  std::string o;
  for (char c : v) {
    if (c == '\\' || c == '"') o += '\\';
    if (c == '\n') {
      o += "\\n";
      continue;
    }
    o += c;
  }
  return o;
}
}  // namespace

ProcessSample sample_process() {
  ProcessSample s;
  const double tick = static_cast<double>(::sysconf(_SC_CLK_TCK));
  const double page = static_cast<double>(::sysconf(_SC_PAGESIZE));
  std::ifstream in("/proc/self/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // The command name (field 2) is in parentheses and may hold spaces: the fields after the last ')'.
  const auto close = stat.rfind(')');
  if (close != std::string::npos && tick > 0) {
    std::istringstream f(stat.substr(close + 2));
    std::vector<std::string> v;  // v[0] = field 3 (state)
    std::string x;
    while (f >> x) v.push_back(x);
    auto field = [&](int n) { return static_cast<std::size_t>(n - 3) < v.size() ? std::stod(v[static_cast<std::size_t>(n - 3)]) : 0.0; };
    s.cpu_seconds = (field(14) + field(15)) / tick;  // utime + stime
    s.threads = field(20);
    s.start_time_seconds = boot_time_seconds() + field(22) / tick;
    s.virtual_bytes = field(23);
    s.resident_bytes = field(24) * page;
  }
  std::error_code ec;
  std::size_t fds = 0;
  for (std::filesystem::directory_iterator it("/proc/self/fd", ec), end; !ec && it != end; it.increment(ec)) ++fds;
  s.open_fds = fds > 0 ? static_cast<double>(fds - 1) : 0;  // less the directory being listed
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) == 0) s.max_fds = rl.rlim_cur == RLIM_INFINITY ? 0 : static_cast<double>(rl.rlim_cur);
  return s;
}

std::string build_info_labels() {
  int major = 0, minor = 0, patch = 0;
  zmq_version(&major, &minor, &patch);
#ifdef STRIPELINE_HAVE_CUDA
  const std::string cuda = STRIPELINE_BUILD_CUDA[0] ? STRIPELINE_BUILD_CUDA : "yes";
#else
  const std::string cuda = "none";
#endif
  return fmt::format(R"(version="{}",cuda="{}",cuda_architectures="{}",aravis="{}",zeromq="{}.{}.{}",curve="{}")",
                     label_value(STRIPELINE_VERSION), label_value(cuda), label_value(STRIPELINE_BUILD_CUDA_ARCHS),
                     label_value(STRIPELINE_BUILD_ARAVIS[0] ? STRIPELINE_BUILD_ARAVIS : "none"), major, minor, patch,
                     zmq_has("curve") ? "yes" : "no");
}

ProcessMetrics::ProcessMetrics(Registry& m) {
  m.gauge("stripeline_build_info", "What this build of stripeline has (value 1).", build_info_labels()).set(1);
  resident_ = &m.gauge("process_resident_memory_bytes", "Resident memory size in bytes.");
  virtual_ = &m.gauge("process_virtual_memory_bytes", "Virtual memory size in bytes.");
  open_fds_ = &m.gauge("process_open_fds", "Number of open file descriptors.");
  max_fds_ = &m.gauge("process_max_fds", "Maximum number of open file descriptors (the soft limit).");
  threads_ = &m.gauge("process_threads", "Number of threads of the process.");
  cpu_ = &m.counter("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.");
  start_ = &m.gauge("process_start_time_seconds", "Start time of the process since the Unix epoch in seconds.");
  update();
}

void ProcessMetrics::update() {
  const ProcessSample s = sample_process();
  resident_->set(s.resident_bytes);
  virtual_->set(s.virtual_bytes);
  open_fds_->set(s.open_fds);
  max_fds_->set(s.max_fds);
  threads_->set(s.threads);
  cpu_->add(s.cpu_seconds - cpu_->value());  // a counter: only the increase
  start_->set(s.start_time_seconds);
}

}  // namespace stripeline::daemon
