#!/usr/bin/env python3
"""The daemon's /healthz latency while other clients try to starve it (issue 14).

Starts `stripeline daemon` on loopback (synthetic source, publisher on,
ephemeral ports), opens IDLE idle keep-alive connections (half of them after
one HTTP/1.1 request, half never sending a byte) and SLOW slowloris clients
(a request head sent one header line every 100 ms, reconnecting whenever the
server closes them), then probes GET /healthz PROBES times, one fresh
connection each, every INTERVAL seconds, each bounded by PROBE_TIMEOUT.
Prints answered/total and p50/p90/p99/max of the answered probes (a probe not
answered counts as above every answered one in the percentiles). Bounded:
at most PROBES x (PROBE_TIMEOUT + INTERVAL) plus start-up and shutdown.
Loopback only. Standard library only.
"""
import argparse
import os
import platform
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time


def config(tmp):
    return f"""[synthetic]
width = 256
frame_height = 32
frames = 0
[processing]
backend = "cpu"
batch_frames = 20
[output]
dir = "{tmp}/scans"
ply = ""
heightmap = ""
preview = ""
summary = ""
[publisher]
enabled = true
endpoint = "tcp://127.0.0.1:*"
[daemon]
scan_rows = 100000
rate = 2000.0
[http]
port = 0
"""


def get(port, path, timeout):
    """(status, seconds) or (None, seconds) when not answered within timeout."""
    t0 = time.monotonic()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.settimeout(max(0.001, timeout - (time.monotonic() - t0)))
            s.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
            data = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
                m = re.search(rb"Content-Length: *(\d+)", data, re.I)
                head = data.find(b"\r\n\r\n")
                if m and head >= 0 and len(data) >= head + 4 + int(m.group(1)):
                    break
            status = int(data[9:12]) if data.startswith(b"HTTP/1.") else None
            return status, time.monotonic() - t0
    except (OSError, ValueError):
        return None, time.monotonic() - t0


class Load:
    def __init__(self, port, idle, slow):
        self.port, self.stop, self.reconnects = port, False, 0
        self.idle_reopens = 0
        self.idle = [self.open_idle(i % 2 == 1) for i in range(idle)]
        self.slow = [self.open_slow() for _ in range(slow)]
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def open_idle(self, with_request):
        """A connection left open and silent, after one kept-alive request or none."""
        try:
            s = socket.create_connection(("127.0.0.1", self.port), timeout=2)
            if with_request:
                s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                s.settimeout(0.5)  # a starved server never answers: do not wait long
                try:
                    s.recv(65536)
                except OSError:
                    pass
            s.setblocking(False)
            return (s, with_request)
        except OSError:
            return (None, with_request)

    def open_slow(self):
        try:
            s = socket.create_connection(("127.0.0.1", self.port), timeout=0.5)
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            return s
        except OSError:
            return None

    def run(self):
        while not self.stop:
            # Idle connections the server closed (its idle timeout) are opened again: the load stays.
            for i, (s, with_request) in enumerate(self.idle):
                closed = s is None
                if s is not None:
                    try:
                        closed = s.recv(65536) == b""
                    except BlockingIOError:
                        pass
                    except OSError:
                        closed = True
                if closed:
                    if s is not None:
                        s.close()
                    self.idle[i] = self.open_idle(with_request)
                    self.idle_reopens += 1
            for i, s in enumerate(self.slow):
                try:
                    if s is None:
                        raise OSError
                    s.sendall(b"X-Slow: a\r\n")
                except OSError:
                    if s is not None:
                        s.close()
                    self.slow[i] = self.open_slow()
                    self.reconnects += 1
            time.sleep(0.1)

    def close(self):
        self.stop = True
        self.thread.join(5)
        for s in [s for s, _ in self.idle if s] + [s for s in self.slow if s]:
            s.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--binary", default="build/stripeline")
    ap.add_argument("--idle", type=int, default=200)
    ap.add_argument("--slow", type=int, default=50)
    ap.add_argument("--probes", type=int, default=200)
    ap.add_argument("--interval", type=float, default=0.02)
    ap.add_argument("--probe-timeout", type=float, default=5.0)
    ap.add_argument("--label", default="")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        with open(f"{tmp}/d.toml", "w") as f:
            f.write(config(tmp))
        log = open(f"{tmp}/daemon.log", "w+")
        d = subprocess.Popen([a.binary, "daemon", "--config", f"{tmp}/d.toml"], stdout=log, stderr=log)
        try:
            port, deadline = None, time.monotonic() + 30
            while time.monotonic() < deadline and port is None:
                time.sleep(0.05)
                m = re.search(r"http: listening on http://127\.0\.0\.1:(\d+)", open(f"{tmp}/daemon.log").read())
                port = int(m.group(1)) if m else None
            if port is None:
                sys.exit("the daemon did not start:\n" + open(f"{tmp}/daemon.log").read())
            while time.monotonic() < deadline and get(port, "/healthz", 2)[0] != 200:
                time.sleep(0.05)
            base = [get(port, "/healthz", a.probe_timeout) for _ in range(20)]
            load = Load(port, a.idle, a.slow)
            time.sleep(0.5)  # let the load settle (accepted, requests under way)
            results = []
            t_start = time.monotonic()
            for _ in range(a.probes):
                results.append(get(port, "/healthz", a.probe_timeout))
                time.sleep(a.interval)
            elapsed = time.monotonic() - t_start
            metrics = get(port, "/metrics", a.probe_timeout)
            reconnects, idle_reopens = load.reconnects, load.idle_reopens
            load.close()
        finally:
            d.send_signal(signal.SIGTERM)
            try:
                d.wait(30)
            except subprocess.TimeoutExpired:
                d.kill()
                d.wait()

    def summary(rs):
        ok = sorted(t for s, t in rs if s == 200)
        n = len(rs)
        ranked = ok + [float("inf")] * (n - len(ok))

        def pct(q):
            v = ranked[min(n - 1, int(q * n))]
            return "not answered" if v == float("inf") else f"{v * 1000:.2f} ms"

        mx = f"{ok[-1] * 1000:.2f} ms" if ok else "-"
        return f"{len(ok)}/{n} answered 200; p50 {pct(0.5)}, p90 {pct(0.9)}, p99 {pct(0.99)}, max answered {mx}"

    version = subprocess.run([a.binary, "--version"], capture_output=True, text=True).stdout.splitlines()
    print(f"# /healthz under starvation load {a.label}".rstrip())
    print(f"date: {time.strftime('%Y-%m-%d %H:%M:%S %Z')}; host: {platform.node()}, {os.cpu_count()} CPUs, {platform.platform()}")
    print(f"binary: {a.binary} ({version[0] if version else '?'})")
    print(f"load: {a.idle} idle keep-alive connections ({a.idle - a.idle // 2} silent, {a.idle // 2} after one request; reopened when "
          f"the server closes them: {idle_reopens} reopens), {a.slow} slowloris clients (a header line every 100 ms, reconnecting "
          f"when closed: {reconnects} reconnects)")
    print(f"probes: {a.probes} x GET /healthz, a new connection each, every {a.interval * 1000:.0f} ms, timeout {a.probe_timeout} s; "
          f"{elapsed:.1f} s")
    print(f"without load (20 probes): {summary(base)}")
    print(f"under load:               {summary(results)}")
    print(f"/metrics after the load: {'answered' if metrics[0] == 200 else 'not answered'}")


if __name__ == "__main__":
    main()
