#!/usr/bin/env python3
"""`stripeline report` opened in a real browser (docs/render.md): Debian's
chromium, headless, from disk with no network.

    check_report_browser.py STRIPELINE [--screenshot OUT.png]

Makes a small scan (`stripeline run`, synthetic source), writes its report
(scan.ply and heightmap.png), then:
  - chromium --dump-dom: the page parses, holds a section per file, its
    pictures as data: URIs (height map, intensity, where no point was found)
    and its SVG plots; no console message (the page has no script: any console
    line is an error, e.g. a blocked external load);
  - chromium --screenshot: the pictures were decoded and drawn: the
    screenshot holds thousands of pixels of the height colour map
    (io/colour_map.h's anchors, interpolated) and of the no-data grey.
--screenshot OUT.png also keeps that screenshot (scripts/report-screenshot.sh:
the README's docs/images/report.png).
Exit 0 pass, 1 fail, 77 skip (no chromium: scripts/setup-debian.sh --tests
installs it), each with its reason on stdout.
"""
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

VIRIDIS = [(0.0, (68, 1, 84)), (0.25, (59, 82, 139)), (0.5, (33, 145, 140)), (0.75, (94, 201, 98)), (1.0, (253, 231, 37))]
NO_DATA = (96, 96, 96)


def colour_map():
    """The 256 entries of io/colour_map.cpp (piecewise linear through the anchors)."""
    table = []
    for i in range(256):
        t = i / 255.0
        k = 0
        while k + 2 < len(VIRIDIS) and t > VIRIDIS[k + 1][0]:
            k += 1
        (t0, a), (t1, b) = VIRIDIS[k], VIRIDIS[k + 1]
        f = (t - t0) / (t1 - t0)
        table.append(tuple(int(round(x + (y - x) * f + 1e-9)) for x, y in zip(a, b)))
    return set(table)


def read_png_rgb(path):
    """(width, height, rows of (r, g, b)) of an 8-bit RGB or RGBA PNG."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and colour in (2, 6), "expected 8-bit RGB(A), got depth %d colour %d" % (depth, colour)
            bpp = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1: line[i] = (line[i] + a) & 255
            elif f == 2: line[i] = (line[i] + b) & 255
            elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x * bpp:x * bpp + 3]) for x in range(width)])
        prev = line
    return width, height, rows


def chromium_cmd(browser, profile):
    return [browser, "--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=" + profile, "--enable-logging=stderr", "--v=0",
            "--no-first-run", "--disable-extensions", "--hide-scrollbars"]


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    stripeline = sys.argv[1]
    keep = sys.argv[3] if len(sys.argv) > 3 and sys.argv[2] == "--screenshot" else None
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if not browser:
        print("SKIP: chromium is not installed (scripts/setup-debian.sh --tests installs Debian's chromium)")
        return 77
    with tempfile.TemporaryDirectory(prefix="stripeline-report-") as tmp:
        cfg = os.path.join(tmp, "small.toml")
        with open(cfg, "w") as f:
            f.write("[synthetic]\nwidth = 640\nframe_height = 40\nframes = 120\n[processing]\nbatch_frames = 20\n")
        out = os.path.join(tmp, "out")
        subprocess.run([stripeline, "run", "-q", "--config", cfg, "--out", out], check=True)
        report = os.path.join(out, "report.html")
        subprocess.run([stripeline, "report", os.path.join(out, "scan.ply"), os.path.join(out, "heightmap.png"), "--out", report],
                       check=True, stdout=subprocess.DEVNULL)
        url = "file://" + report
        dom = subprocess.run(chromium_cmd(browser, os.path.join(tmp, "p1")) + ["--dump-dom", url], capture_output=True, text=True,
                             timeout=120)
        failures = []
        if dom.returncode != 0:
            failures.append("chromium --dump-dom exited %d: %s" % (dom.returncode, dom.stderr[-2000:]))
        console = [l for l in dom.stderr.splitlines() if "CONSOLE" in l]
        if console:
            failures.append("console messages: " + " | ".join(console[:5]))
        html = dom.stdout
        sections = len(re.findall(r'<section class="scan" id="scan-\d+"', html))
        images = re.findall(r'<img class="(\w+)"[^>]*src="data:image/png;base64,', html)
        svgs = re.findall(r'<svg class="(\w+)"', html)
        if sections != 2: failures.append("expected 2 sections in the DOM, found %d" % sections)
        for cls, n in (("heightmap", 2), ("intensity", 1), ("nopoint", 2)):
            if images.count(cls) != n: failures.append("expected %d %s image(s) in the DOM, found %d" % (n, cls, images.count(cls)))
        for cls in ("profiles", "histogram"):
            if svgs.count(cls) != 2: failures.append("expected 2 %s plots in the DOM, found %d" % (cls, svgs.count(cls)))
        if re.search(r'(src|href)="(https?:)?//', html): failures.append("an external reference in the DOM")
        shot = os.path.join(tmp, "shot.png")
        subprocess.run(chromium_cmd(browser, os.path.join(tmp, "p2")) + ["--window-size=1280,2200", "--screenshot=" + shot, url],
                       capture_output=True, text=True, timeout=120)
        if not os.path.exists(shot):
            failures.append("chromium wrote no screenshot")
        else:
            w, h, rows = read_png_rgb(shot)
            cmap = colour_map()
            mapped = sum(1 for row in rows for p in row if p in cmap)
            grey = sum(1 for row in rows for p in row if p == NO_DATA)
            print("screenshot %dx%d: %d pixels of the colour map, %d of the no-data grey" % (w, h, mapped, grey))
            if mapped < 20000: failures.append("the height map was not drawn: only %d colour-map pixels in the screenshot" % mapped)
            if grey < 50: failures.append("no no-data grey in the screenshot (%d pixels)" % grey)
            if keep:
                shutil.copyfile(shot, keep)
                print("kept " + keep)
        for f in failures:
            print("FAIL: " + f)
        if not failures:
            print("report %s: %d sections, images %s, plots %s; no console message" % (os.path.basename(report), sections, images, svgs))
        return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
