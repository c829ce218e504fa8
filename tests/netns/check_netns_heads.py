#!/usr/bin/env python3
"""Several hosts without a network: scripts/netns-heads.sh runs 3 synthetic
calibrated heads, `stripeline merge`, `stripeline proxy` and a consumer
(python/examples/receive_merged.py), each in its own network namespace, the
heads and the merge on one veth-bridged LAN, the consumer on another that
only the proxy joins, CURVE on every hop (when libzmq has it). Head 1 is
SIGKILLed after 160 rows and restarted where the line is two seconds later.
Checked here, at the consumer and in the merge's counters
(docs/scale-out.md, "Several hosts, tested without a network"):

- every frame of the line is one merged row, in key order, none twice;
- head 1's bit is clear exactly on the rows it never sent (frames 160 up to
  its restart) plus the rows of its restarted series that came after their
  merged row went out (counted late), and set on every other row; the other
  heads' bits are set on every row;
- per head, sent = received + lost, received = merged + late + unmatched +
  no_points + source_missing, rows = merged + absent; head 1 lost nothing,
  has two series and is absent exactly from the rows above;
- the merged Z is the scene's (5 + sin(0.2 x) mm at world X) within 0.05 mm
  where all heads are in, and the cells only head 1 sees are empty where it is not;
- no message gap or malformed message at the consumer; the proxy passed on
  every message it got and refused nobody; the consumer's namespace cannot
  reach a head.

    check_netns_heads.py SOURCE_DIR STRIPELINE HEAD_PROGRAM
Exit 0 passed, 1 failed, 77 skipped (a `SKIP: reason` line says why: not root,
no `ip netns`, no namespaces in this container, no pyzmq).
"""
import ctypes
import json
import math
import os
import re
import signal
import subprocess
import sys
import tempfile

FRAMES, RATE, HEADS, KILLED, KILL_AFTER, AHEAD = 2000, 400, 3, 1, 160, 2.0


def term_with_parent():
    """The script gets SIGTERM when this driver dies (even by SIGKILL: ctest's
    timeout), so that its trap removes the namespaces and ends its processes."""
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def facts(path):
    d = {}
    for line in open(path, encoding="utf-8"):
        for kv in line.split():
            k, _, v = kv.partition("=")
            d[k] = v
    return d


def main():
    src, stripeline, head_program = sys.argv[1:4]
    try:
        import numpy as np
        import zmq
    except ImportError as e:
        print(f"SKIP: {e.name} is not installed for {sys.executable} (apt-get install python3-zmq python3-numpy)")
        return 77
    curve = zmq.has("curve")
    failures = []

    def check(ok, what):
        if not ok:
            failures.append(what)
            print("FAIL:", what)

    # Bad usage: one line naming the value and what was expected, exit 2, before anything is made.
    script = os.path.join(src, "scripts", "netns-heads.sh")
    for bad, says in ((["--heads", "9"], "--heads '9' (expected 1..8)"), (["--kill-head", "1", "--kill-after", "7"], "--kill-after '7'"),
                      (["--kill-head", "3"], "--kill-head '3' (expected 0..2)"), (["--net", "192.168.1"], "--net/--net2")):
        r = subprocess.run([script, "--stripeline", stripeline, "--head-program", head_program] + bad, capture_output=True, text=True, timeout=30)
        check(r.returncode == 2 and says in r.stderr and len(r.stderr.strip().splitlines()) == 1,
              f"{' '.join(bad)}: exit {r.returncode}, stderr {r.stderr.strip()!r} (expected exit 2 and one line with {says!r})")
    with tempfile.TemporaryDirectory(prefix="netns-heads-test.") as out:
        cmd = [os.path.join(src, "scripts", "netns-heads.sh"), "--stripeline", stripeline, "--head-program", head_program,
               "--heads", str(HEADS), "--frames", str(FRAMES), "--rate", str(RATE), "--kill-head", str(KILLED),
               "--kill-after", str(KILL_AFTER), "--restart-ahead", str(AHEAD), "--out", out, "--timeout", "60"] + (["--curve"] if curve else [])
        print("$", " ".join(cmd), flush=True)
        p = subprocess.run(cmd, env=dict(os.environ, PYTHON=sys.executable), preexec_fn=term_with_parent,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=400)
        print(p.stdout, flush=True)
        if p.returncode == 77:
            return 77
        if p.returncode != 0:
            for name in sorted(os.listdir(out)):
                if name.endswith(".log"):
                    text = open(os.path.join(out, name), encoding="utf-8", errors="replace").read()
                    print(f"--- {name} (last 2000 characters)\n{text[-2000:]}")
            print(f"FAIL: scripts/netns-heads.sh exited {p.returncode}")
            return 1
        f = facts(os.path.join(out, "run.env"))
        restart = int(f["restart"])
        m = np.load(os.path.join(out, "merged.npz"))
        summary = json.load(open(os.path.join(out, "merged.npz.json"), encoding="utf-8"))
        counters = summary["end"]["merge"]
        late = counters["heads"][f"h{KILLED}"]["late"]
        full = (1 << HEADS) - 1
        enc, heads, z, x = m["encoder"], m["heads"].astype(np.int64), m["z"], m["x"]

        # Every frame one merged row, in key order.
        check(len(enc) == FRAMES, f"{len(enc)} merged rows at the consumer (expected {FRAMES})")
        check(np.array_equal(enc, 4 * np.arange(len(enc))), "the merged rows' encoder counts are not 0, 4, 8, ... in order")
        # The killed head's bit: clear exactly where it was down (and on its late rows), set elsewhere.
        f_idx = enc // 4
        down = (f_idx >= KILL_AFTER) & (f_idx < restart + late)
        want = np.where(down, full & ~(1 << KILLED), full)
        wrong = np.nonzero(heads != want)[0]
        check(len(wrong) == 0, f"{len(wrong)} rows with the wrong head mask, first: frame {f_idx[wrong[0]] if len(wrong) else '-'} "
                               f"mask {heads[wrong[0]] if len(wrong) else '-'} (expected {want[wrong[0]] if len(wrong) else '-'})")
        back = int(((f_idx >= restart) & (heads & (1 << KILLED) != 0)).sum())
        check(back > 0 and back == FRAMES - restart - late, f"head {KILLED} is in {back} merged rows after its restart at frame {restart} "
                                                             f"(expected {FRAMES - restart - late}: the rest of the line but {late} late ones)")
        check(restart > KILL_AFTER, f"restart frame {restart} not after the kill at {KILL_AFTER}")

        # The merge's counters, as it sent them in series-end.
        check(counters["rows"] == FRAMES, f"merge rows {counters['rows']} (expected {FRAMES})")
        for h in range(HEADS):
            c = counters["heads"][f"h{h}"]
            check(c["sent"] == c["received"] + c["lost"], f"head {h}: sent {c['sent']} != received {c['received']} + lost {c['lost']}")
            check(c["received"] == c["merged"] + c["late"] + c["unmatched"] + c["no_points"] + c["source_missing"],
                  f"head {h}: received {c['received']} is not merged + late + unmatched + no_points + source_missing ({c})")
            check(counters["rows"] == c["merged"] + c["absent"], f"head {h}: rows {counters['rows']} != merged {c['merged']} + absent {c['absent']}")
            check(c["lost"] == 0 and c["unmatched"] == 0 and c["malformed"] == 0, f"head {h}: lost/unmatched/malformed not 0 ({c})")
            if h == KILLED:
                check(c["series"] == 2, f"head {h}: {c['series']} series (expected 2: the killed one and the restarted one)")
                check(c["received"] == FRAMES - (restart - KILL_AFTER), f"head {h}: received {c['received']} (expected {FRAMES - (restart - KILL_AFTER)})")
                check(c["absent"] == restart - KILL_AFTER + late, f"head {h}: absent {c['absent']} (expected {restart - KILL_AFTER} down + {late} late)")
            else:
                check(c["received"] == FRAMES and c["absent"] == 0 and c["series"] == 1, f"head {h}: {c} (expected every row, never absent)")

        # The merged Z: the scene where every head is in; nothing where only the killed head sees and it is not in.
        shifts = [35.0 * (h - (HEADS - 1) / 2) for h in range(HEADS)]
        truth = 5.0 + np.sin(0.2 * x)
        all_in = heads == full
        zf = z[all_in]
        check(np.isfinite(zf).mean() > 0.99, f"only {np.isfinite(zf).mean():.3f} of the cells of full rows have data")
        err = np.nanmax(np.abs(zf - truth[None, :])) if zf.size else math.inf
        check(err <= 0.05, f"merged Z off the scene by {err:.4f} mm (expected at most 0.05)")
        only_killed = np.all([np.abs(x - s) > 20.2 for i, s in enumerate(shifts) if i != KILLED], axis=0) & (np.abs(x - shifts[KILLED]) < 19.8)
        zk = z[~all_in][:, only_killed]
        check(zk.size > 0 and np.isnan(zk).all(), "cells only the killed head sees hold data in rows without it")

        check(summary["message_gaps"] == 0 and summary["malformed"] == 0,
              f"consumer: {summary['message_gaps']} message gaps, {summary['malformed']} malformed")
        proxy_end = open(os.path.join(out, "proxy.log"), encoding="utf-8").read().strip().splitlines()[-1]
        pm = re.search(r"from the publisher (\d+) messages .* to consumers (\d+) messages .* consumers refused (\d+)", proxy_end)
        check(pm and pm.group(1) == pm.group(2) and pm.group(3) == "0", f"proxy: {proxy_end}")
        check(f.get("consumer_reaches_heads") == "no", "the consumer's namespace reached a head")

        # What it measured (printed, never asserted).
        arr = m["arrival_ns"]
        span = (arr[-1] - arr[0]) / 1e9 if len(arr) > 1 else 0
        hop = np.sort((arr - m["sent_ns"]) / 1e6)
        print(f"[ netns ] {len(enc)} merged rows of {HEADS} heads at {RATE} rows/s each, CURVE {'on every hop' if curve else 'off (libzmq without it)'}: "
              f"{len(enc) / span if span else 0:.0f} merged rows/s at the consumer over {span:.2f} s; "
              f"merge send -> consumer (through the proxy, 2 veth hops) p50 {hop[len(hop) // 2]:.2f} ms, p99 {hop[int(len(hop) * 0.99)]:.2f} ms; "
              f"in the merge p50 {counters['latency_us']['p50']:.0f} us, p99 {counters['latency_us']['p99']:.0f} us; merged Z off the scene by at most {err:.4f} mm")
        print(f"[ netns ] head {KILLED} killed after {KILL_AFTER} rows (line at frame {f['line_at_kill']}), restarted at frame {restart}, "
              f"publishing again {f['restart_gap_s']} s after the kill; absent from {counters['heads'][f'h{KILLED}']['absent']} merged rows "
              f"({restart - KILL_AFTER} never sent + {late} late); wall {f['wall_s']} s")
    if failures:
        print(f"FAILED: {len(failures)} check(s)")
        return 1
    print("passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
