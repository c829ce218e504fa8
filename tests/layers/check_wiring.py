#!/usr/bin/env python3
"""One wiring (docs/architecture.md, "app/: the run session"): the programs in
tools/ and the daemon in daemon/ open no source, build no output sinks and
construct no pipeline themselves; app/run_session.h does that for them.

A line of tools/ or daemon/ that calls make_source(...), make_output_sinks(...)
or constructs a Pipeline (`Pipeline p(...)`, `Pipeline(...)`,
`make_unique<Pipeline>`) is a violation, unless its file is in ALLOWED with
the reason it is not wired through the session yet.

    check_wiring.py [SOURCE_DIR]      exit 0, or 1 with one line per violation
    check_wiring.py --self-test       shows the checker failing where it must
"""
import os
import re
import sys
import tempfile

FOLDERS = ("tools", "daemon")
EXTENSIONS = (".h", ".hpp", ".cpp", ".cc", ".cu", ".cuh")
CALLS = [
    (re.compile(r"\bmake_source\s*\("), "opens a source (make_source)"),
    (re.compile(r"\bmake_output_sinks\s*\("), "builds output sinks (make_output_sinks)"),
    (re.compile(r"\bPipeline\s*[({]"), "constructs a Pipeline"),
    (re.compile(r"\bPipeline\s+[A-Za-z_]\w*\s*[({]"), "constructs a Pipeline"),
    (re.compile(r"make_(unique|shared)\s*<\s*Pipeline\s*>"), "constructs a Pipeline"),
]
# Files not wired through the run session, each with its reason. The
# commands that process (run, replay, camera runs) and each daemon generation
# must never appear here. Empty: the benchmarks run the engine through
# run_engine(), the subscriber's and the daemon's per-scan outputs come from
# the session (open_outputs(), open_scan_outputs()).
ALLOWED = {}
COMMENT = re.compile(r"//.*$")


def scan(root, allowed):
    violations = []
    for folder in FOLDERS:
        for dirpath, _, files in os.walk(os.path.join(root, folder)):
            for name in sorted(files):
                if not name.endswith(EXTENSIONS):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root).replace(os.sep, "/")
                if rel in allowed:
                    continue
                with open(path, encoding="utf-8", errors="replace") as f:
                    for number, line in enumerate(f, 1):
                        code = COMMENT.sub("", line)
                        for pattern, what in CALLS:
                            if pattern.search(code):
                                violations.append(f"{rel}:{number}: {what}; expected the run session (app/run_session.h) "
                                                  f"to do it: {line.strip()}")
                                break
    return violations


def self_test():
    """The checker must flag each kind of call, and pass what only names the types."""
    bad = {
        "tools/cmd_x.cpp": "auto s = make_source(config);\n",
        "tools/cmd_y.cpp": "OutputSinks k = make_output_sinks(out, o);\n",
        "daemon/d.cpp": "  Pipeline pipeline(options);\n",
        "daemon/e.cpp": "  auto p = std::make_unique<Pipeline>(o);\n",
        "tools/cmd_z.cpp": "  Pipeline(po).run(src, {&sink});\n",
    }
    good = {
        "tools/ok.cpp": "Pipeline& p = session.pipeline();\nPipelineOptions o;\n// make_source(config) in a comment\nPipeline* p_ = nullptr;\n",
        "app/run_session.cpp": "opened_ = make_source(config_);\n",  # app/ is where it belongs
    }
    failures = []
    with tempfile.TemporaryDirectory() as root:
        for rel, text in {**bad, **good}.items():
            os.makedirs(os.path.join(root, os.path.dirname(rel)), exist_ok=True)
            with open(os.path.join(root, rel), "w") as f:
                f.write(text)
        found = scan(root, {})
        for rel in bad:
            if not any(v.startswith(rel + ":") for v in found):
                failures.append(f"self-test: {rel} was not flagged: {bad[rel].strip()}")
        for v in found:
            if not any(v.startswith(rel + ":") for rel in bad):
                failures.append(f"self-test: flagged wrongly: {v}")
        if scan(root, {rel: "test" for rel in bad}):
            failures.append("self-test: an allowed file was flagged")
    for f in failures:
        print(f)
    if not failures:
        print(f"self-test: {len(bad)} violations flagged, {len(good)} clean files passed")
    return 1 if failures else 0


def main(argv):
    if len(argv) > 1 and argv[1] == "--self-test":
        return self_test()
    root = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    violations = scan(root, ALLOWED)
    for v in violations:
        print(v)
    if not violations:
        print(f"wiring: {', '.join(FOLDERS)} open no source, build no sinks and construct no pipeline "
              f"({len(ALLOWED)} files allowed with a reason)")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
