"""A `stripeline daemon` on loopback for the live viewer's tests and benchmark.

The synthetic scanner with a clean scene (no occlusion, reflection or second
stripes, little noise), the publisher on an ephemeral port, no files, HTTP on
a port of the caller's choosing (so that a restarted daemon comes back where
the page waits for it).
"""
import os
import re
import signal
import socket
import subprocess
import time

# The synthetic scene (acquisition/synthetic_scanner.cpp, surface() and
# truth_of()): the stripe centre in column x of frame f is at row
#   lo + (hi - lo) * surface(u, p),  u = (x + 0.5) / width, p = (f % 600) / 600,
# lo = 4 * beam_sigma + 2, hi = frame_height - 1 - lo. Between u = 0.25 and
# 0.55 the surface is the base 0.18 + 0.08 u, plus a raised block of 0.28 for
# 0.32 <= u < 0.45 while 0.10 <= p < 0.45: a step of known height and place.
WIDTH, FRAME_HEIGHT, BEAM_SIGMA, PERIOD = 2048, 52, 1.4, 600
BLOCK_U, BLOCK_END_U, BLOCK_HEIGHT, BLOCK_P = 0.32, 0.45, 0.28, (0.10, 0.45)


def scene_row(u, frame, frame_height=FRAME_HEIGHT):
    """The true stripe row (px) at column coordinate u of frame `frame`, for 0.25 < u < 0.5."""
    lo = 4 * BEAM_SIGMA + 2
    hi = frame_height - 1 - lo
    p = (frame % PERIOD) / PERIOD
    s = 0.18 + 0.08 * u
    if BLOCK_U <= u < BLOCK_END_U and BLOCK_P[0] <= p < BLOCK_P[1]:
        s += BLOCK_HEIGHT
    return lo + (hi - lo) * s


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# A sheet-of-light calibration of our own for the viewer's mm test: no
# distortion, and a homography that makes column u and row v of a
# WIDTH x FRAME_HEIGHT frame the point X = CAL_X_MM * (u - (WIDTH - 1) / 2),
# Z = CAL_Z_MM * v + CAL_Z0_MM (mm), so that the page's mm are known exactly.
CAL_X_MM, CAL_Z_MM, CAL_Z0_MM = 0.1, 0.25, 5.0


def calibration_toml(width=WIDTH, frame_height=FRAME_HEIGHT):
    cu = (width - 1) / 2
    return f"""[calibration]
format = "stripeline-calibration"
version = 1
model = "sheet-of-light"
unit = "mm"
[sensor]
width = {width}
height = {frame_height}
roi = [0, 0, {width}, {frame_height}]
[distortion]
direction = "correction"
centre = [{cu}, 0.0]
scale = 1.0
k = [0.0, 0.0, 0.0]
p = [0.0, 0.0]
[homography]
h = [[{CAL_X_MM}, 0.0, 0.0], [0.0, {CAL_Z_MM}, {CAL_Z0_MM}], [0.0, 0.0, 1.0]]
[motion]
y_source = "frame"
y_step_mm = 0.1
"""


def calibrated(u, row, width=WIDTH):
    """(X, Z) mm of column coordinate u (centre of column u * width - 0.5) and row `row` through calibration_toml()."""
    return CAL_X_MM * (u * width - 0.5 - (width - 1) / 2), CAL_Z_MM * row + CAL_Z0_MM


def config(tmp, port, rate, max_viewers=32, calibration=None):
    cal = f'[calibration]\nfile = "{calibration}"\n' if calibration else ""
    return f"""{cal}[synthetic]
width = {WIDTH}
frame_height = {FRAME_HEIGHT}
frames = 0
beam_sigma = {BEAM_SIGMA}
occlusion = 0.0
reflection = 0.0
noise = 1.0
[processing]
backend = "cpu"
batch_frames = 50
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
rate = {rate}
[http]
port = {port}
max_viewers = {max_viewers}
"""


def heads_config(tmp, port, rate, heads, max_viewers=32):
    """A daemon of several heads: `heads` = [(name, width, frame_height)], each its own synthetic scanner and stream."""
    text = config(tmp, port, rate, max_viewers).replace('endpoint = "tcp://127.0.0.1:*"\n', "")
    for name, width, frame_height in heads:
        text += f"""[[head]]
name = "{name}"
[head.synthetic]
width = {width}
frame_height = {frame_height}
[head.publisher]
endpoint = "tcp://127.0.0.1:{free_port()}"
[head.output]
dir = "{tmp}/scans/{name}"
"""
    return text


def http_get(port, path, timeout=5.0):
    """(status, headers (lower-case names), body) of GET path; (None, {}, b'') when not answered."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
            data = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
                head_end = data.find(b"\r\n\r\n")
                m = re.search(rb"Content-Length: *(\d+)", data[:head_end] if head_end >= 0 else b"", re.I)
                if m and len(data) >= head_end + 4 + int(m.group(1)):
                    break
    except OSError:
        return None, {}, b""
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    if not lines or not lines[0].startswith("HTTP/1."):
        return None, {}, b""
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    return int(lines[0][9:12]), headers, body


def metric(port, name):
    """The value of a metric without labels (None when absent)."""
    status, _, body = http_get(port, "/metrics")
    if status != 200:
        return None
    m = re.search(rb"^" + re.escape(name.encode()) + rb" (\S+)$", body, re.M)
    return float(m.group(1)) if m else None


def metric_sum(port, name):
    """The sum of a metric over all its series, labelled or not (a daemon of several heads: every head's); None when absent."""
    status, _, body = http_get(port, "/metrics")
    if status != 200:
        return None
    values = re.findall(rb"^" + re.escape(name.encode()) + rb"(?:\{[^}]*\})? (\S+)$", body, re.M)
    return sum(float(v) for v in values) if values else None


class Daemon:
    def __init__(self, binary, tmp, port, rate=1000.0, max_viewers=32, text=None):
        """`text`: the configuration (default: config(), one synthetic head)."""
        self.binary, self.tmp, self.port = binary, tmp, port
        os.makedirs(f"{tmp}/scans", exist_ok=True)
        with open(f"{tmp}/d.toml", "w") as f:
            f.write(text or config(tmp, port, rate, max_viewers))
        self.proc = None
        self.starts = 0

    def start(self, timeout=60):
        self.starts += 1
        self.log = open(f"{self.tmp}/daemon-{self.starts}.log", "w")
        self.proc = subprocess.Popen([self.binary, "daemon", "--config", f"{self.tmp}/d.toml"], stdout=self.log, stderr=self.log)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the daemon exited ({self.proc.returncode}): {open(self.log.name).read()[-2000:]}")
            if http_get(self.port, "/readyz", 2)[0] == 200:
                return
            time.sleep(0.1)
        raise RuntimeError(f"the daemon was not ready within {timeout} s: {open(self.log.name).read()[-2000:]}")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
