"""python -m stripeline {print,save} ENDPOINT ...: subscribe to a stripeline publisher."""
import argparse
import sys

import numpy as np

from .client import Subscriber
from .files import save_npz, save_ply
from .wire import Rows, SeriesEnd, SeriesStart


def _print(sub, args):
    n = 0
    for m in sub.messages(args.timeout):
        n += 1
        if isinstance(m, SeriesStart):
            print(f"series-start {m.series} width {m.width} slots {m.slots} unit {m.unit} "
                  f"height_bits {m.height_bits} method {m.method} source {m.source}")
        elif isinstance(m, Rows):
            det = int(np.count_nonzero(~np.isnan(m.z)))
            print(f"{m.topic} seq {m.seq} series_row {m.series_row} frame {m.frame} rows {m.rows} points {det}")
        elif isinstance(m, SeriesEnd):
            print(f"series-end seq {m.seq} profile_rows {m.profile_rows} reason {m.reason} malformed {sub.malformed}")
            if not args.follow:
                return 0
        if args.messages and n >= args.messages:
            return 0


def _save(sub, args):
    s = sub.receive_series(args.timeout, args.rows)
    if args.ply:
        save_ply(s, args.ply)
    if args.npz:
        save_npz(s, args.npz)
    for first, count in s.gaps:
        print(f"gap: seq {first}..{first + count - 1} missing ({count} messages)")
    print(f"rows {s.rows} received {int(s.received.sum())} lost {len(s.lost)} missing-frames {int(s.missing.sum())} "
          f"points {len(s.points()[0])} malformed {s.malformed} {'complete' if s.complete else 'INCOMPLETE'}")
    return 0 if s.complete or args.rows else 4


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m stripeline", description=__doc__)
    sp = ap.add_subparsers(dest="cmd", required=True)
    for name in ("print", "save"):
        p = sp.add_parser(name)
        p.add_argument("endpoint")
        p.add_argument("--timeout", type=float, default=30.0, help="seconds without a message before giving up (exit 3)")
        p.add_argument("--server-key", help="CURVE: the publisher's public key file")
        p.add_argument("--client-key", help="CURVE: this client's key file (.secret)")
    sp.choices["print"].add_argument("--messages", type=int, default=0, help="stop after N messages")
    sp.choices["print"].add_argument("--follow", action="store_true", help="keep going after series-end")
    sp.choices["save"].add_argument("--ply", help="write the points here (binary PLY)")
    sp.choices["save"].add_argument("--npz", help="write every array here (numpy .npz)")
    sp.choices["save"].add_argument("--rows", type=int, default=0, help="stop after N rows instead of series-end")
    d = sp.add_parser("describe", help="print what a PNG/TIFF/PLY/JSON output says about itself")
    d.add_argument("files", nargs="+")
    args = ap.parse_args(argv)
    if args.cmd == "describe":
        from .describe import main as describe_main
        return describe_main(args.files)
    try:
        with Subscriber(args.endpoint, server_key=args.server_key, client_key=args.client_key) as sub:
            return (_print if args.cmd == "print" else _save)(sub, args)
    except TimeoutError as e:
        print(f"timeout: {e}", file=sys.stderr)
        return 3
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
