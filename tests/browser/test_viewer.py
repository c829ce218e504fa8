#!/usr/bin/env python3
"""The live viewer in a real browser (ctest -L browser; docs/daemon.md "Live viewer").

  test_viewer.py BINARY loads        the page loads, no console error, security headers, nothing else served
  test_viewer.py BINARY step         the screenshot's height waterfall shows the synthetic block's step at its
                                     place and in io/colour_map's colours for its known heights
  test_viewer.py BINARY rate         updates arrive at >= 10 per second (counted in the page)
  test_viewer.py BINARY restart      the page says "reconnecting" while the daemon is down and resumes after it restarts
  test_viewer.py BINARY many         10 viewers at once all receive updates; an 11th beyond http.max_viewers is refused
  test_viewer.py BINARY mm           a head with a sheet-of-light calibration: heights and x in mm, the scale bar in mm,
                                     the step at its X in mm and in the colours of its Z in mm
  test_viewer.py BINARY heads        a daemon of two heads ([[head]]): a panel each, each updating >= 10/s, each head's
                                     step at its place and colours; health lists both heads
  test_viewer.py BINARY merged       two calibrated heads merged in the daemon ([merge]): a third panel, the merged
                                     series on the world grid in mm, each head's step at its world X
  test_viewer.py BINARY screenshot PNG   writes the README's picture of the viewer (scripts/viewer-screenshot.sh)
  test_viewer.py BINARY screenshot-heads PNG   the same of the two-head daemon (docs/images/viewer-heads.png)

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
from viewer_daemon import (BLOCK_HEIGHT, BLOCK_U, FRAME_HEIGHT, WIDTH, Daemon, calibrated, calibration_toml, config,  # noqa: E402
                           free_port, heads_config, http_get, metric, scene_row)

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


def waterfall_step(page, png, cmap, head, value, unit):
    """Checks head `head`'s height waterfall in the screenshot `png` (taken paused): each row's base and block
    colours are io/colour_map's for their known heights value(u, frame) (in the page's unit), and the step lies at
    the scene's edge (u = BLOCK_U) in every row the block is in. Returns the bins the step was found at."""
    hs = f"{STATE}.heads[{json.dumps(head)}]"
    rng = page.evaluate(f"{hs}.range")
    frames = page.evaluate(f"{hs}.heldFrames")
    rect = page.evaluate(f"(() => {{ const c = document.querySelector('.head[data-head={json.dumps(head)}] canvas.heights'); "
                         "const r = c.getBoundingClientRect(); return [r.left, r.top, r.width, r.height, c.width, c.height]; })()")
    w, h, rows = cdp.decode_png(png)
    left, top, cw, ch, bins, nrows = rect
    print(f"head {head}: range {rng['lo']}..{rng['hi']} {unit}; canvas {bins}x{nrows} drawn at {cw}x{ch} css px; screenshot {w}x{h}; "
          f"{len(frames)} rows held")

    def pixel(bin_, row):
        x = int(left + (bin_ + 0.5) * cw / bins)
        y = int(top + (row + 0.5) * ch / nrows)
        return tuple(rows[y][x * 4:x * 4 + 3])

    def expected_index(height):
        return round(min(1, max(0, (height - rng["lo"]) / (rng["hi"] - rng["lo"]))) * 255)

    bin_of = lambda u: int(u * bins)  # noqa: E731
    base_bin, block_bin = bin_of(0.29), bin_of(0.39)
    in_block, worst, step_bins = 0, 0, []
    scaled = abs(ch / nrows - 1) > 1e-6  # rows drawn taller than a pixel: a pixel at a row's edge may show its neighbour
    skipped = 0
    for r, frame in enumerate(frames):
        for b in (base_bin, block_bin):
            u = (b + 0.5) / bins
            want = expected_index(value(u, frame))
            neighbours = [expected_index(value(u, frames[k])) for k in (r - 1, r + 1) if 0 <= k < len(frames)]
            if scaled and any(abs(n - want) > 3 for n in neighbours):
                skipped += 1
                continue
            got = nearest_index(cmap, pixel(b, r))
            worst = max(worst, abs(got - want))
            if abs(got - want) > 3:
                fail(f"head {head}: waterfall row {r} (frame {frame}), bin {b} (u {u:.3f}): colour index {got}, expected {want} "
                     f"for {value(u, frame):.2f} {unit} in {rng['lo']}..{rng['hi']}")
        def block_in(f):
            return abs(expected_index(value(0.33, f)) - expected_index(value(0.31, f))) > 20
        below, above = expected_index(value(0.31, frame)), expected_index(value(0.33, frame))
        if block_in(frame) and not (scaled and not all(block_in(frames[k]) for k in (r - 1, r + 1) if 0 <= k < len(frames))):
            # the block is there: find the step along the row
            in_block += 1
            half = (below + above) / 2
            for b in range(bin_of(0.30), bin_of(0.34)):
                if (nearest_index(cmap, pixel(b, r)) - half) * (above - below) > 0:
                    step_bins.append(b)
                    break
    check(len(frames) >= 100 and worst <= 3 and skipped <= len(frames) // 8,
          f"head {head}: {len(frames)} waterfall rows: base and block colours within {worst} entries of io/colour_map's for their known heights"
          + (f" ({skipped} cells beside a change between rows not compared: the canvas is drawn {ch / nrows:.2f} px a row)" if scaled else ""))
    check(in_block >= 10, f"head {head}: the block (a step of {BLOCK_HEIGHT} of the range) is in {in_block} of the rows")
    edge = BLOCK_U * bins
    check(len(step_bins) == in_block and all(abs(b - edge) <= 1.5 for b in step_bins),
          f"head {head}: the step is at bin {sorted(set(step_bins))} in every block row (the scene's edge: u = {BLOCK_U}, bin {edge:.1f})")
    return step_bins


def paused_screenshot(page, screenshot_out=None):
    page.evaluate("document.getElementById('pause').click()")
    page.wait_for(f"{STATE}.paused === true", 5, "the display to pause")
    page.browser.pump(0.3)
    png = page.screenshot()
    if screenshot_out:
        with open(screenshot_out + ".tmp", "wb") as f:
            f.write(png)
        os.replace(screenshot_out + ".tmp", screenshot_out)
    return png


def test_step(binary, tmp, screenshot_out=None):
    port = free_port()
    size = (1130, 1080) if screenshot_out else (1280, 1700)  # the README's picture: the page, no margin below
    with Daemon(binary, tmp, port), cdp.Browser(*size) as browser:
        cmap = colour_map(port)
        page = open_viewer(browser, port, updates=300, timeout=90)  # the waterfall full (256 rows)
        png = paused_screenshot(page, screenshot_out)
        check(page.evaluate(f"{STATE}.order") == ["head"], "one panel: the single head's")
        waterfall_step(page, png, cmap, "head", lambda u, f: scene_row(u, f), "px")
        check(not page.errors(), "no console error")


def test_mm(binary, tmp):
    port = free_port()
    with open(f"{tmp}/cal.toml", "w") as f:
        f.write(calibration_toml())
    with Daemon(binary, tmp, port, text=config(tmp, port, 1000.0, calibration=f"{tmp}/cal.toml")), cdp.Browser(1280, 1700) as browser:
        cmap = colour_map(port)
        page = open_viewer(browser, port, updates=300, timeout=90)
        png = paused_screenshot(page)
        info = page.evaluate(f"{STATE}.info")
        check(info["unit"] == "mm" and info["calibration"].startswith("sheet "), f"info: heights in {info['unit']}, calibration {info['calibration']}")
        texts = page.evaluate("[document.getElementById('run').textContent, document.querySelector('.scale-lo').textContent, "
                              "document.querySelector('.scale-hi').textContent]")
        check("heights in mm" in texts[0] and texts[1].endswith(" mm") and texts[2].endswith(" mm"),
              f"the page says mm: '{texts[0]}'; scale bar '{texts[1]}' .. '{texts[2]}'")
        health = page.evaluate(f"{STATE}.lastHealth")
        check(health["heads"][0]["calibration"] == info["calibration"], f"health: calibration {health['heads'][0]['calibration']}")
        step_bins = waterfall_step(page, png, cmap, "head", lambda u, f: calibrated(u, scene_row(u, f))[1], "mm")
        row = page.evaluate(f"{STATE}.lastRow")
        check(row.get("x") is not None and len(row["x"]) == info["bins"], "each row carries its bins' X in mm")
        edge_mm = calibrated(BLOCK_U, 0)[0]
        bin_mm = CAL_BIN_MM = calibrated(1 / info["bins"], 0)[0] - calibrated(0, 0)[0]
        xs = [row["x"][b] for b in sorted(set(step_bins))]
        check(all(abs(x - edge_mm) <= 1.5 * bin_mm + 1e-6 for x in xs),
              f"the step is at X {', '.join(f'{x:.2f}' for x in xs)} mm (the scene's edge through the calibration: {edge_mm:.2f} mm, "
              f"a bin {CAL_BIN_MM:.2f} mm)")
        z_lo, z_hi = calibrated(0.3, 0)[1], calibrated(0.3, FRAME_HEIGHT)[1]
        rng = page.evaluate(f"{STATE}.range")
        check(z_lo <= rng["hi"] and rng["lo"] <= z_hi, f"the scale bar's range {rng['lo']}..{rng['hi']} mm lies in the calibrated Z of the frame")
        check(not page.errors(), "no console error")


HEADS = [("left", WIDTH, FRAME_HEIGHT), ("right", 640, 40)]


def test_heads(binary, tmp, screenshot_out=None):
    port = free_port()
    # Two panels side by side, each canvas drawn at least at 1024 css px wide.
    # Paced at 200 frames/s each: two heads on the two shared cores keep up.
    with Daemon(binary, tmp, port, text=heads_config(tmp, port, 200.0, HEADS)), cdp.Browser(2300, 1400) as browser:
        cmap = colour_map(port)
        page = open_viewer(browser, port, updates=3)
        page.wait_for(f"{STATE}.order.length === 2 && Object.values({STATE}.heads).every((h) => h.updates >= 3)", 30, "both heads' panels")
        check(sorted(page.evaluate(f"{STATE}.order")) == ["left", "right"], "a panel per head: left and right")
        rates = {}
        a = page.evaluate(f"[{STATE}.heads.left.updates, {STATE}.heads.right.updates, performance.now()]")
        browser.pump(5.0)
        b = page.evaluate(f"[{STATE}.heads.left.updates, {STATE}.heads.right.updates, performance.now()]")
        for i, name in enumerate(("left", "right")):
            rates[name] = (b[i] - a[i]) / ((b[2] - a[2]) / 1000.0)
        check(all(r >= 10 for r in rates.values()), f"each panel updates >= 10/s: {', '.join(f'{k} {v:.1f}/s' for k, v in rates.items())}")
        page.wait_for(f"Object.values({STATE}.heads).every((h) => h.heldFrames.length >= 256)", 60, "both waterfalls full")
        health = page.evaluate(f"{STATE}.lastHealth")
        names = [h["name"] for h in health["heads"]]
        check(names == ["left", "right"] and all(h["frames"] > 0 and "rows_per_s" in h and "latency_ms" in h and h["camera"] == "none" and
                                                 re.match(r"^[0-9a-f-]{36}$", h["series"]) for h in health["heads"]),
              f"health lists every head: {names}: frames {[h['frames'] for h in health['heads']]}, rows/s, latency, camera, series")
        for name, width, _ in HEADS:
            info = page.evaluate(f"{STATE}.heads.{name}.info")
            check(info["width"] == width and info["bins"] == min(width, 1024), f"head {name}: {info['width']} columns shown as {info['bins']}")
        titles = page.evaluate("[...document.querySelectorAll('.head-title')].map((e) => e.textContent)")
        check(len(titles) == 2 and titles[0].startswith("head ") and titles[1].startswith("head "), f"each panel titled: {titles}")
        png = paused_screenshot(page, screenshot_out)
        for name, width, frame_height in HEADS:
            waterfall_step(page, png, cmap, name, lambda u, f, fh=frame_height: scene_row(u, f, fh), "px")
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


MERGE_TX = 80.0  # the heads' places in the world frame: left at -80 mm, right at +80 mm (X)


def merged_config(tmp, port):
    """Two calibrated heads of 1024 x 52 px merged in the daemon onto the world grid -180..180 mm (0.5 mm cells)."""
    with open(f"{tmp}/cal.toml", "w") as f:
        f.write(calibration_toml(1024, FRAME_HEIGHT))
    with open(f"{tmp}/transforms.toml", "w") as f:
        f.write('[alignment]\nformat = "stripeline-head-transforms"\nversion = 1\n')
        for name, tx in (("left", -MERGE_TX), ("right", MERGE_TX)):
            f.write(f'[[head]]\nname = "{name}"\nrotation = [1, 0, 0, 0, 1, 0, 0, 0, 1]\ntranslation = [{tx}, 0, 0]\n')
    # 25 frames/s each, and a 5 s merge window: both heads keep pace on two shared cores (ctest runs another
    # browser test beside this one), and a head that falls behind for a while still has its rows merged, not late.
    text = heads_config(tmp, port, 25.0, [("left", 1024, FRAME_HEIGHT), ("right", 1024, FRAME_HEIGHT)])
    text = text.replace("[daemon]", f'[calibration]\nfile = "{tmp}/cal.toml"\n[daemon]', 1)
    return text.replace("[[head]]", f'[merge]\nenabled = true\ntransforms = "{tmp}/transforms.toml"\ngrid = "-180:180:0.5"\nwindow_ms = 5000\n'
                        f'publish = "tcp://127.0.0.1:{free_port()}"\n[[head]]', 1)


def test_merged(binary, tmp):
    port = free_port()
    with Daemon(binary, tmp, port, text=merged_config(tmp, port)), cdp.Browser(2300, 1400) as browser:
        page = open_viewer(browser, port, updates=3)
        merged = f"{STATE}.heads[':merged']"
        page.wait_for(f"{STATE}.order.length === 3 && {merged} && {merged}.updates >= 10", 60, "the merged series' panel and its rows")
        check(page.evaluate(f"{STATE}.order") == ["left", "right", ":merged"], "a panel per head and one for the merged series")
        info = page.evaluate(f"{merged}.info")
        check(info["unit"] == "mm" and info["width"] == 721 and info["bins"] == 721 and abs(info["x0"] + 180) < 1e-9 and abs(info["dx"] - 0.5) < 1e-9,
              f"merged: {info['width']} cells of the world grid from {info['x0']} mm by {info['dx']} mm, heights in {info['unit']}")
        title = page.evaluate("document.querySelector('.head[data-head=\":merged\"] .head-title').textContent")
        check(title.startswith("merged series"), f"its title: {title}")
        # Each head's block edge in the world frame: the scene's u = BLOCK_U through the calibration, then the head's place.
        edges = {name: calibrated(BLOCK_U, 0, 1024)[0] + tx for name, tx in (("left", -MERGE_TX), ("right", MERGE_TX))}
        found = {}
        deadline = time.monotonic() + 60
        while len(found) < 2 and time.monotonic() < deadline:
            row = page.evaluate(f"{merged}.lastRow")
            if row and 0.12 <= (row["frame"] % 600) / 600 < 0.43:  # the block is there
                for name, edge in edges.items():
                    cell = lambda x: int(round((x + 180) / 0.5))  # noqa: E731
                    base, block = row["h"][cell(edge - 3)], row["h"][cell(edge + 3)]
                    if base is None or block is None or block - base < 1.5:
                        continue
                    half = (base + block) / 2
                    for c in range(cell(edge - 3), cell(edge + 3) + 1):
                        if row["h"][c] is not None and row["h"][c] > half:
                            found[name] = (-180 + 0.5 * c, base, block)
                            break
            browser.pump(0.2)
        for name, edge in edges.items():
            check(name in found and abs(found[name][0] - edge) <= 1.0,
                  f"merged: head {name}'s step at world X {found.get(name, ('none',))[0]} mm (expected {edge:.2f} mm, within 1 mm), "
                  f"from {found.get(name, (0, 0, 0))[1]:.2f} to {found.get(name, (0, 0, 0))[2]:.2f} mm")
        health = page.evaluate(f"{STATE}.lastHealth")
        check("merge" in health and health["merge"]["state"].startswith("merge: running") and "rows_per_s" in health["merge"],
              f"health: {health['merge']['state']}, {health['merge'].get('rows_per_s', 0):.0f} merged rows/s seen")
        check(not page.errors(), "no console error")


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    binary, what = sys.argv[1], sys.argv[2]
    tests = {"loads": test_loads, "step": test_step, "rate": test_rate, "restart": test_restart, "many": test_many, "mm": test_mm,
             "heads": test_heads, "merged": test_merged}
    try:
        with tempfile.TemporaryDirectory(prefix="stripeline-viewer-") as tmp:
            if what == "screenshot":
                test_step(binary, tmp, screenshot_out=sys.argv[3])
            elif what == "screenshot-heads":
                test_heads(binary, tmp, screenshot_out=sys.argv[3])
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
