#!/usr/bin/env python3
"""Peak RSS of replays against the memory budget (docs/memory.md).

Writes 16-bit and 8-bit grey PGM recordings (one bright row per frame, the
rest dark; uncompressed, so reading them costs little beside the
processing), replays each with every method through `stripeline replay` (CPU
backend, --ply and --heightmap, an explicit --memory-budget), and records the
child's peak resident memory (/usr/bin/time's %M: wait4's ru_maxrss of a
child forked from a small process, not from this one) beside the geometry
the summary reports. Prints a Markdown table; --csv writes the raw figures.

  python3 bench/memory_budget_rss.py --binary build/stripeline --budget 1G \
      --csv bench/results/memory-budget-rss.csv
  python3 bench/memory_budget_rss.py --table bench/results/memory-budget-rss.csv

Each recording holds enough frames to fill every buffer of the pool at the
budget's geometry (1.1 x the budget in pixels, 4..1200 frames), so the peak
is the steady state's, not a short file's. The height map the run
accumulates (2 bytes per column per frame, outside the budget by design:
docs/memory.md) is reported beside it.
"""
import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile

METHODS = [
    ["--method", "adaptive"],
    ["--method", "cog"],
    ["--method", "max"],
    ["--method", "window"],
    ["--method", "local-max", "--selection", "all"],
    ["--method", "all"],
]


def size_bytes(text):
    units = {"K": 10, "M": 20, "G": 30}
    if text[-1].upper() in units:
        return int(float(text[:-1]) * (1 << units[text[-1].upper()]))
    return int(text)


def write_recording(path, width, frame_height, frames, bits):
    bpp = bits // 8
    dark = b"\0" * (width * bpp) * frame_height
    stripe_row = frame_height // 2
    frame = bytearray(dark)
    frame[stripe_row * width * bpp:(stripe_row + 1) * width * bpp] = b"\xc0" * (width * bpp)
    frame = bytes(frame)
    with open(path, "wb") as f:
        f.write(f"P5\n{width} {frame_height * frames}\n{(1 << bits) - 1}\n".encode())
        for _ in range(frames):
            f.write(frame)


def run(binary, args):
    """Exit code, peak RSS (KiB) and output of `binary args`. Through
    /usr/bin/time: a child forked from this Python process would count
    Python's own pages (fork shares them; ru_maxrss keeps the high-water mark
    across exec), time's fork is small."""
    log = tempfile.TemporaryFile()
    with tempfile.NamedTemporaryFile("r") as rss:
        code = subprocess.call(["/usr/bin/time", "-q", "-f", "%M", "-o", rss.name, binary] + args, stdout=log, stderr=subprocess.STDOUT)
        text = rss.read().strip().splitlines()
    log.seek(0)
    return code, int(text[-1]) if text else 0, log.read().decode(errors="replace")


def markdown(rows):
    """Peak RSS (MiB) per shape and method, with the geometry, as docs/memory.md shows it."""
    methods = []
    for r in rows:
        if r["method"] not in methods:
            methods.append(r["method"])
    shapes = []
    for r in rows:
        key = (int(r["width"]), int(r["frame_height"]), int(r["bits"]))
        if key not in shapes:
            shapes.append(key)
    out = ["| width x frame height, bits | " + " | ".join(methods) + " |", "|---" * (len(methods) + 1) + "|"]
    for key in shapes:
        cells = []
        for m in methods:
            r = next(x for x in rows if (int(x["width"]), int(x["frame_height"]), int(x["bits"])) == key and x["method"] == m)
            if int(r["exit"]) != 0:
                cells.append("exit %s" % r["exit"])
                continue
            slots = "" if r["slots"] == r["requested_slots"] else ", %s of %s slots" % (r["slots"], r["requested_slots"])
            cells.append("%.0f (%s x %s%s)" % (float(r["peak_rss_mib"]), r["batch_frames"], r["buffers"], slots))
        out.append("| %d x %d, %d-bit | " % key + " | ".join(cells) + " |")
    return "\n".join(out)


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--table":
        print(markdown(list(csv.DictReader(open(sys.argv[2])))))
        return 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", default="build/stripeline")
    ap.add_argument("--budget", default="1G")
    ap.add_argument("--widths", default="256,2048,16384,65536")
    ap.add_argument("--heights", default="16,512")
    ap.add_argument("--bits", default="8,16")
    ap.add_argument("--backend", default="cpu", help="cpu or cuda (then the device budget is --device-budget)")
    ap.add_argument("--device-budget", default="auto")
    ap.add_argument("--csv")
    ap.add_argument("--dir", help="where the recordings go (default: a temporary folder)")
    o = ap.parse_args()
    budget = size_bytes(o.budget)
    work = o.dir or tempfile.mkdtemp(prefix="stripeline_rss_")
    rows = []
    for bits in [int(b) for b in o.bits.split(",")]:
        for width in [int(w) for w in o.widths.split(",")]:
            for fh in [int(h) for h in o.heights.split(",")]:
                frame_bytes = width * fh * bits // 8
                frames = max(4, min(1200, -(-11 * budget // (10 * frame_bytes))))
                rec = os.path.join(work, f"rec_{width}x{fh}_{bits}.pgm")
                write_recording(rec, width, fh, frames, bits)  # its buffers freed before any run
                for method in METHODS:
                    summary = os.path.join(work, "s.json")
                    args = ["replay", rec, "-H", str(fh), "--backend", o.backend, "-q", "--memory-budget", o.budget,
                            "--device-memory-budget", o.device_budget,
                            "--ply", os.path.join(work, "o.ply"), "--heightmap", os.path.join(work, "h.png"),
                            "--summary", summary] + method
                    if os.path.exists(summary):
                        os.remove(summary)
                    code, rss_kib, out = run(o.binary, args)
                    g = json.load(open(summary))["memory"] if code == 0 else {}
                    name = method[1] + (" (selection all)" if len(method) > 2 else "")
                    row = {"width": width, "frame_height": fh, "bits": bits, "method": name, "file_frames": frames,
                           "exit": code, "peak_rss_mib": round(rss_kib / 1024, 1),
                           "budget_mib": round(budget / 2**20, 1),
                           "planned_mib": round(g.get("host_bytes", 0) / 2**20, 1),
                           "device_budget_mib": round(g.get("device_budget_bytes", 0) / 2**20, 1),
                           "device_planned_mib": round(g.get("device_bytes", 0) / 2**20, 1),
                           "batch_frames": g.get("batch_frames", ""), "buffers": g.get("buffers", ""),
                           "slots": g.get("profile_slots", ""), "requested_slots": g.get("requested_slots", ""),
                           "heightmap_mib": round(2 * width * frames / 2**20, 1),
                           "over_planned_mib": round(rss_kib / 1024 - g.get("host_bytes", 0) / 2**20 - 2 * width * frames / 2**20, 1),
                           "message": "" if code == 0 else out.strip().splitlines()[-1][:200]}
                    rows.append(row)
                    print(f"{width:>6} x {fh:>3} {bits:>2}-bit {name:<26} exit {code} peak {row['peak_rss_mib']:>8} MiB "
                          f"planned {row['planned_mib']:>8} MiB  frames {row['batch_frames']} buffers {row['buffers']} "
                          f"slots {row['slots']}/{row['requested_slots']} {row['message']}", flush=True)
                os.remove(rec)
    if o.csv:
        with open(o.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
            w.writeheader()
            w.writerows(rows)
    ok = [r for r in rows if r["exit"] == 0]
    worst = max(r["over_planned_mib"] for r in ok)
    over = max(r["peak_rss_mib"] - r["heightmap_mib"] - r["budget_mib"] for r in ok)
    print(f"\nlargest peak RSS above the planned bytes and the height map: {worst:.1f} MiB; "
          f"above the budget and the height map: {over:.1f} MiB; budget {budget / 2**20:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
