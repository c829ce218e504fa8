#pragma once
// Signals handled on a dedicated thread (sigtimedwait), never in a handler:
// block_daemon_signals() must run before any other thread starts, so every
// thread inherits the mask and SIGTERM, SIGINT and SIGHUP are only ever
// delivered to the SignalThread.
#include <atomic>
#include <functional>
#include <thread>

namespace stripeline::daemon {

void block_daemon_signals();

class SignalThread {
 public:
  explicit SignalThread(std::function<void(int)> on_signal);
  ~SignalThread();
  SignalThread(const SignalThread&) = delete;
  SignalThread& operator=(const SignalThread&) = delete;

 private:
  std::function<void(int)> on_signal_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace stripeline::daemon
