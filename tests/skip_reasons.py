#!/usr/bin/env python3
"""Print every skipped test of the last ctest run with its reason.

ctest lists a skipped test as `***Skipped` / "did not run (Skipped)" and keeps
its output, where GoogleTest (GTEST_SKIP() << reason, e.g. tests/gpu_test.h)
and our scripts (exit 77 after a `SKIP: reason` line) say why, only in
Testing/Temporary/LastTest.log: --output-on-failure does not print it for a
skip. scripts/test.sh runs this after ctest:
    python3 tests/skip_reasons.py build
"""
import glob
import os
import re
import sys


def reason(output):
    m = re.search(r"^[^\n]*: Skipped\n(.+)$", output, re.M)  # GoogleTest: file:line: Skipped / the message
    if m:
        return m.group(1).strip()
    m = re.search(r"^\s*(?:SKIP|skip)\b:?\s*(.+)$", output, re.M)  # our scripts
    if m:
        return m.group(1).strip()
    lines = [l for l in output.strip().splitlines() if l.strip()]
    return lines[-1].strip() if lines else "(no output)"


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    log = os.path.join(build, "Testing", "Temporary", "LastTest.log")
    if not os.path.exists(log):
        print(f"skip_reasons: no {log} (run ctest first)")
        return 0
    text = open(log, encoding="utf-8", errors="replace").read()
    skipped = []
    for block in re.split(r"\n(?=\d+/\d+ Testing: )", text):
        m = re.match(r"\d+/\d+ Testing: (\S+)", block)
        if not m:
            continue
        head, _, tail = block.partition("<end of output>")
        if not re.search(r"Skip regular expression found|Test Skipped|\bSkipped\b", tail):
            continue
        output = head.split("Output:\n", 1)[-1]
        skipped.append((m.group(1), reason(output)))
    if skipped:
        print(f"{len(skipped)} test(s) skipped, and why:")
        for name, why in skipped:
            print(f"  {name}: {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
