#!/usr/bin/env python3
"""Receive one stripeline series into numpy arrays: a thin example over the
`stripeline` package (python/, docs/python.md), which decodes and validates
every message (docs/wire-format.md).

    python3 tools/subscribe.py tcp://127.0.0.1:5556 [--timeout S] [--ply out.ply]

Needs pyzmq and numpy (Debian: python3-zmq python3-numpy).
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import stripeline  # noqa: E402  (pip install ./python makes the line above unnecessary)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("endpoint")
    ap.add_argument("--timeout", type=float, default=30.0, help="give up after this many seconds without a message (exit 3)")
    ap.add_argument("--ply", help="also write the received points here")
    args = ap.parse_args()
    try:
        s = stripeline.receive_series(args.endpoint, timeout=args.timeout)
    except TimeoutError as e:
        print(f"timeout: {e}", file=sys.stderr)
        return 3
    try:
        x, y, z, intensity = s.points()  # one entry per point, as in the PLY (y float64, the rest float32); mm when calibrated
    except ValueError as e:  # mm announced but neither a model nor carried points: refused, not pixels
        print(f"error: {e}", file=sys.stderr)
        return 2
    if s.start:
        unit = s.calibration.unit if s.calibration.enabled else "px"
        how = (" (X/Y/Z carried by the messages)" if s.xyz is not None else " (mapped with the sheet-of-light model)") \
            if isinstance(s.calibration, stripeline.SheetCalibration) else ""
        print(f"series-start {s.start.series} width {s.start.width} points in {unit}{how}")
    for first, count in s.gaps:
        print(f"gap: seq {first}..{first + count - 1} missing ({count} messages)")
    published = s.end.profile_rows if s.end else "?"
    print(f"series-end: received rows {int(s.received.sum())} points {len(x)} of {published} published; "
          f"missing messages {sum(c for _, c in s.gaps)}; lost rows {len(s.lost)}; missing frames {int(s.missing.sum())}; "
          f"malformed messages {s.malformed}; {'complete' if s.complete else 'INCOMPLETE'}")
    if args.ply:
        stripeline.save_ply(s, args.ply)
    return 0 if s.complete else 4


if __name__ == "__main__":
    sys.exit(main())
