// A bad day, end to end through the `stripeline` binary:
//  - interrupted runs: SIGINT/SIGTERM stop acquiring and finish the files
//    (run, replay --loops 0, daemon); a second signal aborts, removing the
//    temporaries; stale temporaries of a SIGKILLed run are swept by the next;
//  - kill trials (FaultTrials.*): run/replay/daemon killed at random points
//    with SIGINT, SIGTERM or SIGKILL; every final-named file must parse, no
//    temporary may survive SIGINT/SIGTERM, SIGKILL leftovers are swept.
//    STRIPELINE_KILL_TRIALS sets the number of trials (default 100; the
//    longer run: bench/kill-trials.sh);
//  - outputs validated before anything is written (exit 2, one line);
//  - tiny files claiming huge images refused before allocating (exit 2);
//  - a recording's own frame height checked against -H; a suspicious frame
//    height warned about.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <png.h>
#include <tiffio.h>
#include <zlib.h>

#include <cstdlib>
#include <fstream>
#include <random>
#include <regex>
#include <set>

#include "child_process.h"
#include "io/atomic_file.h"
#include "io/image_reader.h"
#include "io/ply_writer.h"
#include "crafted_png.h"
#include "test_helpers.h"

using namespace stripeline;
using namespace std::chrono_literals;
using test::Child;
using test::run_cli;
using test::TempDir;
namespace fs = std::filesystem;

namespace {

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_text(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

bool is_temporary(const fs::path& p) { return io::parse_temporary_name(p.filename().string(), nullptr, nullptr); }

std::vector<fs::path> temporaries_in(const fs::path& dir) {
  std::vector<fs::path> t;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (is_temporary(e.path())) t.push_back(e.path());
  return t;
}

// "" when `p` is a complete file of its kind, else what is wrong with it.
std::string check_complete(const fs::path& p) {
  const std::string ext = p.extension().string();
  try {
    if (ext == ".ply") {
      const std::string text = read_text(p);
      const std::size_t end = text.find("end_header\n");
      if (end == std::string::npos) return "no end_header";
      const std::string header = text.substr(0, end);
      std::smatch m;
      if (!std::regex_search(header, m, std::regex("element vertex ([0-9]+)"))) return "no vertex count";
      const std::uint64_t n = std::stoull(m[1]);
      if (header.find("format binary_little_endian") != std::string::npos) {
        const std::uint64_t expected = end + 11 + n * io::kPlyVertexBytes;
        if (text.size() != expected)
          return "size " + std::to_string(text.size()) + " != header + " + std::to_string(n) + " vertices = " + std::to_string(expected);
      }
      if (io::read_ply(p).size() != n) return "read_ply disagrees with the vertex count";
      return "";
    }
    if (ext == ".png" || ext == ".tif" || ext == ".tiff") {
      auto reader = io::open_image(p);
      const auto& info = reader->info();
      std::vector<std::byte> rows(static_cast<std::size_t>(info.width) * bytes_per_pixel(info.format) * info.height);
      reader->read_rows(rows.data(), info.height);
      return "";
    }
    if (ext == ".json") {
      const auto j = nlohmann::json::parse(read_text(p));
      return j.is_object() ? "" : "not a JSON object";
    }
    return "";
  } catch (const std::exception& e) {
    return e.what();
  }
}

// Every final-named file in `dir` (not temporaries, not inputs) checked.
std::vector<std::string> incomplete_files(const fs::path& dir, const std::set<std::string>& skip, std::uint64_t* checked = nullptr) {
  std::vector<std::string> bad;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (is_temporary(e.path()) || skip.count(name) || !e.is_regular_file()) continue;
    const std::string problem = check_complete(e.path());
    if (checked) ++*checked;
    if (!problem.empty()) bad.push_back(name + ": " + problem);
  }
  return bad;
}

// A tiny recording of 16-row frames (the test's frames are small: a trial is quick).
fs::path make_recording(const TempDir& dir, int frames = 200, const std::string& name = "rec.tif") {
  const fs::path rec = dir / name;
  std::string out;
  const int rc = run_cli("synth " + rec.string() + " --width 64 --frame-height 16 --frames " + std::to_string(frames), &out);
  EXPECT_EQ(rc, 0) << out;
  return rec;
}

std::string small_run_config(const fs::path& dir, std::uint64_t frames) {
  return "[synthetic]\nwidth = 64\nframe_height = 16\nframes = " + std::to_string(frames) +
         "\n[processing]\nbackend = \"cpu\"\nbatch_frames = 20\n[output]\ndir = \"" + dir.string() +
         "\"\nply = \"scan.ply\"\nheightmap = \"heightmap.png\"\npreview = \"preview.png\"\nsummary = \"summary.json\"\n";
}

std::string small_daemon_config(const fs::path& dir) {
  return "[source]\nkind = \"synthetic\"\n[synthetic]\nwidth = 64\nframe_height = 16\nframes = 0\n[processing]\nbackend = \"cpu\"\n"
         "batch_frames = 20\n[output]\ndir = \"" +
         dir.string() +
         "\"\nply = \"scan.ply\"\nheightmap = \"heightmap.tif\"\npreview = \"\"\nsummary = \"scan.json\"\n[publisher]\nenabled = false\n"
         "[daemon]\nscan_rows = 400\nrate = 4000.0\nlog_level = \"info\"\n[http]\nenabled = false\n";
}

int exit_of(Child& c) {
  const auto code = c.wait_exit(30s);
  return code ? *code : -1;
}

// A PID that is certainly not alive: a child that has exited and been reaped.
pid_t dead_pid() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return pid;
}

}  // namespace

// ---------------------------------------------------------------------------
// Interrupted runs

TEST(Interrupts, SigintOnAnEndlessReplayFinishesTheFilesAndSaysSo) {
  TempDir dir;
  const fs::path rec = make_recording(dir, 50);
  const fs::path out = dir / "out";
  fs::create_directories(out);
  Child c({test::binary_path(), "replay", rec.string(), "-H", "16", "--loops", "0", "--backend", "cpu", "--ply", (out / "a.ply").string(),
           "--heightmap", (out / "a.png").string(), "--summary", (out / "a.json").string()});
  // Wait until it is replaying (the PLY temporary exists), then Ctrl-C.
  const auto deadline = test::steady::now() + 20s;
  while (temporaries_in(out).empty() && test::steady::now() < deadline) std::this_thread::sleep_for(10ms);
  ASSERT_FALSE(temporaries_in(out).empty()) << c.output();
  std::this_thread::sleep_for(200ms);
  c.signal(SIGINT);
  EXPECT_EQ(exit_of(c), 0) << "an endless replay ended by Ctrl-C: stopping is how it ends\n" << c.output();
  EXPECT_NE(c.output().find("SIGINT: stopping; finishing the files"), std::string::npos) << c.output();
  EXPECT_NE(c.output().find("stopped by SIGINT after"), std::string::npos) << c.output();
  EXPECT_TRUE(temporaries_in(out).empty());
  EXPECT_TRUE(incomplete_files(out, {}).empty());
  const auto summary = nlohmann::json::parse(read_text(out / "a.json"));
  EXPECT_EQ(summary["stopped_by"], "SIGINT");
  EXPECT_GT(summary["frames"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(io::read_ply(out / "a.ply").size(), summary["points"].get<std::uint64_t>());
}

TEST(Interrupts, SigtermOnAFiniteRunExits3WithCompleteFiles) {
  TempDir dir;
  const fs::path out = dir / "out";
  write_text(dir / "c.toml", small_run_config(out, 2000000) + "[processing.ignored]\n");
  // (an unknown table is refused; write the config without it)
  write_text(dir / "c.toml", small_run_config(out, 2000000));
  Child c({test::binary_path(), "run", "-c", (dir / "c.toml").string()});
  const auto deadline = test::steady::now() + 20s;
  while ((!fs::exists(out) || temporaries_in(out).empty()) && test::steady::now() < deadline) std::this_thread::sleep_for(10ms);
  std::this_thread::sleep_for(200ms);
  c.signal(SIGTERM);
  EXPECT_EQ(exit_of(c), 3) << "a finite source cut short: files complete, exit 3\n" << c.output();
  EXPECT_NE(c.output().find("SIGTERM: stopping"), std::string::npos) << c.output();
  EXPECT_TRUE(temporaries_in(out).empty());
  for (const char* name : {"scan.ply", "heightmap.png", "preview.png", "summary.json"}) EXPECT_TRUE(fs::exists(out / name)) << name;
  EXPECT_TRUE(incomplete_files(out, {}).empty());
}

// An endless replay paced at `rate` frames/s into out/a.ply and out/a.json
// (-v: the pipeline's set-up line, which comes after the signal handler knows
// the run).
Child paced_replay(const TempDir& dir, const fs::path& out, const std::string& rate, const std::vector<std::string>& more = {}) {
  fs::create_directories(out);
  const fs::path rec = make_recording(dir, 50);
  std::vector<std::string> args = {test::binary_path(), "replay", rec.string(), "-H", "16", "--loops", "0", "--rate", rate, "--backend", "cpu",
                                   "--ply", (out / "a.ply").string(), "--summary", (out / "a.json").string(), "-v"};
  args.insert(args.end(), more.begin(), more.end());
  return Child(args);
}

TEST(Interrupts, ASecondSignalAbortsAndRemovesTheTemporaries) {
  TempDir dir;
  const fs::path out = dir / "out";
  Child c = paced_replay(dir, out, "20");
  ASSERT_TRUE(c.wait_for("pipeline: cpu backend", 20s)) << c.output();
  // The sinks create their temporaries as the run begins, just after that line.
  const auto deadline = test::steady::now() + 20s;
  while (temporaries_in(out).empty() && test::steady::now() < deadline) std::this_thread::sleep_for(10ms);
  ASSERT_FALSE(temporaries_in(out).empty()) << c.output();
  // Two signals while the process is frozen: on SIGCONT both are delivered,
  // one after the other, before it can finish anything (two SIGINTs would
  // merge into one pending signal, so the second is a SIGTERM). Whichever is
  // handled first stops gracefully; the other is the second signal.
  c.signal(SIGSTOP);
  c.signal(SIGINT);
  c.signal(SIGTERM);
  c.signal(SIGCONT);
  const int code = exit_of(c);
  EXPECT_TRUE(code == 128 + SIGINT || code == 128 + SIGTERM) << code << "\n" << c.output();
  EXPECT_NE(c.output().find(" again: aborting; temporaries removed, no file finished"), std::string::npos) << c.output();
  EXPECT_TRUE(temporaries_in(out).empty()) << "a temporary survived the abort";
  EXPECT_FALSE(fs::exists(out / "a.ply"));
  EXPECT_FALSE(fs::exists(out / "a.json"));
}

TEST(Interrupts, CtrlCOnASlowPacedReplayStopsWithinAFrame) {
  TempDir dir;
  const fs::path out = dir / "out";
  // One frame a second, 300 frames a batch: a Ctrl-C that waited for the
  // batch would take five minutes.
  Child c = paced_replay(dir, out, "1", {"--batch-frames", "300"});
  ASSERT_TRUE(c.wait_for("pipeline: cpu backend", 20s)) << c.output();
  std::this_thread::sleep_for(1500ms);  // frames 0 and 1 delivered into the batch in flight
  c.signal(SIGINT);
  const auto code = c.wait_exit(30s);  // a stop that waited for the batch would not come back
  ASSERT_TRUE(code.has_value()) << "still running 30 s after Ctrl-C\n" << c.output();
  EXPECT_EQ(*code, 0) << c.output();
  EXPECT_NE(c.output().find("stopped by SIGINT after"), std::string::npos) << c.output();
  EXPECT_TRUE(temporaries_in(out).empty());
  const auto summary = nlohmann::json::parse(read_text(out / "a.json"));
  EXPECT_EQ(summary["stopped_by"], "SIGINT");
  EXPECT_GE(summary["frames"].get<std::uint64_t>(), 1u) << "the frames acquired before the stop are kept";
  EXPECT_EQ(io::read_ply(out / "a.ply").size(), summary["points"].get<std::uint64_t>());
}

TEST(Interrupts, StaleTemporariesOfADeadProcessAreSweptOthersKept) {
  TempDir dir;
  const fs::path out = dir / "out";
  fs::create_directories(out);
  const pid_t dead = dead_pid();
  const std::string d = std::to_string(dead), alive = std::to_string(::getpid());
  const std::vector<std::string> stale = {".scan.ply.tmp-" + d + "-0", ".summary.json.tmp-" + d + "-3"};
  const std::vector<std::string> kept = {".scan.ply.tmp-" + alive + "-0",        // its process lives
                                         ".other.ply.tmp-" + d + "-0",           // not one of our outputs
                                         ".scan.ply.tmp-" + d + "-x",            // not our exact pattern
                                         "scan.ply.tmp-" + d + "-0"};            // no leading dot
  for (const auto& n : stale) write_text(out / n, "partial");
  for (const auto& n : kept) write_text(out / n, "partial");
  write_text(dir / "c.toml", small_run_config(out, 40));
  std::string output;
  ASSERT_EQ(run_cli("run -q -c " + (dir / "c.toml").string(), &output), 0) << output;
  EXPECT_NE(output.find("removed 2 temporaries left by an interrupted run"), std::string::npos) << output;
  for (const auto& n : stale) EXPECT_FALSE(fs::exists(out / n)) << n;
  for (const auto& n : kept) EXPECT_TRUE(fs::exists(out / n)) << n;
}

TEST(Interrupts, DaemonSecondSignalAbortsAndItsStaleScansAreSwept) {
  TempDir dir;
  const fs::path out = dir / "out";
  fs::create_directories(out);
  const pid_t dead = dead_pid();
  const std::string stale = ".20260101T000000Z-000007-scan.ply.tmp-" + std::to_string(dead) + "-0";
  write_text(out / stale, "partial");
  write_text(dir / "d.toml", small_daemon_config(out));
  {
    Child d({test::binary_path(), "daemon", "-c", (dir / "d.toml").string()});
    ASSERT_TRUE(d.wait_for("daemon: ready", 20s)) << d.output();
    EXPECT_FALSE(fs::exists(out / stale)) << d.output();
    EXPECT_NE(d.output().find("left by an interrupted run"), std::string::npos) << d.output();
    d.signal(SIGTERM);
    EXPECT_EQ(exit_of(d), 0) << d.output();
  }
  EXPECT_TRUE(temporaries_in(out).empty());
  EXPECT_TRUE(incomplete_files(out, {}).empty());
  // Two SIGTERMs back to back: the second aborts the drain (exit 143), unless
  // the first had already finished it (exit 0); no temporary either way.
  {
    Child d({test::binary_path(), "daemon", "-c", (dir / "d.toml").string()});
    ASSERT_TRUE(d.wait_for("daemon: ready", 20s)) << d.output();
    std::this_thread::sleep_for(100ms);
    d.signal(SIGTERM);
    d.signal(SIGTERM);
    const int code = exit_of(d);
    EXPECT_TRUE(code == 128 + SIGTERM || code == 0) << code << "\n" << d.output();
    if (code == 128 + SIGTERM) EXPECT_NE(d.output().find("SIGTERM again: aborting"), std::string::npos) << d.output();
  }
  EXPECT_TRUE(temporaries_in(out).empty());
  EXPECT_TRUE(incomplete_files(out, {}).empty());
}

// ---------------------------------------------------------------------------
// Kill trials

namespace {

struct TrialFigures {
  int trials = 0, graceful = 0, killed = 0;
  std::uint64_t files_checked = 0, partial = 0, temporaries_after_stop = 0, kill_leftovers = 0;
};

}  // namespace

TEST(FaultTrials, RunReplayDaemonKilledAtRandomPoints) {
  int trials = 100;
  if (const char* env = std::getenv("STRIPELINE_KILL_TRIALS"); env && *env) trials = std::max(3, std::atoi(env));
  std::uint32_t seed = 20261124;
  if (const char* env = std::getenv("STRIPELINE_KILL_SEED"); env && *env) seed = static_cast<std::uint32_t>(std::strtoul(env, nullptr, 10));
  std::mt19937 rng(seed);
  TempDir dir;
  const fs::path rec = make_recording(dir, 400);
  const fs::path run_dir = dir / "run", replay_dir = dir / "replay", daemon_dir = dir / "daemon";
  for (const auto& d : {run_dir, replay_dir, daemon_dir}) fs::create_directories(d);
  write_text(dir / "run.toml", small_run_config(run_dir, 3000));
  write_text(dir / "daemon.toml", small_daemon_config(daemon_dir));
  const int signals[] = {SIGINT, SIGTERM, SIGKILL};
  TrialFigures fig;
  std::set<std::string> leftovers;  // distinct temporaries seen after SIGKILL trials
  std::vector<std::string> failures;
  for (int t = 0; t < trials; ++t) {
    const int kind = t % 3;
    const int sig = signals[rng() % 3];
    const int delay_ms = static_cast<int>(rng() % (kind == 2 ? 600 : 400));
    const fs::path where = kind == 0 ? run_dir : kind == 1 ? replay_dir : daemon_dir;
    std::vector<std::string> args;
    if (kind == 0) args = {test::binary_path(), "run", "-q", "-c", (dir / "run.toml").string()};
    if (kind == 1)
      args = {test::binary_path(), "replay", rec.string(), "-H", "16", "--loops", "0", "--backend", "cpu", "-q",
              "--ply", (where / "r.ply").string(), "--heightmap", (where / "r.tif").string(), "--preview",
              (where / "p.png").string(), "--summary", (where / "r.json").string()};
    if (kind == 2) args = {test::binary_path(), "daemon", "-c", (dir / "daemon.toml").string()};
    Child c(args);
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    c.signal(sig);
    const int code = exit_of(c);
    ++fig.trials;
    const std::string what = "trial " + std::to_string(t) + " (" + (kind == 0 ? "run" : kind == 1 ? "replay" : "daemon") + ", " +
                             (sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "SIGKILL") + " after " + std::to_string(delay_ms) + " ms, exit " +
                             std::to_string(code) + ")";
    if (code < 0) failures.push_back(what + ": did not exit within 30 s\n" + c.output());
    const auto bad = incomplete_files(where, {}, &fig.files_checked);
    fig.partial += bad.size();
    for (const auto& b : bad) failures.push_back(what + ": a final-named file is incomplete: " + b);
    const auto temps = temporaries_in(where);
    if (kind == 2) {  // checked: the daemon's scans go (it writes many), its temporaries stay for the sweep
      for (const auto& e : fs::directory_iterator(where))
        if (!is_temporary(e.path())) fs::remove(e.path());
    }
    if (sig == SIGKILL) {
      ++fig.killed;
      for (const auto& p : temps) leftovers.insert(p.string());
    } else {
      ++fig.graceful;
      // Leftovers of an earlier SIGKILL may still be there if this process was
      // stopped before its sweep; its own temporaries never.
      std::uint64_t own = 0;
      for (const auto& p : temps) {
        long pid = 0;
        io::parse_temporary_name(p.filename().string(), nullptr, &pid);
        if (pid == c.pid()) ++own;
      }
      fig.temporaries_after_stop += own;
      if (own > 0) failures.push_back(what + ": " + std::to_string(own) + " of its temporaries survived\n" + c.output());
      const bool acceptable = code == 0 || code == 3 || code == 128 + sig;  // 128+sig: signalled before its handlers were set
      if (!acceptable) failures.push_back(what + ": unexpected exit code\n" + c.output());
    }
  }
  // The next complete run of each kind sweeps whatever SIGKILL left.
  std::string output;
  EXPECT_EQ(run_cli("run -q -c " + (dir / "run.toml").string(), &output), 0) << output;
  EXPECT_EQ(run_cli("replay " + rec.string() + " -H 16 --backend cpu -q --ply " + (replay_dir / "r.ply").string() + " --heightmap " +
                        (replay_dir / "r.tif").string() + " --preview " + (replay_dir / "p.png").string() + " --summary " +
                        (replay_dir / "r.json").string(),
                    &output),
            0)
      << output;
  {
    Child d({test::binary_path(), "daemon", "-c", (dir / "daemon.toml").string()});
    EXPECT_TRUE(d.wait_for("daemon: ready", 20s)) << d.output();
    d.signal(SIGTERM);
    EXPECT_EQ(exit_of(d), 0) << d.output();
  }
  fig.kill_leftovers = leftovers.size();
  std::uint64_t remaining = 0;
  for (const auto& d : {run_dir, replay_dir, daemon_dir}) remaining += temporaries_in(d).size();
  EXPECT_EQ(remaining, 0u) << "SIGKILL leftovers not swept by the next run";
  for (const auto& d : {run_dir, replay_dir, daemon_dir}) EXPECT_TRUE(incomplete_files(d, {}, &fig.files_checked).empty());
  std::printf("kill trials: %d (seed %u; %d SIGINT/SIGTERM, %d SIGKILL); final-named files checked %llu, partial %llu; "
              "temporaries after SIGINT/SIGTERM %llu; SIGKILL leftovers %llu, left after the next runs %llu\n",
              fig.trials, seed, fig.graceful, fig.killed, static_cast<unsigned long long>(fig.files_checked),
              static_cast<unsigned long long>(fig.partial), static_cast<unsigned long long>(fig.temporaries_after_stop),
              static_cast<unsigned long long>(fig.kill_leftovers), static_cast<unsigned long long>(remaining));
  for (const auto& f : failures) ADD_FAILURE() << f;
}

// ---------------------------------------------------------------------------
// Outputs validated before anything is written

TEST(OutputChecks, BadNamesAreRefusedBeforeTheRunWithOneLine) {
  TempDir dir;
  const fs::path rec = make_recording(dir, 20);
  struct Case {
    std::string args, expect;
  };
  const std::string ply = (dir / "out" / "scan.ply").string();
  fs::create_directories(dir / "out");
  const std::vector<Case> cases = {
      {"--ply " + ply + " --heightmap " + (dir / "out" / "h.jpg").string(), "unsupported extension '.jpg'"},
      {"--ply " + ply + " --preview " + (dir / "out" / "preview").string(), "unsupported no extension"},
      {"--ply " + ply + " --heightmap /nonexistent/out.png", "directory '/nonexistent' does not exist"},
      {"--ply " + (dir / "out" / "scan.txt").string(), "expected a .ply file name"},
      {"--ply " + ply + " --summary " + (dir / "out").string(), "is a directory"},
      {"--ply " + ply + " --summary " + ply, "is written there too"},
  };
  for (const auto& c : cases) {
    std::string output;
    const int rc = run_cli("replay " + rec.string() + " -H 16 --backend cpu " + c.args, &output);
    EXPECT_EQ(rc, 2) << c.args << "\n" << output;
    EXPECT_NE(output.find(c.expect), std::string::npos) << c.args << "\n" << output;
    EXPECT_EQ(std::count(output.begin(), output.end(), '\n'), 1) << "one line expected:\n" << output;
    EXPECT_TRUE(fs::is_empty(dir / "out")) << c.args << ": something was created before the check";
  }
  {  // subscribe: refused before it connects
    std::string output;
    EXPECT_EQ(run_cli("subscribe tcp://127.0.0.1:1 --timeout 5 --heightmap " + (dir / "out" / "h.jpg").string(), &output), 2) << output;
    EXPECT_NE(output.find("unsupported extension '.jpg'"), std::string::npos) << output;
  }
  // A config whose preview has no image extension: refused when loaded, naming the key.
  write_text(dir / "c.toml", small_run_config(dir / "cfg-out", 20) + "");
  std::string text = read_text(dir / "c.toml");
  text.replace(text.find("preview.png"), 11, "preview");
  write_text(dir / "c.toml", text);
  std::string output;
  EXPECT_EQ(run_cli("run -c " + (dir / "c.toml").string(), &output), 2) << output;
  EXPECT_NE(output.find("preview = \"preview\""), std::string::npos) << output;
  EXPECT_FALSE(fs::exists(dir / "cfg-out")) << "the output directory was created before the check";
}

// ---------------------------------------------------------------------------
// Tiny files claiming huge images

namespace {

// A valid-looking 16-bit grey PNG header claiming width x height, with a few
// bytes of compressed data.
std::string crafted_png(std::uint32_t width, std::uint32_t height) {
  std::string zeros(4096, '\0');
  uLongf n = compressBound(static_cast<uLong>(zeros.size()));
  std::string z(n, '\0');
  ::compress(reinterpret_cast<Bytef*>(z.data()), &n, reinterpret_cast<const Bytef*>(zeros.data()), static_cast<uLong>(zeros.size()));
  z.resize(n);
  return test::grey16_png(width, height, z);
}

// A TIFF (libtiff) whose one strip claims width x height 16-bit pixels, with a few bytes in it.
void crafted_tiff(const fs::path& path, std::uint32_t width, std::uint32_t height, std::uint16_t compression) {
  TIFF* t = TIFFOpen(path.c_str(), "w");
  ASSERT_NE(t, nullptr);
  TIFFSetField(t, TIFFTAG_IMAGEWIDTH, width);
  TIFFSetField(t, TIFFTAG_IMAGELENGTH, height);
  TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, 16);
  TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, 1);
  TIFFSetField(t, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_MINISBLACK);
  TIFFSetField(t, TIFFTAG_COMPRESSION, compression);
  TIFFSetField(t, TIFFTAG_ROWSPERSTRIP, 0xffffffffu);
  char bytes[16] = {};
  TIFFWriteRawStrip(t, 0, bytes, sizeof bytes);  // 16 bytes for the whole claimed image
  TIFFClose(t);
}

}  // namespace

TEST(HugeClaims, TinyFilesClaimingHugeImagesAreRefusedNamingTheSizes) {
  TempDir dir;
  write_text(dir / "a.png", crafted_png(65536, 32768));
  write_text(dir / "b.png", crafted_png(65536, 2147483632u));
  crafted_tiff(dir / "c.tif", 65536, 2147483632u, COMPRESSION_ADOBE_DEFLATE);
  crafted_tiff(dir / "d.tif", 65536, 32768, COMPRESSION_NONE);
  for (const char* name : {"a.png", "b.png", "c.tif", "d.tif"}) {
    const fs::path p = dir / name;
    ASSERT_LT(fs::file_size(p), 5000u) << name;
    std::string output;
    const auto start = test::steady::now();
    EXPECT_EQ(run_cli("filter " + p.string() + " " + (dir / "o.png").string() + " --median 3", &output), 2) << name << "\n" << output;
    EXPECT_NE(output.find(p.string() + ": claims 65536x"), std::string::npos) << output;
    EXPECT_NE(output.find("but the file is " + std::to_string(fs::file_size(p)) + " bytes"), std::string::npos) << output;
    EXPECT_EQ(output.find("out of memory"), std::string::npos) << output;
    EXPECT_LT(test::steady::now() - start, 5s) << name << ": the refusal should not wait for an allocation";
    output.clear();
    EXPECT_EQ(run_cli("replay " + p.string() + " -H 16 --backend cpu --heightmap " + (dir / "h.png").string(), &output), 2)
        << name << "\n" << output;
    EXPECT_NE(output.find("claims 65536x"), std::string::npos) << output;
    EXPECT_FALSE(fs::exists(dir / "o.png"));
    EXPECT_FALSE(fs::exists(dir / "h.png"));
  }
}

// ---------------------------------------------------------------------------
// Recordings: the frame height recorded in the file, a suspicious frame height,
// a multi-page TIFF read page after page

TEST(Recordings, RecordedFrameHeightMustMatchDashH) {
  TempDir dir;
  const fs::path tif = make_recording(dir, 20, "rec.tif");
  const fs::path png = make_recording(dir, 20, "rec.png");
  for (const fs::path& rec : {tif, png}) {
    std::string output;
    EXPECT_EQ(run_cli("replay " + rec.string() + " -H 8 --backend cpu --summary " + (dir / "s.json").string(), &output), 2) << output;
    EXPECT_NE(output.find("records frames of 16 rows"), std::string::npos) << output;
    EXPECT_NE(output.find("frame height given is 8"), std::string::npos) << output;
    EXPECT_FALSE(fs::exists(dir / "s.json"));
    EXPECT_EQ(run_cli("replay " + rec.string() + " -H 16 --backend cpu -q --summary " + (dir / "s.json").string(), &output), 0) << output;
    fs::remove(dir / "s.json");
  }
}

TEST(Recordings, AFrameHeightThatMissesTheStripeIsWarnedAbout) {
  TempDir dir;
  const fs::path rec = make_recording(dir, 40, "rec.pgm");  // PGM records no frame height
  std::string output;
  // 2-row frames out of 16-row ones: most frames hold no stripe.
  EXPECT_EQ(run_cli("replay " + rec.string() + " -H 2 -b 0 --backend cpu -q --summary " + (dir / "s.json").string(), &output), 0) << output;
  EXPECT_NE(output.find("is 2 rows the right frame height"), std::string::npos) << output;
  EXPECT_EQ(run_cli("replay " + rec.string() + " -H 16 --backend cpu -q --summary " + (dir / "s.json").string(), &output), 0) << output;
  EXPECT_EQ(output.find("right frame height"), std::string::npos) << output;
}

TEST(Recordings, AMultiPageTiffIsReadAFramePerPage) {
  TempDir dir;
  // A stack as numpy/tifffile write it: one 16-row frame per page.
  const fs::path single = make_recording(dir, 12, "one.tif");
  auto reader = io::open_image(single);
  std::vector<std::uint8_t> pixels(static_cast<std::size_t>(reader->info().width) * reader->info().height);
  reader->read_rows(reinterpret_cast<std::byte*>(pixels.data()), reader->info().height);
  const fs::path stack = dir / "stack.tif";
  TIFF* t = TIFFOpen(stack.c_str(), "w");
  ASSERT_NE(t, nullptr);
  for (int page = 0; page < 12; ++page) {
    TIFFSetField(t, TIFFTAG_IMAGEWIDTH, 64u);
    TIFFSetField(t, TIFFTAG_IMAGELENGTH, 16u);
    TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, 8);
    TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, 1);
    TIFFSetField(t, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_MINISBLACK);
    TIFFSetField(t, TIFFTAG_ROWSPERSTRIP, 16u);
    TIFFSetField(t, TIFFTAG_SUBFILETYPE, FILETYPE_PAGE);
    for (int r = 0; r < 16; ++r) TIFFWriteScanline(t, pixels.data() + (static_cast<std::size_t>(page) * 16 + r) * 64, r, 0);
    TIFFWriteDirectory(t);
  }
  TIFFClose(t);
  std::string a, b;
  ASSERT_EQ(run_cli("replay " + single.string() + " -H 16 --backend cpu -q --heightmap " + (dir / "a.png").string() + " --summary " +
                        (dir / "a.json").string(),
                    &a),
            0)
      << a;
  ASSERT_EQ(run_cli("replay " + stack.string() + " -H 16 --backend cpu -q --heightmap " + (dir / "b.png").string() + " --summary " +
                        (dir / "b.json").string(),
                    &b),
            0)
      << b;
  const auto ja = nlohmann::json::parse(read_text(dir / "a.json")), jb = nlohmann::json::parse(read_text(dir / "b.json"));
  EXPECT_EQ(jb["frames"].get<int>(), 12) << "every page is a frame";
  EXPECT_EQ(ja["points"], jb["points"]);
  auto ra = io::open_image(dir / "a.png"), rb = io::open_image(dir / "b.png");
  ASSERT_EQ(ra->info().height, rb->info().height);
  std::vector<std::uint16_t> ca(64 * 12), cb(64 * 12);
  ra->read_rows(reinterpret_cast<std::byte*>(ca.data()), 12);
  rb->read_rows(reinterpret_cast<std::byte*>(cb.data()), 12);
  EXPECT_EQ(ca, cb) << "the stack gives the same height map as the single-image recording";
}
