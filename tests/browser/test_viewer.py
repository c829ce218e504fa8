#!/usr/bin/env python3
"""The live viewer in a real browser (ctest -L browser; docs/daemon.md "Live viewer").

  test_viewer.py BINARY loads        the page loads, no console error, security headers, nothing else served
  test_viewer.py BINARY step         the screenshot's height waterfall shows the synthetic block's step at its
                                     place and in io/colour_map's colours for its known heights
  test_viewer.py BINARY rate         updates arrive at >= 10 per second (counted in the page)
  test_viewer.py BINARY restart      the page says "reconnecting" while the daemon is down and resumes after it restarts
  test_viewer.py BINARY many         10 viewers at once all receive updates; an 11th beyond http.max_viewers is refused
  test_viewer.py BINARY screenshot PNG   writes the README's picture of the viewer (scripts/viewer-screenshot.sh)

Exit 77 (ctest: skipped) with the reason when chromium or python3-websocket is absent.
"""
import json
import os
import re
import socket
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cdp  # noqa: E402
from viewer_daemon import BLOCK_HEIGHT, BLOCK_U, WIDTH, Daemon, free_port, http_get, metric, scene_row  # noqa: E402

STATE = "window.stripelineViewer"


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)
    print(f"ok: {msg}")


def open_viewer(browser, port, updates=3, timeout=30):
    page = browser.new_page(f"http://127.0.0.1:{port}/")
    page.wait_for(f"{STATE} && {STATE}.updates >= {updates} && {STATE}.health >= 1", timeout, f"{updates} updates and a health event")
    return page


def colour_map(port):
    status, _, body = http_get(port, "/colour-map.js")
    if status != 200:
        fail(f"/colour-map.js answered {status}")
    m = re.search(rb"STRIPELINE_COLOUR_MAP = (\[.*?\]\]);", body, re.S)
    return json.loads(m.group(1))


def test_loads(binary, tmp):
    port = free_port()
    with Daemon(binary, tmp, port), cdp.Browser() as browser:
        for path, kind in (("/", "text/html"), ("/viewer.js", "text/javascript"), ("/viewer.css", "text/css"), ("/colour-map.js", "text/javascript")):
            status, headers, body = http_get(port, path)
            check(status == 200 and headers.get("content-type", "").startswith(kind), f"GET {path}: 200 {kind} ({len(body)} bytes)")
            check(headers.get("content-security-policy") == "default-src 'self'" and headers.get("x-content-type-options") == "nosniff" and
                  headers.get("x-frame-options") == "DENY" and headers.get("referrer-policy") == "no-referrer",
                  f"GET {path}: security headers {[headers.get(h) for h in ('content-security-policy', 'x-frame-options')]}")
        check(http_get(port, "/etc/passwd")[0] == 404 and http_get(port, "/../d.toml")[0] == 404, "no other path is served (404)")
        page = open_viewer(browser, port)
        browser.pump(2.0)
        errors = page.errors()
        check(not errors, f"no console error or exception while loading and updating (saw {errors})")
        text = page.evaluate("document.body.innerText")
        check("Height waterfall" in text and "Intensity waterfall" in text and "Health" in text, "the page shows its panels")
        health = page.evaluate(f"{STATE}.lastHealth")
        head = health["heads"][0]
        check(head["rows_per_s"] > 0 and "latency_ms" in head and head["camera"] == "none" and head["calibration"] == "none" and
              re.match(r"^[0-9a-f-]{36}$", head["series"]), f"health: rows/s {head['rows_per_s']:.0f}, latency {head.get('latency_ms')} ms, series, "
              "calibration, camera state")
        check(tmp not in json.dumps(health) and tmp not in text, "the page shows no path of the daemon's files")
        info = page.evaluate(f"{STATE}.info")
        check(info["bins"] == 1024 and info["width"] == WIDTH and info["unit"] == "px", f"info: {info['width']} columns shown as {info['bins']}, px")
        check(metric(port, "stripeline_viewer_clients") == 1, "/metrics counts the viewer (stripeline_viewer_clients 1)")


def nearest_index(cmap, rgb):
    return min(range(256), key=lambda i: sum((cmap[i][k] - rgb[k]) ** 2 for k in range(3)))


def test_step(binary, tmp, screenshot_out=None):
    port = free_port()
    size = (1130, 1080) if screenshot_out else (1280, 1700)  # the README's picture: the page, no margin below
    with Daemon(binary, tmp, port), cdp.Browser(*size) as browser:
        cmap = colour_map(port)
        page = open_viewer(browser, port, updates=300, timeout=90)  # the waterfall full (256 rows)
        page.evaluate("document.getElementById('pause').click()")
        page.wait_for(f"{STATE}.paused === true", 5, "the display to pause")
        rng = page.evaluate(f"{STATE}.range")
        frames = page.evaluate(f"{STATE}.heldFrames")
        rect = page.evaluate("(() => { const r = document.getElementById('heights').getBoundingClientRect(); "
                             "return [r.left, r.top, r.width, r.height, document.getElementById('heights').width, "
                             "document.getElementById('heights').height]; })()")
        png = page.screenshot()
        if screenshot_out:
            with open(screenshot_out + ".tmp", "wb") as f:
                f.write(png)
            os.replace(screenshot_out + ".tmp", screenshot_out)
        w, h, rows = cdp.decode_png(png)
        left, top, cw, ch, bins, nrows = rect
        print(f"range {rng['lo']}..{rng['hi']} px; canvas {bins}x{nrows} drawn at {cw}x{ch} css px; screenshot {w}x{h}; {len(frames)} rows held")

        def pixel(bin_, row):
            x = int(left + (bin_ + 0.5) * cw / bins)
            y = int(top + (row + 0.5) * ch / nrows)
            p = rows[y][x * 4:x * 4 + 3]
            return tuple(p)

        def expected_index(height):
            return round(min(1, max(0, (height - rng["lo"]) / (rng["hi"] - rng["lo"]))) * 255)

        bin_of = lambda u: int(u * bins)  # noqa: E731
        base_bin, block_bin = bin_of(0.29), bin_of(0.39)
        in_block = 0
        worst = 0
        step_bins = []
        for r, frame in enumerate(frames):
            for b in (base_bin, block_bin):
                u = (b + 0.5) / bins
                want = expected_index(scene_row(u, frame))
                got = nearest_index(cmap, pixel(b, r))
                worst = max(worst, abs(got - want))
                if abs(got - want) > 3:
                    fail(f"waterfall row {r} (frame {frame}), bin {b} (u {u:.3f}): colour index {got}, expected {want} "
                         f"for {scene_row(u, frame):.2f} px in {rng['lo']}..{rng['hi']}")
            if scene_row(0.39, frame) - scene_row(0.31, frame) > 5:  # the block is there: find the step along the row
                in_block += 1
                half = (expected_index(scene_row(0.31, frame)) + expected_index(scene_row(0.33, frame))) / 2
                for b in range(bin_of(0.30), bin_of(0.34)):
                    if nearest_index(cmap, pixel(b, r)) > half:
                        step_bins.append(b)
                        break
        check(len(frames) >= 100 and worst <= 3,
              f"{len(frames)} waterfall rows: base and block colours within {worst} entries of io/colour_map's for their known heights")
        check(in_block >= 10, f"the block (a step of {BLOCK_HEIGHT} of the range) is in {in_block} of the rows")
        edge = BLOCK_U * bins
        check(len(step_bins) == in_block and all(abs(b - edge) <= 1.5 for b in step_bins),
              f"the step is at bin {sorted(set(step_bins))} in every block row (the scene's edge: u = {BLOCK_U}, bin {edge:.1f})")
        check(not page.errors(), "no console error")


def rate_of(page, seconds):
    a = page.evaluate(f"[{STATE}.updates, performance.now()]")
    page.browser.pump(seconds)
    b = page.evaluate(f"[{STATE}.updates, performance.now()]")
    return (b[0] - a[0]) / ((b[1] - a[1]) / 1000.0)


def test_rate(binary, tmp):
    port = free_port()
    with Daemon(binary, tmp, port), cdp.Browser() as browser:
        page = open_viewer(browser, port)
        r = rate_of(page, 5.0)
        check(r >= 10, f"updates arrive at {r:.1f} per second (>= 10)")
        check(not page.errors(), "no console error")


def test_restart(binary, tmp):
    port = free_port()
    d = Daemon(binary, tmp, port)
    d.start()
    try:
        with cdp.Browser() as browser:
            page = open_viewer(browser, port)
            series = page.evaluate(f"{STATE}.lastHealth.heads[0].series")
            d.stop()
            page.wait_for(f"!{STATE}.connected && document.getElementById('connection').textContent === 'reconnecting'", 15,
                          "the page to say it is reconnecting")
            print("ok: the page says 'reconnecting' while the daemon is down")
            before = page.evaluate(f"{STATE}.updates")
            d.start()
            page.wait_for(f"{STATE}.connected && {STATE}.updates >= {before + 10}", 30, "updates from the restarted daemon")
            check(page.evaluate("document.getElementById('connection').textContent") == "live", "the badge says 'live' again")
            page.wait_for(f"{STATE}.lastHealth.heads[0].series !== {json.dumps(series)}", 10, "the restarted daemon's health")
            print("ok: the page shows the restarted daemon's health (a new series)")
            errors = [e for e in page.errors() if "/events" not in e and "ERR_CONNECTION_REFUSED" not in e]
            check(not errors, f"no console error besides the refused reconnection attempts ({errors})")
    finally:
        d.stop()


def test_many(binary, tmp, n=10):
    port = free_port()
    # One host name per viewer (cdp.Browser.VIEWER_HOSTS): a browser's 6 connections per host would hold the 6th.
    with Daemon(binary, tmp, port, max_viewers=n), cdp.Browser(width=1280, height=900,
                                                               extra_args=[f"--host-resolver-rules={cdp.Browser.VIEWER_HOSTS}"]) as browser:
        pages = [browser.new_page(f"http://v{i}.viewer.test:{port}/") for i in range(n)]
        for i, p in enumerate(pages):
            p.wait_for(f"{STATE} && {STATE}.updates >= 3", 60, f"viewer {i + 1} to receive updates")
        check(metric(port, "stripeline_viewer_clients") == n, f"/metrics: stripeline_viewer_clients {n}")
        # One more is refused, clearly.
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(b"GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            answer = s.recv(4096).decode("latin-1")
        check(answer.startswith("HTTP/1.1 503") and "max_viewers" in answer, f"viewer {n + 1} refused: {answer.splitlines()[0]}")
        check(metric(port, "stripeline_viewer_refused_total") >= 1, "/metrics counts the refusal")
        t0 = [p.evaluate(f"[{STATE}.updates, performance.now()]") for p in pages]
        browser.pump(3.0)
        t1 = [p.evaluate(f"[{STATE}.updates, performance.now()]") for p in pages]
        print("updates/s each viewer counted (not asserted):", " ".join(f"{(b[0] - a[0]) / (b[1] - a[1]) * 1000:.1f}" for a, b in zip(t0, t1)))
        check(all(b[0] > a[0] for a, b in zip(t0, t1)), f"all {n} viewers keep receiving updates")
        check(all(not p.errors() for p in pages), "no console error in any viewer")
        status, _, _ = http_get(port, "/healthz", 2)
        check(status == 200, "/healthz answers while the viewers stream")


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    binary, what = sys.argv[1], sys.argv[2]
    tests = {"loads": test_loads, "step": test_step, "rate": test_rate, "restart": test_restart, "many": test_many}
    try:
        with tempfile.TemporaryDirectory(prefix="stripeline-viewer-") as tmp:
            if what == "screenshot":
                test_step(binary, tmp, screenshot_out=sys.argv[3])
            else:
                tests[what](binary, tmp)
    except cdp.Missing as e:
        print(f"SKIP: {e}")
        return 77
    except (cdp.CdpError, RuntimeError) as e:
        fail(str(e))
    return 0


if __name__ == "__main__":
    sys.exit(main())
