#!/usr/bin/env python3
"""ctest Viewers.ReadTheNewPly: the PLY stripeline writes (float x, double y,
float z, float intensity, float quality, uchar slot, ushort width) opened by the
tools users open it with, where they are installed (each absent tool is said,
not failed; exit 77 when none is):
  - Open3D (python3-open3d): o3d.io.read_point_cloud (points), and the tensor
    API built from stripeline.read_ply (points + every property);
    o3d.t.io.read_point_cloud on the file itself is run in a child and its
    outcome reported (Open3D 0.16 crashes on x/z float32 beside y float64);
  - PCL (pcl-tools): pcl_ply2pcd keeps every property with its type; values checked;
  - CloudCompare (cloudcompare, command line, offscreen): the points and intensity.
What each shows is in docs/data-model.md ("Which viewer shows what").
usage: check_ply_viewers.py BINARY SOURCE_DIR
"""
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

binary, source = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.join(source, "python"))
import stripeline  # noqa: E402

failures, tools = [], []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


with tempfile.TemporaryDirectory(prefix="stripeline-viewers.") as tmp:
    rec, ply = os.path.join(tmp, "rec.tiff"), os.path.join(tmp, "p.ply")
    subprocess.run([binary, "synth", rec, "--width", "300", "--frames", "40", "--reflection", "0.2"], check=True, stdout=subprocess.DEVNULL)
    subprocess.run([binary, "replay", rec, "-H", "52", "-q", "--method", "local-max", "--selection", "all", "--ply", ply],
                   check=True, stdout=subprocess.DEVNULL)
    ref = stripeline.read_ply(ply)
    n = len(ref)
    print(f"PLY: {n} vertices, properties {ref.dtype.names}, y {ref.dtype['y']}, slots {sorted(set(ref['slot'].tolist()))}")

    # --- Open3D
    o3d_ok = subprocess.run([sys.executable, "-c", "import open3d"], capture_output=True).returncode == 0
    if o3d_ok:
        tools.append("Open3D")
        code = ("import sys, open3d as o3d, numpy as np\n"
                "pc = o3d.io.read_point_cloud(sys.argv[1])\n"
                "print(len(pc.points))\n")
        r = subprocess.run([sys.executable, "-c", code, ply], capture_output=True, text=True)
        check(r.returncode == 0 and r.stdout.split()[-1] == str(n), f"Open3D o3d.io.read_point_cloud: {r.stdout.strip()} points (x, y, z only)")
        code = ("import sys, numpy as np, open3d as o3d\n"
                f"sys.path.insert(0, {os.path.join(source, 'python')!r})\n"
                "import stripeline\n"
                "v = stripeline.read_ply(sys.argv[1])\n"
                "pc = o3d.t.geometry.PointCloud(o3d.core.Tensor(np.stack([v['x'], v['y'], v['z']], 1).astype(np.float64)))\n"
                "for k in ('intensity', 'quality', 'slot', 'width'):\n"
                "    a = v[k].astype(v[k].dtype.newbyteorder('='))  # Open3D takes native-order arrays only\n"
                "    pc.point[k] = o3d.core.Tensor(np.ascontiguousarray(a.reshape(-1, 1)))\n"
                "print(pc.point.positions.shape[0], pc.point.positions.dtype, int(pc.point.slot.max().item()), int(pc.point.width.max().item()))\n")
        r = subprocess.run([sys.executable, "-c", code, ply], capture_output=True, text=True)
        check(r.returncode == 0 and r.stdout.split()[:1] == [str(n)],
              f"Open3D tensor point cloud from stripeline.read_ply: {r.stdout.strip()} (points, dtype, max slot, max width) {r.stderr.strip()[-300:]}")
        r = subprocess.run([sys.executable, "-c", "import sys, open3d as o3d; print(o3d.t.io.read_point_cloud(sys.argv[1]))", ply],
                           capture_output=True, text=True)
        outcome = r.stdout.strip().replace("\n", " ") if r.returncode == 0 else f"exit {r.returncode}" + (" (SIGSEGV)" if r.returncode == -11 else "")
        print(f"info o3d.t.io.read_point_cloud on the file: {outcome}")
    else:
        print("skip Open3D: not installed (python3-open3d)")

    # --- PCL
    if shutil.which("pcl_ply2pcd"):
        tools.append("PCL")
        pcd = os.path.join(tmp, "p.pcd")
        r = subprocess.run(["pcl_ply2pcd", ply, pcd], capture_output=True, text=True)
        check(r.returncode == 0, f"pcl_ply2pcd exit {r.returncode}")
        data = open(pcd, "rb").read()
        header, body = data.split(b"DATA binary\n", 1)
        h = dict(l.split(" ", 1) for l in header.decode().splitlines() if l and not l.startswith("#"))
        check(h.get("FIELDS") == "x y z intensity quality slot width", f"PCL FIELDS {h.get('FIELDS')}")
        check(h.get("SIZE") == "4 8 4 4 4 1 2" and h.get("TYPE") == "F F F F F U U", f"PCL SIZE {h.get('SIZE')} TYPE {h.get('TYPE')}")
        check(h.get("POINTS") == str(n), f"PCL POINTS {h.get('POINTS')}")
        got = np.frombuffer(body, dtype=ref.dtype, count=n)
        check(all(np.array_equal(got[k], ref[k]) for k in ref.dtype.names), "PCL values equal the PLY's, every property")
    else:
        print("skip PCL: pcl_ply2pcd not installed (apt-get install pcl-tools)")

    # --- CloudCompare
    cc = shutil.which("CloudCompare")
    if cc:
        tools.append("CloudCompare")
        asc = os.path.join(tmp, "cc.asc")
        env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
        r = subprocess.run([cc, "-SILENT", "-O", ply, "-C_EXPORT_FMT", "ASC", "-PREC", "12", "-ADD_HEADER", "-SEP", "SPACE",
                            "-SAVE_CLOUDS", "FILE", asc], capture_output=True, text=True, env=env, cwd=tmp, timeout=300)
        check(r.returncode == 0 and os.path.exists(asc), f"CloudCompare -SILENT exit {r.returncode}")
        if os.path.exists(asc):
            lines = open(asc).read().splitlines()
            cols = lines[0].lstrip("/").split()
            vals = np.loadtxt(lines[1:])
            check(len(vals) == n, f"CloudCompare: {len(vals)} points, columns {cols}")
            check(np.allclose(vals[:, 1], ref["y"]) and np.allclose(vals[:, 3], ref["intensity"]),
                  "CloudCompare y and intensity equal the PLY's")
    else:
        print("skip CloudCompare: not installed (apt-get install cloudcompare)")

print(f"viewers checked: {', '.join(tools) or 'none'}; {len(failures)} failures")
sys.exit(1 if failures else (77 if not tools else 0))
