#!/usr/bin/env python3
"""Receive a stripeline stream and decode it into numpy arrays.

    python3 tools/subscribe.py tcp://127.0.0.1:5556 [--timeout S] [--messages N]

The first thing to copy: every message is [topic, JSON header, arrays...];
header["parts"] gives each array's name, dtype and shape (docs/wire-format.md).
Needs pyzmq and numpy (Debian: python3-zmq python3-numpy).
"""
import argparse
import json
import sys

import numpy as np
import zmq


def decode(frames):
    """[topic, header, arrays...] -> (topic, header dict, {name: ndarray})."""
    topic = frames[0].decode()
    header = json.loads(frames[1])
    arrays = {}
    for desc, buf in zip(header.get("parts", []), frames[2:]):
        arrays[desc["name"]] = np.frombuffer(buf, dtype=np.dtype(desc["dtype"])).reshape(desc["shape"])
    return topic, header, arrays


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("endpoint")
    ap.add_argument("--timeout", type=float, default=30.0, help="give up after this many seconds without a message (exit 3)")
    ap.add_argument("--messages", type=int, default=0, help="stop after this many messages (default: at series-end)")
    args = ap.parse_args()

    sock = zmq.Context.instance().socket(zmq.SUB)
    sock.connect(args.endpoint)
    sock.setsockopt(zmq.SUBSCRIBE, b"")  # every topic; b"profile" for rows only

    last_seq, rows, points, missing, count = None, 0, 0, 0, 0
    while True:
        if not sock.poll(int(args.timeout * 1000)):
            print(f"timeout: no message for {args.timeout} s", file=sys.stderr)
            return 3
        topic, h, a = decode(sock.recv_multipart())
        count += 1
        if last_seq is not None and h["seq"] > last_seq + 1:
            missing += h["seq"] - last_seq - 1
            print(f"gap: seq {last_seq + 1}..{h['seq'] - 1} missing")
        last_seq = h["seq"]
        if topic == "series-start":
            print(f"series-start {h['series']} width {h['width']} unit {h['unit']}")
        elif topic == "profile":
            z = a["z"]  # float32 [rows, slots, width], NaN = no detection; mm when calibrated
            rows += h["rows"]
            points += int(np.count_nonzero(~np.isnan(z)))
            print(f"profile seq {h['seq']} frame {h['frame']} rows {h['rows']} z {z.shape} "
                  f"mean {np.nanmean(z) if np.isfinite(z).any() else float('nan'):.3f} {h['unit']}")
        elif topic == "series-end":
            ok = rows == h["profile_rows"] and missing == 0
            print(f"series-end: received rows {rows} points {points} of {h['profile_rows']} published; "
                  f"missing messages {missing}; {'complete' if ok else 'INCOMPLETE'}")
            return 0
        if args.messages and count >= args.messages:
            print(f"stopped after {count} messages: rows {rows} points {points}")
            return 0


if __name__ == "__main__":
    sys.exit(main())
