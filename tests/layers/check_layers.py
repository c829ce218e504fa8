#!/usr/bin/env python3
"""The layer rule of stripeline (docs/architecture.md), checked on the sources.

Every file in a layer folder may include headers of its own layer and of the
layers below it, never of a layer above; and no two folders may include each
other (no cycle). The order, bottom first:

    core, kernels, io, acquisition, stages, pipeline, calibration, measure, streaming, app, daemon, tools

Sub-folders belong to their top folder's layer (core/cuda is core, stages/cuda
is stages). Only quoted includes of project headers are read; system headers
(<...>) are not the rule's business. CMake enforces the same order with one
include root per layer target; this check also covers files a build
configuration leaves out (CUDA sources without nvcc, Aravis sources without it).

    check_layers.py [SOURCE_DIR]      exit 0, or 1 with one line per violation
    check_layers.py --self-test       shows the checker failing where it must
"""
import os
import re
import sys
import tempfile

# Layers, bottom first. Folders in one string separated by '|' share a rank
# (siblings that must not include each other either way: caught as a cycle).
ORDER = ["core", "kernels", "io", "acquisition", "stages", "pipeline", "calibration", "measure", "streaming", "app", "daemon", "tools"]
EXTENSIONS = (".h", ".hpp", ".cpp", ".cc", ".cu", ".cuh")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def ranks_of(order):
    ranks = {}
    for rank, group in enumerate(order):
        for folder in group.split("|"):
            ranks[folder] = rank
    return ranks


def scan(root, order):
    """Returns (violations, edges): violations as lines, edges as {(from, to): first place}."""
    ranks = ranks_of(order)
    violations, edges = [], {}
    for folder in ranks:
        base = os.path.join(root, folder)
        for dirpath, _, files in os.walk(base):
            for name in sorted(files):
                if not name.endswith(EXTENSIONS):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root)
                with open(path, encoding="utf-8", errors="replace") as f:
                    for number, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        target = m.group(1)
                        if target.startswith(".."):
                            violations.append(f"{rel}:{number}: includes \"{target}\" by a relative path up the tree "
                                              f"(expected \"<folder>/<file>\" of its own layer or one below)")
                            continue
                        first = target.split("/")[0]
                        if "/" not in target or first not in ranks:
                            continue  # same folder, or not a layer (generated, third party)
                        if first != folder:
                            edges.setdefault((folder, first), f"{rel}:{number}")
                        if ranks[first] > ranks[folder]:
                            violations.append(f"{rel}:{number}: {folder} includes \"{target}\" of {first}, a higher layer "
                                              f"(order: {' -> '.join(order)})")
    return violations, edges


def cycles(edges):
    """Folder cycles, each as a list of folders, found by depth-first search."""
    graph = {}
    for (a, b) in edges:
        graph.setdefault(a, set()).add(b)
    found, state = [], {}

    def visit(node, stack):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                found.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, stack)
        stack.pop()
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [])
    return found


def check(root, order=ORDER):
    violations, edges = scan(root, order)
    for cycle in cycles(edges):
        places = ", ".join(edges[(a, b)] for a, b in zip(cycle, cycle[1:]))
        violations.append(f"include cycle between folders: {' -> '.join(cycle)} ({places})")
    return violations


def self_test():
    def tree(files):
        d = tempfile.mkdtemp(prefix="check_layers_")
        for path, text in files.items():
            full = os.path.join(d, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w") as f:
                f.write(text)
        return d

    good = tree({"core/a.h": "#pragma once\n", "kernels/b.h": '#include "core/a.h"\n#include <vector>\n',
                 "stages/cuda/c.cpp": '#include "kernels/b.h"\n#include "stages/s.h"\n', "stages/s.h": '#include "stages/cuda/c.h"\n'})
    failures = []
    if check(good):
        failures.append(f"a clean tree was refused: {check(good)}")
    reach_back = tree({"core/a.h": "", "pipeline/p.h": "", "kernels/b.h": '#include "core/a.h"\n#include "pipeline/p.h"\n'})
    v = check(reach_back)
    if not any("kernels/b.h:2" in x and "higher layer" in x for x in v):
        failures.append(f"a reach-back (kernels -> pipeline) was not reported: {v}")
    relative = tree({"io/r.cpp": '#include "../daemon/d.h"\n'})
    if not any("relative path" in x for x in check(relative)):
        failures.append("a relative include up the tree was not reported")
    # Two sibling folders of one rank including each other: only the cycle check sees it.
    siblings = ["core", "io|acquisition", "tools"]
    cycle = tree({"io/x.h": '#include "acquisition/y.h"\n', "acquisition/y.h": '#include "io/x.h"\n'})
    v = check(cycle, siblings)
    if not any("include cycle" in x and "acquisition" in x and "io" in x for x in v):
        failures.append(f"a cycle between io and acquisition was not reported: {v}")
    for f in failures:
        print(f"check_layers self-test: FAILED: {f}")
    if not failures:
        print("check_layers self-test: the checker accepts a clean tree and reports a reach-back, a relative include and a cycle")
    return 1 if failures else 0


def main(argv):
    if len(argv) > 1 and argv[1] == "--self-test":
        return self_test()
    root = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    violations = check(root)
    for v in violations:
        print(v)
    if violations:
        print(f"check_layers: {len(violations)} violation(s) of the layer order")
        return 1
    print(f"check_layers: no include goes up the layer order, no cycle between folders ({' -> '.join(ORDER)})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
