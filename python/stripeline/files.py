"""Save a Series as PLY (same vertex layout as the C++ PlySink) or NPZ; read a PLY back."""
import numpy as np

from .series import Series

# The C++ PlySink's vertex (docs/data-model.md): packed, 27 bytes. y is float64
# (the scan axis: frame indices past 2^24 stay exact), slot 0 = the column's
# primary peak, width = the stripe's width in pixels.
_VERTEX = np.dtype([("x", "<f4"), ("y", "<f8"), ("z", "<f4"), ("intensity", "<f4"), ("quality", "<f4"),
                    ("slot", "u1"), ("width", "<u2")])
_PLY_TYPES = {"char": "i1", "int8": "i1", "uchar": "u1", "uint8": "u1", "short": "i2", "int16": "i2",
              "ushort": "u2", "uint16": "u2", "int": "i4", "int32": "i4", "uint": "u4", "uint32": "u4",
              "float": "f4", "float32": "f4", "double": "f8", "float64": "f8"}


def _header(n, unit, props):
    return ("ply\nformat binary_little_endian 1.0\ncomment stripeline python\n"
            f"comment units {unit}\nelement vertex {n}\n" + props + "end_header\n")


def save_ply(series: Series, path, calibration=None):
    x, y, z, inten = series.points(calibration)
    v = np.empty(len(x), dtype=_VERTEX)
    v["x"], v["y"], v["z"], v["intensity"] = x, y, z, inten
    v["quality"] = series.point_quality(calibration)
    v["slot"] = series.point_slots(calibration)
    v["width"] = series.point_widths(calibration)
    unit = (calibration or series.calibration).unit if (calibration or series.calibration).enabled else "px"
    props = ("property float x\nproperty double y\nproperty float z\nproperty float intensity\n"
             "property float quality\nproperty uchar slot\nproperty ushort width\n")
    with open(path, "wb") as f:
        f.write(_header(len(v), unit, props).encode("ascii"))
        f.write(v.tobytes())


def read_ply(path):
    """A binary (little- or big-endian) or ASCII PLY whose only element is the vertex, of scalar
    properties (any PLY type; stripeline's: float x, double y, float z, float intensity, float
    quality, uchar slot, ushort width, and older files' float x, y, z, intensity [, quality])
    -> a structured array with the file's properties, names and types."""
    with open(path, "rb") as f:
        data = f.read()
    end = data.find(b"end_header\n")
    if end < 0:
        raise ValueError(f"{path}: no end_header (not a PLY)")
    lines = [l.strip() for l in data[:end].decode("ascii", "replace").splitlines()]
    fmt = next((l.split()[1] for l in lines if l.startswith("format ")), None)
    elements = [l.split() for l in lines if l.startswith("element ")]
    if len(elements) != 1 or elements[0][1] != "vertex":
        raise ValueError(f"{path}: expected one vertex element")
    n = int(elements[0][2])
    fields = []
    for l in lines:
        w = l.split()
        if w[:1] != ["property"]:
            continue
        if len(w) != 3 or w[1] not in _PLY_TYPES:
            raise ValueError(f"{path}: unsupported PLY property line '{l}' (expected scalar properties)")
        fields.append((w[2], _PLY_TYPES[w[1]]))
    if [f[0] for f in fields[:3]] != ["x", "y", "z"]:
        raise ValueError(f"{path}: expected the vertex properties to start with x, y, z")
    body = data[end + len(b"end_header\n"):]
    if fmt in ("binary_little_endian", "binary_big_endian"):
        order = "<" if fmt == "binary_little_endian" else ">"
        vertex = np.dtype([(k, order + t) for k, t in fields])
        if len(body) < n * vertex.itemsize:
            raise ValueError(f"{path}: {len(body)} bytes of vertices (expected {n * vertex.itemsize})")
        return np.frombuffer(body, dtype=vertex, count=n).astype(vertex.newbyteorder("<"))
    if fmt == "ascii":
        vertex = np.dtype([(k, "<" + t) for k, t in fields])
        words = body.split()[:len(fields) * n]
        if len(words) != len(fields) * n:
            raise ValueError(f"{path}: {len(words)} values (expected {len(fields) * n})")
        cols = np.array(words).reshape(n, len(fields))
        v = np.empty(n, dtype=vertex)
        for i, (k, t) in enumerate(fields):
            v[k] = cols[:, i].astype(np.float64 if t[0] == "f" else np.int64).astype(t)
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
