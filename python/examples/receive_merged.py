"""Receive one merged series (`stripeline merge`, directly or through `stripeline proxy`)
and keep it: every merged row's key, head mask and cells, and the merge's counters.

    python3 receive_merged.py tcp://10.213.8.3:5560 --out merged.npz [--server-key proxy.pub --client-key me.secret]

Writes OUT (numpy .npz, under a temporary name, then renamed): encoder, frame, heads
(one per merged row, in arrival order), z [rows, cells] (world Z mm, NaN = no data),
x (the cells' centres, x_min + i dx), arrival_ns (when the row's message came) and sent_ns (the
message's time_ns, the merge's clock), plus OUT.json: the series-start's `merge`
object, the series-end's counters, message gaps and malformed messages. Prints one
summary line. scripts/netns-heads.sh runs it as its consumer (docs/scale-out.md).
Exit 0 when the series ended, 3 when no message came for --timeout seconds.
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import stripeline


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("endpoint")
    ap.add_argument("--out", required=True, help="merged rows, .npz (and OUT.json beside it)")
    ap.add_argument("--server-key", help="CURVE: the publisher's (proxy's) public key file")
    ap.add_argument("--client-key", help="CURVE: this consumer's key file (its public key allowed there)")
    ap.add_argument("--timeout", type=float, default=60.0, help="give up after this many seconds without a message")
    a = ap.parse_args()

    start, end, seq, gaps = None, None, None, 0
    enc, frame, heads, z, arrival, sent = [], [], [], [], [], []
    with stripeline.Subscriber(a.endpoint, server_key=a.server_key, client_key=a.client_key) as sub:
        try:
            for m in sub.messages(a.timeout):
                now = time.time_ns()
                if start is None and m.topic != "series-start":
                    continue  # joined mid-series: wait for the next one
                if m.topic == "series-start":
                    start = m.header
                    seq = m.seq
                    continue
                if m.series != start["series"]:
                    continue
                gaps += m.seq != seq + 1
                seq = m.seq
                if m.topic == "series-end":
                    end = m.header
                    break
                if isinstance(m, stripeline.Rows) and m.form == "rectified" and m.heads is not None:
                    enc.append(m.encoder)
                    frame.append(m.frame_ids)
                    heads.append(m.heads)
                    z.append(m.z.reshape(m.rows, -1))
                    arrival += [now] * m.rows
                    sent += [m.time_ns] * m.rows
        except TimeoutError as e:
            print(f"receive_merged: {e} (rows so far: {sum(len(h) for h in heads)})", file=sys.stderr)
            return 3
        malformed = sub.malformed
    grid = start.get("grid", {})
    cells = z[0].shape[1] if z else 0
    x = grid.get("x_min", 0.0) + grid.get("dx", 1.0) * np.arange(cells)  # cell centres (kernels/rectify.h)
    tmp = a.out + ".part.npz"
    np.savez(tmp, encoder=np.concatenate(enc) if enc else np.zeros(0, np.int64),
             frame=np.concatenate(frame) if frame else np.zeros(0, np.uint64),
             heads=np.concatenate(heads) if heads else np.zeros(0, np.uint64),
             z=np.concatenate(z) if z else np.zeros((0, 0), np.float32), x=x,
             arrival_ns=np.array(arrival, np.int64), sent_ns=np.array(sent, np.int64))
    os.replace(tmp, a.out)
    rows = sum(len(h) for h in heads)
    summary = {"series": start["series"], "merge": start.get("merge"), "grid": grid, "end": end, "rows": rows,
               "message_gaps": gaps, "malformed": malformed}
    with open(a.out + ".json.part", "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=1)
    os.replace(a.out + ".json.part", a.out + ".json")
    span = (arrival[-1] - arrival[0]) / 1e9 if len(arrival) > 1 else 0.0
    print(f"receive_merged: {rows} merged rows in {span:.2f} s, {cells} cells a row, message gaps {gaps}, malformed {malformed}"
          f" -> {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
