#!/usr/bin/env python3
"""ctest Readme.ExamplesRunAsWritten: every `build/stripeline ...` line of the
README's shell blocks (and the tail/head/mkdir/cp lines that make their
inputs), run as written, in order, in a scratch directory that
holds only build/stripeline (a link to the binary under test) and configs/
(a link to the repository's). Lines that need a camera, a GPU or a partner
process (the daemon and its subscribers) are skipped and said so, one line
each. Then:
  - the demo line the README shows ("frames 600, profiles 600, points N ...")
    has the points count that `build/stripeline run` prints;
  - the examples left nothing in the scratch root but build/, configs/ and
    out/ (the repository root stays clean when they are run from it).
usage: run_readme_examples.py SOURCE_DIR BINARY
"""
import os
import re
import subprocess
import sys
import tempfile
import time

SKIPS = [  # (pattern on the command, reason)
    (r"\bcameras\b|camera\.toml|simulate-camera", "needs a GigE Vision / USB3 Vision camera (docs/cameras.md; ctest -L camera runs a simulated one)"),
    (r"--backend\s+cuda", "needs a GPU"),
    (r"\bdaemon\b", "a service that runs until stopped: tests/test_daemon.cpp and Install.UnitServesCurveClient run it"),
    (r"\bsubscribe\b|--publish", "needs a partner publisher/subscriber: tests/test_streaming.cpp and python/tests run the pair"),
    (r"\bproxy\b", "a service that runs until stopped, between a publisher and its consumers: tests/test_streaming.cpp Proxy.* and ProxyCli.* run it"),
    (r"\bbench\b", "minutes of benchmarking on this machine (bench/README.md; scripts/gpu-check.sh runs it on a GPU host)"),
]


def readme_commands(text):
    """(line number, command) for each build/stripeline line in ```sh blocks."""
    out, in_sh = [], False
    for n, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if s.startswith("```"):
            in_sh = (not in_sh) and s[3:].strip() in ("sh", "bash", "console", "")
            continue
        # The program's lines, and the shell lines that prepare their inputs.
        if in_sh and re.match(r"(build/stripeline|tail|head|mkdir|cp) ", s):
            out.append((n, re.sub(r"\s+#\s.*$", "", s)))
    return out


def main():
    source, binary = sys.argv[1], os.path.abspath(sys.argv[2])
    with open(os.path.join(source, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    commands = readme_commands(readme)
    if len(commands) < 5:
        print(f"FAIL: only {len(commands)} build/stripeline examples found in README.md")
        return 1
    failures = 0
    demo_points = None
    with tempfile.TemporaryDirectory(prefix="stripeline-readme.") as scratch:
        os.makedirs(os.path.join(scratch, "build"))
        os.symlink(binary, os.path.join(scratch, "build", "stripeline"))
        os.symlink(os.path.join(os.path.abspath(source), "configs"), os.path.join(scratch, "configs"))
        ran = skipped = 0
        for n, cmd in commands:
            reason = next((r for p, r in SKIPS if re.search(p, cmd)), None)
            if reason:
                print(f"SKIP README.md:{n}: {cmd}\n     ({reason})")
                skipped += 1
                continue
            t0 = time.monotonic()
            r = subprocess.run(cmd, shell=True, cwd=scratch, capture_output=True, text=True, timeout=600)
            ran += 1
            status = "ok" if r.returncode == 0 else f"FAILED (exit {r.returncode})"
            print(f"RUN  README.md:{n}: {cmd}  -> {status}, {time.monotonic() - t0:.1f} s")
            if r.returncode != 0:
                failures += 1
                print("     " + (r.stdout + r.stderr).strip().replace("\n", "\n     ")[-2000:])
            if re.fullmatch(r"build/stripeline run", cmd):
                m = re.search(r"points (\d+)", r.stdout)
                demo_points = int(m.group(1)) if m else None
        # The README's demo line shows what the built-in demo prints.
        m = re.search(r"^\s+frames \d+, profiles \d+, points (\d+),", readme, re.M)
        if not m:
            print("FAIL: README.md has no demo summary line ('frames N, profiles N, points N, ...')")
            failures += 1
        elif demo_points is None:
            print("FAIL: `build/stripeline run` printed no points count (or is not among the examples)")
            failures += 1
        elif int(m.group(1)) != demo_points:
            print(f"FAIL: README.md's demo line says points {m.group(1)}, `build/stripeline run` prints points {demo_points}")
            failures += 1
        else:
            print(f"demo line: points {demo_points}, as `build/stripeline run` prints")
        left = sorted(set(os.listdir(scratch)) - {"build", "configs", "out"})
        if left:
            print(f"FAIL: the examples left files in the directory they ran from: {left} (write under out/)")
            failures += 1
        print(f"{ran} examples run, {skipped} skipped (reasons above), {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
