"""A small client of Chromium's DevTools protocol, for the live viewer's tests.

Starts Debian's `chromium` headless (a temporary --user-data-dir, the
DevTools endpoint on loopback only, --no-sandbox when run as root), talks to
it over one WebSocket (python3-websocket) with flattened target sessions, and
offers what the tests need: open a page, evaluate JavaScript, wait for a
condition with a timeout, take a screenshot (PNG), collect console errors.
Also a PNG decoder (standard library) for reading the screenshots' pixels.

Missing(reason) is raised when chromium or python3-websocket is absent: the
tests turn it into a visible skip (exit 77).
"""
import base64
import json
import os
import shutil
import struct
import subprocess
import tempfile
import time
import zlib


class Missing(Exception):
    """Something the browser tests need is not installed (skip, not fail)."""


class CdpError(Exception):
    pass


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    raise Missing("chromium is not installed (scripts/setup-debian.sh --tests installs it)")


class Browser:
    # A browser opens at most 6 HTTP/1.1 connections to one host:port, and
    # each viewer's event stream holds one: N viewers in one browser need N
    # host names. These all resolve to 127.0.0.1 inside this browser only.
    VIEWER_HOSTS = "MAP *.viewer.test 127.0.0.1"

    def __init__(self, width=1280, height=1700, extra_args=()):
        try:
            import websocket  # python3-websocket
        except ImportError as e:
            raise Missing(f"python3-websocket is not installed ({e}; scripts/setup-debian.sh --tests installs it)")
        self._websocket = websocket
        self.width, self.height = width, height
        self.profile = tempfile.mkdtemp(prefix="stripeline-chromium-")
        args = [find_chromium(), "--headless=new", f"--user-data-dir={self.profile}", "--remote-debugging-address=127.0.0.1",
                "--remote-debugging-port=0", "--no-first-run", "--no-default-browser-check", "--disable-gpu", "--disable-extensions",
                "--disable-background-networking", "--disable-background-timer-throttling", "--disable-renderer-backgrounding",
                "--disable-backgrounding-occluded-windows", "--disable-component-update", "--disable-sync", "--mute-audio",
                "--force-color-profile=srgb", f"--window-size={width},{height}", *extra_args, "about:blank"]
        if os.geteuid() == 0:
            args.insert(1, "--no-sandbox")  # Chromium refuses to run as root with its sandbox
        self.log = open(os.path.join(self.profile, "chromium.log"), "w+")
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=self.log, stdin=subprocess.DEVNULL)
        port_file = os.path.join(self.profile, "DevToolsActivePort")
        deadline = time.monotonic() + 60
        while not (os.path.exists(port_file) and len(open(port_file).read().split()) >= 2):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.log.seek(0)
                tail = self.log.read()[-2000:]
                self.close()
                raise CdpError(f"chromium did not start (exit {self.proc.returncode}): {tail}")
            time.sleep(0.05)
        port, path = open(port_file).read().split()[:2]
        self.ws = websocket.create_connection(f"ws://127.0.0.1:{port}{path}", timeout=30, suppress_origin=True)
        self.next_id = 0
        self.events = []  # (sessionId, method, params) not yet consumed

    def close(self):
        try:
            if getattr(self, "ws", None):
                self.ws.close()
        except Exception:
            pass
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _recv(self, timeout):
        self.ws.settimeout(max(0.01, timeout))
        try:
            return json.loads(self.ws.recv())
        except self._websocket.WebSocketTimeoutException:
            return None

    def send(self, method, params=None, session=None, timeout=30):
        self.next_id += 1
        mid = self.next_id
        msg = {"id": mid, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        self.ws.send(json.dumps(msg))
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise CdpError(f"{method}: no answer within {timeout} s")
            m = self._recv(left)
            if m is None:
                continue
            if m.get("id") == mid:
                if "error" in m:
                    raise CdpError(f"{method}: {m['error']}")
                return m.get("result", {})
            if "method" in m:
                self.events.append((m.get("sessionId"), m["method"], m.get("params", {})))

    def pump(self, seconds):
        """Reads events for `seconds` (they land in self.events)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            m = self._recv(deadline - time.monotonic())
            if m and "method" in m:
                self.events.append((m.get("sessionId"), m["method"], m.get("params", {})))

    def new_page(self, url):
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, target, session)
        for domain in ("Runtime", "Log", "Page"):
            self.send(f"{domain}.enable", session=session)
        self.send("Emulation.setDeviceMetricsOverride", {"width": self.width, "height": self.height, "deviceScaleFactor": 1, "mobile": False},
                  session=session)
        self.send("Page.navigate", {"url": url}, session=session, timeout=120)
        return page


class Page:
    def __init__(self, browser, target, session):
        self.browser, self.target, self.session = browser, target, session

    def evaluate(self, expression, timeout=30):
        r = self.browser.send("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True}, self.session, timeout)
        if "exceptionDetails" in r:
            raise CdpError(f"{expression}: {r['exceptionDetails'].get('text')} {r['exceptionDetails'].get('exception', {}).get('description', '')}")
        return r.get("result", {}).get("value")

    def wait_for(self, expression, timeout, what):
        """Polls `expression` until truthy; CdpError naming `what` after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            try:
                last = self.evaluate(expression, timeout=max(1, deadline - time.monotonic()))
                if last:
                    return last
            except CdpError as e:  # the page may be navigating
                last = str(e)
            self.browser.pump(0.1)
        raise CdpError(f"timed out after {timeout} s waiting for {what} ({expression} was {last!r})")

    def screenshot(self):
        r = self.browser.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": False}, self.session, timeout=60)
        return base64.b64decode(r["data"])

    def errors(self):
        """Console errors and uncaught exceptions of this page so far (text lines)."""
        out = []
        for session, method, p in self.browser.events:
            if session != self.session:
                continue
            if method == "Runtime.exceptionThrown":
                d = p.get("exceptionDetails", {})
                out.append(f"exception: {d.get('text')} {d.get('exception', {}).get('description', '')}")
            elif method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append("console.error: " + " ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", [])))
            elif method == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                e = p["entry"]
                out.append(f"log ({e.get('source')}): {e.get('text')} {e.get('url', '')}")
        return out

    def close(self):
        self.browser.send("Target.closeTarget", {"targetId": self.target})


def decode_png(data):
    """(width, height, rows): rows[y] is a bytes of width * 4 RGBA values. 8-bit RGB/RGBA, not interlaced."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or colour not in (2, 6) or interlace:
                raise ValueError(f"PNG of depth {depth}, colour type {colour}, interlace {interlace}: only 8-bit RGB/RGBA")
            bpp = 4 if colour == 6 else 3
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        prev = line
        if bpp == 3:
            rgba = bytearray(width * 4)
            rgba[0::4], rgba[1::4], rgba[2::4] = line[0::3], line[1::3], line[2::3]
            rgba[3::4] = b"\xff" * width
            rows.append(bytes(rgba))
        else:
            rows.append(bytes(line))
    return width, height, rows
