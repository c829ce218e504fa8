// `stripeline proxy FRONTEND`: fan a stripeline stream out to many consumers
// (or other hosts) through ZeroMQ's own proxy (streaming/proxy.h), with its
// counters every --stats-interval seconds and at the end. Runs until SIGINT
// or SIGTERM (or --duration), then prints the final counters and exits 0.
#include <csignal>
#include <cstdio>
#include <ctime>
#include <memory>

#include "streaming/proxy.h"
#include "tools/commands.h"
#include "tools/scheduling_flags.h"

namespace stripeline::tools {

namespace {

struct Flags {
  ProxyConfig proxy;
  SchedulingFlags scheduling;
  bool curve = false;
  double stats_interval = 10.0, duration = 0.0;
};

void print_counters(const char* when, const StreamProxy& p, const ProxyCounters& c) {
  std::printf(
      "proxy %s: from the publisher %llu messages (%.1f MB), to consumers %llu messages (%.1f MB); subscriptions upstream %llu; "
      "consumers refused %llu\n",
      when, static_cast<unsigned long long>(c.frontend_messages_in), c.frontend_bytes_in / 1e6,
      static_cast<unsigned long long>(c.backend_messages_out), c.backend_bytes_out / 1e6,
      static_cast<unsigned long long>(c.frontend_messages_out), static_cast<unsigned long long>(p.denied()));
  std::fflush(stdout);
}

// Waits for SIGINT/SIGTERM (blocked in every thread, taken here), printing
// the counters every interval; --duration ends it too.
int serve(const Flags& f) {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);  // before ZeroMQ starts its threads
  StreamProxy proxy(f.proxy);
  std::printf("proxy: %s -> %s\n", f.proxy.frontend.c_str(), proxy.backend_endpoint().c_str());
  std::fflush(stdout);
  const double tick = f.stats_interval > 0 ? f.stats_interval : 1.0;
  double waited = 0.0;
  for (;;) {
    double step = tick;
    if (f.duration > 0 && f.duration - waited < step) step = f.duration - waited;
    const timespec wait{static_cast<time_t>(step), static_cast<long>((step - static_cast<double>(static_cast<time_t>(step))) * 1e9)};
    const int sig = sigtimedwait(&stop_signals, nullptr, &wait);
    waited += step;
    if (sig > 0 || (f.duration > 0 && waited >= f.duration)) break;
    if (f.stats_interval > 0) print_counters("running", proxy, proxy.statistics());
  }
  const ProxyCounters end = proxy.statistics();
  proxy.stop();
  print_counters("stopped", proxy, end);
  return 0;
}

}  // namespace

Subcommand add_proxy(CLI::App& app) {
  auto* sub = app.add_subcommand("proxy", "Fan a stripeline stream out to many consumers (ZeroMQ XSUB -> XPUB proxy with counters)");
  auto f = std::make_shared<Flags>();
  sub->add_option("frontend", f->proxy.frontend, "The publisher's endpoint (or another proxy's), e.g. tcp://127.0.0.1:5556")->required();
  sub->add_option("--backend", f->proxy.backend, "Where consumers connect (bound; tcp://host:* picks a port)")->capture_default_str();
  sub->add_option("--hwm", f->proxy.hwm, "Messages queued per peer on each side")->capture_default_str();
  sub->add_option("--server-key", f->proxy.server_key, "Upstream CURVE: the publisher's public key file");
  sub->add_option("--client-key", f->proxy.client_key, "Upstream CURVE: this proxy's secret key file (mode 0600; its public key allowed there)");
  sub->add_flag("--curve", f->curve, "Downstream CURVE: consumers must be listed with --allow");
  sub->add_option("--server-secret-key", f->proxy.backend_curve.server_secret_key, "Downstream CURVE: this proxy's secret key file (mode 0600)");
  sub->add_option("--allow", f->proxy.backend_curve.client_keys, "Downstream CURVE: an allowed consumer's public key file (repeat)");
  sub->add_option("--stats-interval", f->stats_interval, "Seconds between counter lines (0 = only at the end)")->capture_default_str();
  sub->add_option("--duration", f->duration, "Stop after this many seconds (0 = at SIGINT/SIGTERM)")->capture_default_str();
  f->scheduling.add(sub, "proxy");
  return {sub, [f] {
            f->proxy.backend_curve.enabled = f->curve;
            f->proxy.scheduling = f->scheduling.scheduling();
            return serve(*f);
          }};
}

}  // namespace stripeline::tools
