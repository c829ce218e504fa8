#pragma once
// systemd service notifications (Type=notify) through libsystemd's
// sd_notify: READY=1, RELOADING=1, STOPPING=1, STATUS=..., WATCHDOG=1.
// Without NOTIFY_SOCKET (not started by systemd) every call is a no-op.
#include <atomic>
#include <chrono>
#include <mutex>
#include <string>

namespace stripeline::daemon {

class SystemdNotifier {
 public:
  SystemdNotifier();
  void ready(const std::string& status);
  void reloading(const std::string& status);
  void stopping(const std::string& status);
  void status(const std::string& status);
  // WATCHDOG=1, at most every watchdog interval / 4.
  void watchdog();
  bool watchdog_enabled() const { return interval_.count() > 0; }
  std::chrono::microseconds watchdog_interval() const { return interval_; }
  // READY=1 has been sent (watchdog pings only make sense after it).
  bool is_ready() const { return ready_.load(); }

 private:
  void send(const std::string& state);
  std::chrono::microseconds interval_{0};
  std::mutex mu_;
  std::chrono::steady_clock::time_point last_ping_{};
  std::atomic<bool> ready_{false};
};

}  // namespace stripeline::daemon
