#!/usr/bin/env python3
"""Acquisition throughput of the daemon with 0 and N live viewers (issue 27).

Starts `stripeline daemon` on loopback (the synthetic scanner of
tests/browser/viewer_daemon.py, 2048 columns, CPU backend, unpaced:
daemon.rate = 0, so it processes as fast as the machine allows), then
measures stripeline_profiles_emitted_total over SECONDS in five phases: no
viewer; N event-stream clients (sockets reading GET /events and counting its
row events: the daemon's own cost of N viewers, as when their browsers run
on other machines); no viewer; N viewers in headless chromium on this machine
(tabs with the page at / open and drawing: the browsers' CPU is taken from
the daemon's too); no viewer. Prints rows/s per phase and the update rate
each viewer counted. --rate paces the source (0: as fast as it goes).
--heads N (N > 1): a daemon of N heads ([[head]], each the same synthetic
scanner, its own pipeline and stream; tests/browser/viewer_daemon.py
heads_config); rows/s is then the sum over the heads, and each viewer's
update rate is given per head (a panel each).
Bounded: about 5 x SECONDS plus start-up. Loopback only.

Usage: bench/viewer_throughput.py [--binary build/stripeline] [--viewers 10] [--seconds 20] [--rate 0] [--heads 1]
Needs chromium and python3-websocket (scripts/setup-debian.sh --tests) for the browser phase.
"""
import argparse
import os
import platform
import socket
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "browser"))
import cdp  # noqa: E402
from viewer_daemon import Daemon, free_port, heads_config, metric, metric_sum  # noqa: E402


def rows_per_second(port, seconds, pump=None):
    a, t0 = metric_sum(port, "stripeline_profiles_emitted_total"), time.monotonic()
    if pump:
        pump(seconds)
    else:
        time.sleep(seconds)
    b, t1 = metric_sum(port, "stripeline_profiles_emitted_total"), time.monotonic()
    return (b - a) / (t1 - t0)


class StreamClients:
    """N plain event-stream clients of GET /events, each counting its row events on a thread."""

    def __init__(self, port, n):
        self.stop, self.rows, self.threads = False, [0] * n, []
        for i in range(n):
            t = threading.Thread(target=self.run, args=(port, i), daemon=True)
            t.start()
            self.threads.append(t)

    def run(self, port, i):
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(b"GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            tail = b""
            while not self.stop:
                data = s.recv(1 << 16)
                if not data:
                    return
                tail += data
                self.rows[i] += tail.count(b"event: row\n")
                tail = tail[tail.rfind(b"\n"):] if b"\n" in tail else tail

    def close(self):
        self.stop = True
        for t in self.threads:
            t.join(5)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--binary", default="build/stripeline")
    ap.add_argument("--viewers", type=int, default=10)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--rate", type=float, default=0.0)
    ap.add_argument("--heads", type=int, default=1)
    a = ap.parse_args()
    names = [f"h{i + 1}" for i in range(a.heads)]
    updates = "window.stripelineViewer.order.map((h) => window.stripelineViewer.heads[h].updates).concat([performance.now()])"
    with tempfile.TemporaryDirectory(prefix="stripeline-viewer-bench-") as tmp:
        port = free_port()
        text = heads_config(tmp, port, a.rate, [(n, 2048, 52) for n in names], max(32, a.viewers)) if a.heads > 1 else None
        with Daemon(a.binary, tmp, port, rate=a.rate, max_viewers=max(32, a.viewers), text=text):
            time.sleep(3.0)  # warm up
            base = rows_per_second(port, a.seconds)
            clients = StreamClients(port, a.viewers)
            time.sleep(1.0)
            r0, t0 = list(clients.rows), time.monotonic()
            streamed = rows_per_second(port, a.seconds)
            stream_rates = [(b - x) / (time.monotonic() - t0) for x, b in zip(r0, clients.rows)]
            clients.close()
            time.sleep(1.0)
            between = rows_per_second(port, a.seconds)
            with cdp.Browser(width=1280, height=900, extra_args=[f"--host-resolver-rules={cdp.Browser.VIEWER_HOSTS}"]) as browser:
                pages = [browser.new_page(f"http://v{i}.viewer.test:{port}/") for i in range(a.viewers)]  # a host name each
                for i, p in enumerate(pages):
                    p.wait_for(f"window.stripelineViewer && window.stripelineViewer.order.length === {a.heads} && "
                               "Object.values(window.stripelineViewer.heads).every((h) => h.updates >= 3)", 120, f"viewer {i + 1}")
                browser.pump(2.0)
                u0 = [p.evaluate(updates) for p in pages]
                loaded = rows_per_second(port, a.seconds, pump=browser.pump)
                u1 = [p.evaluate(updates) for p in pages]
                # per viewer and head (panel): updates/s
                rates = [[(b[k] - x[k]) / ((b[-1] - x[-1]) / 1000.0) for k in range(len(b) - 1)] for x, b in zip(u0, u1)]
                dropped = metric(port, "stripeline_viewer_messages_dropped_total")
                skipped = metric(port, "stripeline_viewer_rows_skipped_total")
            time.sleep(2.0)
            after = rows_per_second(port, a.seconds)
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.processor())
    print(f"machine: {platform.node()}, {os.cpu_count()} CPUs ({cpu}), {platform.platform()}")
    pace = f"paced at {a.rate:.0f} frames/s" if a.rate else "unpaced (daemon.rate = 0)"
    heads = f"a daemon of {a.heads} heads ([[head]], each" if a.heads > 1 else "one head (each"
    print(f"setting: {heads} synthetic 2048 x 52 Mono8, CPU backend, {pace}, publisher on, no files); {a.seconds:.0f} s per phase")
    print(f"load average (1, 5, 15 min) at the end: {' '.join(open('/proc/loadavg').read().split()[:3])} (other builds share this machine)")
    if a.heads > 1:
        print("rows/s: the sum over the heads")
    print(f"rows/s, no viewer:                         {base:8.0f}")
    print(f"rows/s, {a.viewers} event-stream clients:           {streamed:8.0f}  ({(streamed / base - 1) * 100:+.1f} %)")
    print(f"rows/s, no viewer:                         {between:8.0f}")
    print(f"rows/s, {a.viewers} chromium viewers on this host: {loaded:8.0f}  ({(loaded / between - 1) * 100:+.1f} %)")
    print(f"rows/s, no viewer:                         {after:8.0f}")
    print("row events/s each stream client got" + (" (all heads together)" if a.heads > 1 else "") + ":  " + " ".join(f"{r:.1f}" for r in stream_rates))
    print("updates/s each chromium viewer counted" + (" (per head: " + "/".join(names) + ")" if a.heads > 1 else "") + ": " +
          " ".join("/".join(f"{x:.1f}" for x in r) for r in rates))
    print(f"viewer messages dropped (slow viewers): {dropped:.0f}; rows the tap skipped (hand-off busy): {skipped:.0f}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except cdp.Missing as e:
        print(f"SKIP: {e}")
        sys.exit(77)
