#pragma once
// The subcommands of the `stripeline` program. Each registers its options on
// the CLI11 app and returns the function that runs it (exit code). Tools are
// thin: they parse, build the library's objects, and report.
#include <CLI/CLI.hpp>

#include <functional>

namespace stripeline::tools {

struct Subcommand {
  CLI::App* app;
  std::function<int()> run;  // called when this subcommand was parsed
};

Subcommand add_run(CLI::App& app);      // stripeline run [--config FILE]
Subcommand add_replay(CLI::App& app);   // stripeline replay INPUT --frame-height N ...
Subcommand add_synth(CLI::App& app);    // stripeline synth OUT.tiff ...
Subcommand add_bench(CLI::App& app);    // stripeline bench [--json FILE]
Subcommand add_subscribe(CLI::App& app);  // stripeline subscribe ENDPOINT [--ply OUT] [--heightmap OUT] [--rows N] [--timeout S]
Subcommand add_daemon(CLI::App& app);     // stripeline daemon --config configs/daemon.toml
Subcommand add_filter(CLI::App& app);     // stripeline filter INPUT OUTPUT STEP... [--backend auto|cpu|cuda]
Subcommand add_bench_filters(CLI::App& app);  // stripeline bench-filters [--json FILE] [--quick]
Subcommand add_cameras(CLI::App& app);          // stripeline cameras [--json]
Subcommand add_simulate_camera(CLI::App& app);  // stripeline simulate-camera [--interface 127.0.0.1] [-r PER_THOUSAND]
Subcommand add_calibrate(CLI::App& app);         // stripeline calibrate RECORDING -H N --target T.toml --out cal.toml
Subcommand add_bench_replay(CLI::App& app);     // stripeline bench-replay [--json FILE] [--backend B] [--threads 1,2,4,8,16]
Subcommand add_describe(CLI::App& app);         // stripeline describe FILE... [--json]
Subcommand add_settings(CLI::App& app);         // stripeline settings [--markdown]
Subcommand add_proxy(CLI::App& app);            // stripeline proxy FRONTEND [--backend EP] [CURVE keys]
Subcommand add_join(CLI::App& app);             // stripeline join PART... --out FILE (replay --frames parts)
Subcommand add_merge(CLI::App& app);            // stripeline merge --head NAME=EP ... --transforms F.toml --grid X0:X1:DX
Subcommand add_align(CLI::App& app);            // stripeline align --head NAME=REC,CAL ... --target T.toml -H N -o F.toml
Subcommand add_render(CLI::App& app);           // stripeline render FILE --out PICTURE.png
Subcommand add_report(CLI::App& app);           // stripeline report FILE... --out report.html
Subcommand add_measure(CLI::App& app);          // stripeline measure REC -H N --job JOB.toml [--calibration F] [--json F] [--csv F]

}  // namespace stripeline::tools
