#include "tools/interrupt.h"

#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <exception>

#include "io/atomic_file.h"

namespace stripeline::tools {
namespace {

std::atomic<bool> g_graceful{false};
std::atomic<int> g_stop_signal{0};
std::atomic<FrameSource*> g_source{nullptr};
std::atomic<Pipeline*> g_pipeline{nullptr};
static_assert(std::atomic<FrameSource*>::is_always_lock_free && std::atomic<int>::is_always_lock_free);

void say(const char* text) noexcept {
  const std::size_t n = std::strlen(text);
  ssize_t ignored = ::write(STDERR_FILENO, text, n);
  (void)ignored;
}

[[noreturn]] void abort_now(int sig) noexcept {
  io::remove_live_temporaries();
  // Killed by the signal, as without a handler (exit status 128 + N in a shell).
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(sig, &dfl, nullptr);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, sig);
  ::pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
  ::raise(sig);
  ::_exit(128 + sig);
}

extern "C" void on_stop_signal(int sig) {
  const int saved_errno = errno;
  int none = 0;
  if (g_graceful.load() && g_stop_signal.compare_exchange_strong(none, sig)) {
    say(sig == SIGINT ? "\nstripeline: SIGINT: stopping; finishing the files with what was acquired (SIGINT again aborts without them)\n"
                      : "\nstripeline: SIGTERM: stopping; finishing the files with what was acquired (a second signal aborts without them)\n");
    if (Pipeline* p = g_pipeline.load()) p->stop();
    if (FrameSource* s = g_source.load()) s->request_stop();
    errno = saved_errno;
    return;
  }
  say(g_graceful.load() ? (sig == SIGINT ? "\nstripeline: SIGINT again: aborting; temporaries removed, no file finished\n"
                                         : "\nstripeline: SIGTERM again: aborting; temporaries removed, no file finished\n")
                        : (sig == SIGINT ? "\nstripeline: SIGINT: aborting; temporaries removed\n"
                                         : "\nstripeline: SIGTERM: aborting; temporaries removed\n"));
  abort_now(sig);
}

void install(int sig) {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaddset(&sa.sa_mask, SIGINT);  // one handler at a time
  sigaddset(&sa.sa_mask, SIGTERM);
  sa.sa_flags = SA_RESTART;
  ::sigaction(sig, &sa, nullptr);
}

}  // namespace

void install_cleanup_on_signal() {
  install(SIGINT);
  install(SIGTERM);
  // An exception that escapes a thread ends the process without unwinding:
  // its temporaries go first.
  std::set_terminate([] {
    io::remove_live_temporaries();
    std::abort();
  });
}

GracefulStop::GracefulStop() {
  g_stop_signal.store(0);
  g_graceful.store(true);
  install_cleanup_on_signal();
}

GracefulStop::~GracefulStop() {
  detach();
  g_graceful.store(false);
}

void GracefulStop::attach(FrameSource* source, Pipeline* pipeline) {
  g_source.store(source);
  g_pipeline.store(pipeline);
  if (g_stop_signal.load() != 0) {  // it came while we were setting up
    if (pipeline) pipeline->stop();
    if (source) source->request_stop();
  }
}

void GracefulStop::detach() {
  g_source.store(nullptr);
  g_pipeline.store(nullptr);
}

int GracefulStop::signal() const { return g_stop_signal.load(); }

const char* signal_name(int sig) {
  switch (sig) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    default: return "a signal";
  }
}

}  // namespace stripeline::tools
