#include "daemon/systemd_notify.h"

#include <spdlog/spdlog.h>
#include <systemd/sd-daemon.h>

namespace stripeline::daemon {

SystemdNotifier::SystemdNotifier() {
  std::uint64_t usec = 0;
  if (sd_watchdog_enabled(0, &usec) > 0) {
    interval_ = std::chrono::microseconds(usec);
    spdlog::info("systemd: watchdog every {} ms", usec / 1000);
  }
}

void SystemdNotifier::send(const std::string& state) {
  const int rc = sd_notify(0, state.c_str());
  if (rc < 0) spdlog::warn("systemd: sd_notify failed ({})", rc);
}

void SystemdNotifier::ready(const std::string& s) {
  send("READY=1\nSTATUS=" + s);
  ready_ = true;
}
void SystemdNotifier::reloading(const std::string& s) { send("RELOADING=1\nSTATUS=" + s); }
void SystemdNotifier::stopping(const std::string& s) { send("STOPPING=1\nSTATUS=" + s); }
void SystemdNotifier::status(const std::string& s) { send("STATUS=" + s); }

void SystemdNotifier::watchdog() {
  if (!watchdog_enabled()) return;
  std::lock_guard lock(mu_);
  const auto now = std::chrono::steady_clock::now();
  if (now - last_ping_ < interval_ / 4) return;
  last_ping_ = now;
  sd_notify(0, "WATCHDOG=1");
}

}  // namespace stripeline::daemon
