#include "daemon/signals.h"

#include <pthread.h>
#include <signal.h>

#include <cerrno>
#include <ctime>

#include "core/errors.h"

namespace stripeline::daemon {

namespace {
sigset_t daemon_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  return set;
}
}  // namespace

void block_daemon_signals() {
  sigset_t set = daemon_signals();
  if (pthread_sigmask(SIG_BLOCK, &set, nullptr) != 0) throw RuntimeFailure("pthread_sigmask failed");
  // A broken pipe is an error code on the socket, not a reason to die.
  signal(SIGPIPE, SIG_IGN);
}

SignalThread::SignalThread(std::function<void(int)> on_signal) : on_signal_(std::move(on_signal)) {
  thread_ = std::thread([this] {
    const sigset_t set = daemon_signals();
    const timespec timeout{0, 200'000'000};
    while (!stop_.load()) {
      siginfo_t info;
      const int sig = sigtimedwait(&set, &info, &timeout);
      if (sig > 0) on_signal_(sig);
    }
  });
}

SignalThread::~SignalThread() {
  stop_ = true;
  thread_.join();
}

}  // namespace stripeline::daemon
