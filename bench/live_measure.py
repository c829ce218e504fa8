#!/usr/bin/env python3
"""The live measuring figure (docs/measure.md "Live"): `stripeline daemon` on its
synthetic head, paced at RATE rows/s, with and without a [measure] job, each for
SECONDS; prints the rows/s the daemon delivered (profiles emitted, from /metrics,
over the measured window), the process' CPU seconds, and, with the job, how far
behind each part's results came out: the newest profile row received on the
stream when the part's measurement message arrived, minus the part's last row,
against the part's length (rows). Runs A/B alternately REPEATS times.

    python3 bench/live_measure.py build/stripeline [--rate 10000] [--width 256] [--height 32]
        [--seconds 20] [--repeats 2] [--backend cpu] [--batch 50] [--pitch 1000] [--length 500]

Needs python3-zmq; uses the package in python/.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import stripeline  # noqa: E402
import zmq  # noqa: E402

JOB = """[job]
name = "bench"
units = "px"
[detection]
mode = "encoder"
pitch = {pitch}
length = {length}
[[tool]]
name = "top"
type = "height"
region = {{ anchor = "scan", x = [0.0, {xmax}] }}
limits = {{ mean = [-1000000.0, 1000000.0] }}
[[tool]]
name = "flat"
type = "flatness"
region = {{ anchor = "scan", x = [0.0, {xmax}] }}
[[tool]]
name = "vol"
type = "volume"
"""


def metric(port, name):
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    m = re.search(rf"^{re.escape(name)} (\S+)$", text, re.M)
    return float(m.group(1)) if m else float("nan")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run(args, with_job, tmp):
    job = os.path.join(tmp, "job.toml")
    with open(job, "w") as f:
        f.write(JOB.format(pitch=float(args.pitch), length=float(args.length), xmax=float(args.width - 1)))
    cfg = os.path.join(tmp, "d.toml")
    with open(cfg, "w") as f:
        f.write(f"[synthetic]\nwidth = {args.width}\nframe_height = {args.height}\nframes = 0\n"
                f"[processing]\nbackend = \"{args.backend}\"\nbatch_frames = {args.batch}\n"
                f"[output]\ndir = \"{tmp}/scans\"\nply = \"\"\nheightmap = \"\"\npreview = \"\"\nsummary = \"\"\n"
                "[publisher]\nenabled = true\nendpoint = \"tcp://127.0.0.1:*\"\nrows_per_message = 20\nsend_hwm = 100000\n"
                f"[daemon]\nscan_rows = 10000000\nrate = {args.rate}\n[http]\nport = 0\nviewer = false\n"
                + (f"[measure]\njob = \"{job}\"\nqueue_parts = 64\n" if with_job else ""))
    proc = subprocess.Popen([args.binary, "daemon", "--config", cfg], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    log = []
    threading.Thread(target=lambda: log.extend(iter(proc.stdout.readline, "")), daemon=True).start()
    try:
        deadline = time.monotonic() + 60
        endpoint = port = None
        while (endpoint is None or port is None) and time.monotonic() < deadline:
            text = "".join(log)
            m1 = re.search(r"publisher: bound (tcp://127\.0\.0\.1:\d+)", text)
            m2 = re.search(r"http: listening on http://127\.0\.0\.1:(\d+)", text)
            endpoint, port = (m1.group(1) if m1 else None), (int(m2.group(1)) if m2 else None)
            time.sleep(0.05)
        if endpoint is None or port is None:
            raise RuntimeError("the daemon did not start:\n" + "".join(log))
        lags, lengths = [], []
        stop = threading.Event()

        def receive():
            ctx = zmq.Context.instance()
            sock = ctx.socket(zmq.SUB)
            sock.connect(endpoint)
            for t in ("profile", "measurement"):
                sock.setsockopt_string(zmq.SUBSCRIBE, t)
            newest = -1
            while not stop.is_set():
                if not sock.poll(100):
                    continue
                msg = stripeline.decode(sock.recv_multipart())
                if isinstance(msg, stripeline.Rows):
                    newest = max(newest, int(msg.frame_ids[-1]))
                elif isinstance(msg, stripeline.Measurement) and newest >= 0:
                    lags.append(newest - msg.frames[1])
                    lengths.append(msg.frames[1] - msg.frames[0] + 1)
            sock.close(0)

        rx = threading.Thread(target=receive)
        rx.start()
        time.sleep(3)  # warm up
        p0, c0, t0 = metric(port, "stripeline_profiles_emitted_total"), cpu_seconds(proc.pid), time.monotonic()
        load0 = os.getloadavg()[0]
        time.sleep(args.seconds)
        p1, c1, t1 = metric(port, "stripeline_profiles_emitted_total"), cpu_seconds(proc.pid), time.monotonic()
        parts = metric(port, 'stripeline_measure_parts_total{decision="pass"}') if with_job else 0
        dropped = metric(port, "stripeline_measure_parts_dropped_total") if with_job else 0
        stop.set()
        rx.join()
        return dict(rows_per_s=(p1 - p0) / (t1 - t0), cpu=(c1 - c0) / (t1 - t0), load=(load0 + os.getloadavg()[0]) / 2,
                    parts=parts, dropped=dropped, lags=lags, lengths=lengths)
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--rate", type=float, default=10000.0)
    ap.add_argument("--width", type=int, default=256)
    ap.add_argument("--height", type=int, default=32)
    ap.add_argument("--pitch", type=int, default=1000)
    ap.add_argument("--length", type=int, default=500)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--batch", type=int, default=50, help="processing.batch_frames")
    args = ap.parse_args()
    print(f"stripeline daemon, synthetic {args.width}x{args.height} Mono8, backend {args.backend}, paced at {args.rate:.0f} rows/s; "
          f"job: encoder-mode parts of {args.length} rows every {args.pitch}, tools height + flatness + volume; {args.seconds:.0f} s windows")
    print(f"host: {os.uname().nodename}, {os.cpu_count()} CPUs")
    for r in range(args.repeats):
        for with_job in (False, True):
            with tempfile.TemporaryDirectory() as tmp:
                res = run(args, with_job, tmp)
            line = (f"run {r + 1} {'with job   ' if with_job else 'without job'}: {res['rows_per_s']:9.0f} rows/s, "
                    f"daemon CPU {res['cpu']:.2f} cores = {1e6 * res['cpu'] / res['rows_per_s']:.0f} us per row, load average {res['load']:.1f}")
            if with_job:
                lags = sorted(res["lags"])
                if lags:
                    within = sum(1 for lag, n in zip(res["lags"], res["lengths"]) if lag <= n)
                    line += (f"; parts measured {res['parts']:.0f}, dropped {res['dropped']:.0f}; results out after the part's last row: "
                             f"median {lags[len(lags) // 2]} rows, max {lags[-1]} rows (part length {res['lengths'][0]} rows); "
                             f"{within}/{len(lags)} within one part length")
            print(line, flush=True)


if __name__ == "__main__":
    main()
