"""Save a Series as PLY (same vertex layout as the C++ PlySink) or NPZ; read a PLY back."""
import numpy as np

from .series import Series

_VERTEX = np.dtype([("x", "<f4"), ("y", "<f4"), ("z", "<f4"), ("intensity", "<f4"), ("quality", "<f4")])
_VERTEX_OLD = np.dtype([("x", "<f4"), ("y", "<f4"), ("z", "<f4"), ("intensity", "<f4")])  # before quality


def save_ply(series: Series, path, calibration=None):
    x, y, z, inten = series.points(calibration)
    v = np.empty(len(x), dtype=_VERTEX)
    v["x"], v["y"], v["z"], v["intensity"] = x, y, z, inten
    v["quality"] = series.point_quality()
    unit = (calibration or series.calibration).unit if (calibration or series.calibration).enabled else "px"
    header = ("ply\nformat binary_little_endian 1.0\ncomment stripeline python\n"
              f"comment units {unit}\nelement vertex {len(v)}\n"
              "property float x\nproperty float y\nproperty float z\nproperty float intensity\nproperty float quality\nend_header\n")
    with open(path, "wb") as f:
        f.write(header.encode("ascii"))
        f.write(v.tobytes())


def read_ply(path):
    """A binary-little-endian or ASCII PLY of float x, y, z, intensity [, quality] -> structured array."""
    with open(path, "rb") as f:
        data = f.read()
    end = data.find(b"end_header\n")
    if end < 0:
        raise ValueError(f"{path}: no end_header (not a PLY)")
    lines = data[:end].decode("ascii", "replace").splitlines()
    fmt = next((l.split()[1] for l in lines if l.startswith("format ")), None)
    n = next((int(l.split()[2]) for l in lines if l.startswith("element vertex")), None)
    props = [l.split()[-1] for l in lines if l.startswith("property ")]
    if n is None or props not in (["x", "y", "z", "intensity"], ["x", "y", "z", "intensity", "quality"]):
        raise ValueError(f"{path}: expected one vertex element of float x, y, z, intensity [, quality]")
    vertex = _VERTEX if len(props) == 5 else _VERTEX_OLD
    body = data[end + len(b"end_header\n"):]
    if fmt == "binary_little_endian":
        if len(body) < n * vertex.itemsize:
            raise ValueError(f"{path}: {len(body)} bytes of vertices (expected {n * vertex.itemsize})")
        return np.frombuffer(body, dtype=vertex, count=n)
    if fmt == "ascii":
        k_props = len(vertex.names)
        vals = np.array(body.split()[:k_props * n], dtype=np.float32).reshape(n, k_props)
        v = np.empty(n, dtype=vertex)
        for i, k in enumerate(vertex.names):
            v[k] = vals[:, i]
        return v
    raise ValueError(f"{path}: unsupported PLY format '{fmt}'")


def save_npz(series: Series, path):
    """Every array of the series plus its points and identity, compressed."""
    x, y, z, inten = series.points()
    s = series.start
    np.savez_compressed(
        path, z=series.z, intensity=series.intensity, width=series.width, index=series.index,
        frame_ids=series.frame_ids, timestamps_ns=series.timestamps_ns, encoder=series.encoder,
        has_encoder=series.has_encoder, received=series.received, missing=series.missing,
        points=np.stack([x, y, z, inten], axis=1),
        series=np.array(s.series if s else ""), unit=np.array(series.calibration.unit if series.calibration.enabled else "px"),
        height_bits=np.array(s.height_bits if s else -1), software=np.array(s.software if s else ""))
