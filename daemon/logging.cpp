#include "daemon/logging.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/sinks/systemd_sink.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>

#include "core/errors.h"

namespace stripeline::daemon {

LogTarget parse_log_target(const std::string& text) {
  if (text == "auto") return LogTarget::Auto;
  if (text == "stderr") return LogTarget::Stderr;
  if (text == "journald") return LogTarget::Journald;
  throw InputError("--log: '" + text + "' is not known (expected auto, stderr or journald)");
}

bool stderr_is_journal() {
  const char* env = std::getenv("JOURNAL_STREAM");
  if (!env) return false;
  unsigned long long dev = 0, ino = 0;
  if (std::sscanf(env, "%llu:%llu", &dev, &ino) != 2) return false;
  struct stat st {};
  if (::fstat(2, &st) != 0) return false;
  return static_cast<unsigned long long>(st.st_dev) == dev && static_cast<unsigned long long>(st.st_ino) == ino;
}

LogTarget setup_daemon_logging(LogTarget target) {
  if (target == LogTarget::Auto) target = stderr_is_journal() ? LogTarget::Journald : LogTarget::Stderr;
  const auto level = spdlog::get_level();
  std::shared_ptr<spdlog::logger> logger;
  if (target == LogTarget::Journald) {
    // The journal adds time, pid and the unit; the priority is a field of its own.
    logger = std::make_shared<spdlog::logger>("stripeline", std::make_shared<spdlog::sinks::systemd_sink_mt>("stripeline"));
  } else {
    logger = std::make_shared<spdlog::logger>("stripeline", std::make_shared<spdlog::sinks::stderr_color_sink_mt>(spdlog::color_mode::automatic));
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e stripeline[%P]: [%l] %v");
  }
  logger->set_level(level);
  logger->flush_on(spdlog::level::trace);
  spdlog::set_default_logger(logger);
  return target;
}

}  // namespace stripeline::daemon
