// stripeline: real-time laser profilometry. See README.md.
// Exit codes: 0 ok; 2 bad usage or bad input (one line on stderr naming the
// file and the problem); 1 runtime failure.
#include <spdlog/spdlog.h>

#include <cstdio>
#include <exception>
#include <vector>

#include "core/errors.h"
#include "tools/commands.h"

int main(int argc, char** argv) {
  using namespace stripeline;
  CLI::App app{"stripeline " STRIPELINE_VERSION ": stripe frames in, calibrated height rows, height maps and PLY point clouds out"};
  app.require_subcommand(1, 1);
  app.set_version_flag("--version", STRIPELINE_VERSION);
  bool verbose = false;
  app.add_flag("-v,--verbose", verbose, "Log what happens (debug level)");

  const std::vector<tools::Subcommand> commands = {tools::add_run(app), tools::add_replay(app), tools::add_synth(app), tools::add_bench(app),
                                                    tools::add_subscribe(app), tools::add_daemon(app), tools::add_filter(app),
                                                    tools::add_bench_filters(app), tools::add_cameras(app),
                                                    tools::add_simulate_camera(app), tools::add_calibrate(app),
                                                    tools::add_bench_replay(app)};

  if (argc > 1 && argv[1][0] != '-') {
    bool known = false;
    for (const auto& cmd : commands) known = known || cmd.app->get_name() == argv[1];
    if (!known) {
      std::fprintf(stderr, "stripeline: unknown command '%s' (expected run, replay, synth, bench, subscribe, daemon, filter, bench-filters, cameras, simulate-camera, calibrate or bench-replay; see --help)\n", argv[1]);
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
