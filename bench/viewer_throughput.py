#!/usr/bin/env python3
"""Acquisition throughput of the daemon with 0 and N live viewers (issue 27).

Starts `stripeline daemon` on loopback (the synthetic scanner of
tests/browser/viewer_daemon.py, 2048 columns, CPU backend, unpaced:
daemon.rate = 0, so it processes as fast as the machine allows), then
measures stripeline_profiles_emitted_total over SECONDS in three phases: no
viewer, N viewers (headless chromium tabs on this machine, each with the page
at / open and drawing), no viewer again. Prints rows/s per phase and the
update rate each viewer counted in its page. The browsers run on the same
machine as the daemon: their CPU is part of what the viewers cost here.
Bounded: about 3 x SECONDS plus start-up. Loopback only.

Usage: bench/viewer_throughput.py [--binary build/stripeline] [--viewers 10] [--seconds 20]
Needs chromium and python3-websocket (scripts/setup-debian.sh --tests).
"""
import argparse
import os
import platform
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "browser"))
import cdp  # noqa: E402
from viewer_daemon import Daemon, free_port, metric  # noqa: E402


def rows_per_second(port, seconds, pump=None):
    a, t0 = metric(port, "stripeline_profiles_emitted_total"), time.monotonic()
    if pump:
        pump(seconds)
    else:
        time.sleep(seconds)
    b, t1 = metric(port, "stripeline_profiles_emitted_total"), time.monotonic()
    return (b - a) / (t1 - t0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--binary", default="build/stripeline")
    ap.add_argument("--viewers", type=int, default=10)
    ap.add_argument("--seconds", type=float, default=20.0)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="stripeline-viewer-bench-") as tmp:
        port = free_port()
        with Daemon(a.binary, tmp, port, rate=0.0, max_viewers=max(32, a.viewers)):
            time.sleep(3.0)  # warm up
            base = rows_per_second(port, a.seconds)
            with cdp.Browser(width=1280, height=900, extra_args=[f"--host-resolver-rules={cdp.Browser.VIEWER_HOSTS}"]) as browser:
                pages = [browser.new_page(f"http://v{i}.viewer.test:{port}/") for i in range(a.viewers)]  # a host name each
                for i, p in enumerate(pages):
                    p.wait_for("window.stripelineViewer && window.stripelineViewer.updates >= 3", 120, f"viewer {i + 1}")
                browser.pump(2.0)
                u0 = [p.evaluate("[window.stripelineViewer.updates, performance.now()]") for p in pages]
                loaded = rows_per_second(port, a.seconds, pump=browser.pump)
                u1 = [p.evaluate("[window.stripelineViewer.updates, performance.now()]") for p in pages]
                rates = [(b[0] - x[0]) / ((b[1] - x[1]) / 1000.0) for x, b in zip(u0, u1)]
                dropped = metric(port, "stripeline_viewer_messages_dropped_total")
                skipped = metric(port, "stripeline_viewer_rows_skipped_total")
            time.sleep(2.0)
            after = rows_per_second(port, a.seconds)
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.processor())
    print(f"machine: {platform.node()}, {os.cpu_count()} CPUs ({cpu}), {platform.platform()}")
    print(f"setting: synthetic 2048 x 52 Mono8, CPU backend, unpaced (daemon.rate = 0), publisher on, no files; {a.seconds:.0f} s per phase")
    print(f"rows/s with 0 viewers:            {base:10.0f}")
    print(f"rows/s with {a.viewers} viewers:          {loaded:10.0f}  ({(loaded / base - 1) * 100:+.1f} %)")
    print(f"rows/s with 0 viewers again:      {after:10.0f}")
    print("updates/s each viewer counted:    " + " ".join(f"{r:.1f}" for r in rates))
    print(f"viewer messages dropped (slow viewers): {dropped:.0f}; rows the tap skipped (hand-off busy): {skipped:.0f}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except cdp.Missing as e:
        print(f"SKIP: {e}")
        sys.exit(77)
