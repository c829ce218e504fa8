"""Receive one replayed series into numpy arrays and compare it with the replay's PLY.

    build/stripeline replay rec.tiff -H 52 --ply rec.ply --publish tcp://127.0.0.1:5556 --wait-subscriber 10 &
    python3 receive_series.py tcp://127.0.0.1:5556 rec.ply

With a sheet-of-light calibration (`replay ... --calibration cal.toml`) the points are
X/Y/Z in mm, the very values of the replay's PLY: the publisher sends the processor's
points with each message; from one that leaves them out (`--publish-no-points`) or an
older one, the package maps the rows with the model series-start carries.
"""
import os
import sys
import time

import numpy as np
import stripeline

s = stripeline.receive_series(sys.argv[1], timeout=30)   # follows one series to its series-end
x, y, z, intensity = s.points()                          # per point, as in the PLY (y float64, the rest float32)
c = s.calibration
if isinstance(c, stripeline.SheetCalibration):           # the sheet-of-light model, in mm
    how = "carried by the messages" if s.xyz is not None else "mapped here with the model"
    print(f"calibration {c.model} id {c.id or '?'} ({c.unit}), X/Y/Z {how}")
else:
    print(f"calibration {'linear' if c.enabled else 'none'} ({c.unit if c.enabled else 'px'})")
print(f"rows {s.rows}, points {len(x)}, lost {len(s.lost)}, gaps {s.gaps}, malformed {s.malformed}, complete {s.complete}")
if len(x):
    print(f"x {x.min():.3f}..{x.max():.3f}, y {y.min():.3f}..{y.max():.3f}, z {z.min():.3f}..{z.max():.3f}")
if len(sys.argv) > 2:
    for _ in range(100):  # the replay writes its PLY (under its final name) as it ends
        if os.path.exists(sys.argv[2]):
            break
        time.sleep(0.1)
    ref = stripeline.read_ply(sys.argv[2])
    print("identical to the PLY:", len(x) == len(ref) and all(np.array_equal(a, ref[k]) for a, k in
                                                             zip((x, y, z, intensity), ("x", "y", "z", "intensity"))))
