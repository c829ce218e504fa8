"""Receive one replayed series into numpy arrays and compare it with the replay's PLY.

    build/stripeline replay rec.tiff -H 52 --ply rec.ply --publish tcp://127.0.0.1:5556 --wait-subscriber 10 &
    python3 receive_series.py tcp://127.0.0.1:5556 rec.ply
"""
import sys

import numpy as np
import stripeline

s = stripeline.receive_series(sys.argv[1], timeout=30)   # follows one series to its series-end
x, y, z, intensity = s.points()                          # per detected point (y float64), X/Y/Z via the calibration
print(f"rows {s.rows}, lost {len(s.lost)}, gaps {s.gaps}, malformed {s.malformed}, complete {s.complete}")
if len(sys.argv) > 2:
    ref = stripeline.read_ply(sys.argv[2])
    print("identical to the PLY:", all(np.array_equal(a, ref[k]) for a, k in zip((x, y, z, intensity), ref.dtype.names)))
