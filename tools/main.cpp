// stripeline: real-time laser profilometry. See README.md.
// Exit codes: 0 ok; 2 bad usage or bad input (one line on stderr naming the
// file and the problem); 1 runtime failure.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <zmq.h>

#include <cstdio>
#include <string>
#include <exception>
#include <vector>

#include "core/errors.h"
#include "tools/commands.h"
#include "tools/interrupt.h"

namespace {

// `stripeline --version`: the version and what this build can do.
std::string version_text() {
  std::string t = "stripeline " STRIPELINE_VERSION "\n  backends: CPU (oneTBB), " STRIPELINE_BUILD_FEATURES;
#if STRIPELINE_HAVE_ARAVIS
  t += "\n  cameras: GigE Vision / USB3 Vision through Aravis " + std::string(ARAVIS_VERSION_TEXT) + ", GenTL producers (.cti)";
#else
  t += "\n  cameras: none (built without Aravis: recordings and the simulated scanner only)";
#endif
  int major = 0, minor = 0, patch = 0;
  zmq_version(&major, &minor, &patch);
  t += "\n  stream: ZeroMQ " + std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch) +
       (zmq_has("curve") ? ", CURVE encryption available" : ", no CURVE (libzmq built without it)");
  t += "\n  daemon: systemd notify and watchdog, journald logs, HTTP /healthz, /livez, /readyz and /metrics";
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace stripeline;
  CLI::App app{"stripeline " STRIPELINE_VERSION ": stripe frames in, calibrated height rows, height maps and PLY point clouds out"};
  app.require_subcommand(1, 1);
  app.set_version_flag("--version", version_text());
  bool verbose = false;
  app.add_flag("-v,--verbose", verbose, "Log what happens (debug level)");

  const std::vector<tools::Subcommand> commands = {tools::add_run(app), tools::add_replay(app), tools::add_synth(app), tools::add_bench(app),
                                                    tools::add_subscribe(app), tools::add_daemon(app), tools::add_filter(app),
                                                    tools::add_bench_filters(app), tools::add_cameras(app),
                                                    tools::add_simulate_camera(app), tools::add_calibrate(app),
                                                    tools::add_bench_replay(app), tools::add_describe(app), tools::add_settings(app), tools::add_proxy(app),
                                                    tools::add_join(app), tools::add_merge(app), tools::add_align(app),
                                                    tools::add_render(app), tools::add_report(app), tools::add_measure(app)};

  // Global flags (-v) are accepted after the subcommand too.
  // (not for a command that reads its own argument list, such as filter)
  for (const auto& cmd : commands)
    if (!cmd.app->get_allow_extras() && !cmd.app->get_prefix_command()) cmd.app->fallthrough();

  if (argc > 1 && argv[1][0] != '-') {
    bool known = false;
    for (const auto& cmd : commands) known = known || cmd.app->get_name() == argv[1];
    if (!known) {
      std::fprintf(stderr, "stripeline: unknown command '%s' (expected run, replay, synth, bench, subscribe, daemon, filter, bench-filters, cameras, simulate-camera, calibrate, bench-replay, describe, settings or measure; see --help)\n", argv[1]);
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "stripeline: %s\n", e.what());
    std::fprintf(stderr, "Run 'stripeline --help' for usage.\n");
    return 2;
  }
  // Log lines go to stderr: standard output is for results only (a summary,
  // a stream written to '-'). The daemon picks its own target (journald).
  spdlog::set_default_logger(spdlog::stderr_color_mt("stripeline", spdlog::color_mode::automatic));
  // SIGINT/SIGTERM remove this process's temporaries before it ends; run and
  // replay stop gracefully instead (tools/interrupt.h); the daemon blocks them.
  tools::install_cleanup_on_signal();
  spdlog::set_pattern("stripeline: [%l] %v");
  spdlog::set_level(verbose ? spdlog::level::debug : spdlog::level::warn);

  try {
    for (const auto& cmd : commands)
      if (cmd.app->parsed()) return cmd.run();
    return 2;
  } catch (const InputError& e) {
    std::fprintf(stderr, "stripeline: error: %s\n", e.what());
    return 2;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "stripeline: failed: out of memory\n");
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "stripeline: failed: %s\n", e.what());
    return 1;
  }
}
