// `stripeline daemon`: the long-running acquisition service (daemon/daemon.h,
// docs/daemon.md, configs/daemon.toml, configs/stripeline.service).
#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "app/config.h"
#include "calibration/calibration_file.h"
#include "daemon/daemon.h"
#include "daemon/logging.h"
#include "streaming/curve.h"
#include "tools/calibration_flags.h"
#include "tools/commands.h"

namespace stripeline::tools {

Subcommand add_daemon(CLI::App& app) {
  auto* sub = app.add_subcommand("daemon", "Run the acquisition daemon until SIGTERM/SIGINT (SIGHUP reloads); see docs/daemon.md");
  struct Flags {
    std::string config, keygen;
    bool check = false;
    std::string calibration, roi_offset, log = "auto";
    double y_step = 0.0;
  };
  auto f = std::make_shared<Flags>();
  sub->add_option("-c,--config", f->config, "TOML configuration (see configs/daemon.toml)");
  sub->add_flag("--check", f->check, "Check the configuration (and key files) and exit");
  sub->add_option("--keygen", f->keygen, "Write a CURVE key pair to BASE.pub and BASE.secret (mode 0600) and exit");
  sub->add_option("--log", f->log,
                  "Where log lines go: auto (the journal, with priorities, when run by systemd; else stderr), stderr, journald")
      ->check(CLI::IsMember({"auto", "stderr", "journald"}));
  add_calibration_flags(sub, f->calibration, f->y_step, f->roi_offset);
  return {sub, [f] {
            auto overrides = [f](Config& c) { apply_calibration_flags(c, f->calibration, f->y_step, f->roi_offset); };
            if (!f->keygen.empty()) {
              const auto [pub, sec] = write_curve_keypair(f->keygen);
              std::printf("wrote %s.pub and %s.secret (public key %s)\n", f->keygen.c_str(), f->keygen.c_str(), pub.c_str());
              return 0;
            }
            if (f->config.empty()) {
              std::fprintf(stderr, "stripeline: daemon: --config FILE is required (see configs/daemon.toml)\n");
              return 2;
            }
            if (f->check) {
              Config c = load_config(f->config);
              overrides(c);
              if (!c.calibration.file.empty()) load_calibration(c.calibration.file);  // one line, exit 2
              if (c.publish) c.publisher.curve.check_key_files();
              for (const HeadEntry& h : c.heads) {  // [[head]]s: each head's own files
                Config hc = *h.config;
                overrides(hc);
                if (!hc.calibration.file.empty()) load_calibration(hc.calibration.file);
                if (hc.publish) hc.publisher.curve.check_key_files();
              }
              if (c.merge.enabled) merge_service_config(c.merge, c.heads);  // the transforms file names every head
              std::printf("%s: ok\n", f->config.c_str());
              return 0;
            }
            // Under systemd: the journal, with priorities; elsewhere stderr with time and pid.
            daemon::setup_daemon_logging(daemon::parse_log_target(f->log));
            return daemon::run_daemon(f->config, overrides);
          }};
}

}  // namespace stripeline::tools
