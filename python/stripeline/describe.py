"""What a stripeline output says about itself: its metadata document (docs/data-model.md
"Metadata"; written by core/metadata.h) in a PNG tEXt "Description" / TIFF ImageDescription, a
PLY's "stripeline-metadata" comment or a JSON file (summary.json); a calibration file's TOML.
The same facts as `stripeline describe --json` (tools/cmd_describe.cpp)."""
import json
import struct
import zlib

PLY_COMMENT_KEY = "stripeline-metadata "


def describe(path):
    """-> {"format": "PNG"|"TIFF"|"PLY"|"JSON"|"TOML", then the document's fields: "stripeline"
    (the kind), "schema", "software", "source", "method", "height_bits", "calibration", ...};
    ValueError when the file carries no stripeline metadata."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        return _with_format(path, "PNG", _png_text(data).get("Description"))
    if data[:4] in (b"II*\x00", b"MM\x00*"):
        return _with_format(path, "TIFF", _tiff_description(data))
    if data[:4] == b"ply\n" or data[:5] == b"ply\r\n":
        return _with_format(path, "PLY", _ply_comment(data))
    if str(path).endswith(".toml"):
        return _calibration(path, data)
    text = data.decode("utf-8", "replace").lstrip()
    if not text.startswith("{"):
        raise ValueError(f"{path}: not a PNG, TIFF, PLY or JSON file (expected a stripeline output)")
    return _with_format(path, "JSON", text)


def find_document(text):
    """The metadata document in a description or comment text, or None (core/metadata.h find_document)."""
    if text and text.startswith(PLY_COMMENT_KEY):
        text = text[len(PLY_COMMENT_KEY):]
    if not text or not text.startswith("{"):
        return None
    try:
        j = json.loads(text)
    except ValueError:
        return None
    if not isinstance(j, dict) or "stripeline" not in j:
        return None
    if isinstance(j["stripeline"], dict):  # a recording written before schema 1
        return {"stripeline": "recording", "schema": 0, **j["stripeline"]}
    return j if isinstance(j["stripeline"], str) else None


def _with_format(path, fmt, text):
    d = find_document(text)
    if d is None:
        raise ValueError(f"{path}: carries no stripeline metadata (written before it, or not by stripeline; docs/data-model.md)")
    return {"format": fmt, **d}


def _calibration(path, data):
    """A calibration file's facts, as calibration_file_document() (calibration/calibration_file.cpp) gives them."""
    import tomllib
    try:
        t = tomllib.loads(data.decode("utf-8"))
        cal = t["calibration"]
    except (ValueError, KeyError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: not a stripeline calibration file ({e})") from None
    sensor, motion = t.get("sensor", {}), t.get("motion", {})
    d = {"format": "TOML", "stripeline": "calibration", "model": cal.get("model"), "unit": cal.get("unit"), "id": cal.get("id")}
    for key in ("width", "height"):
        if sensor.get(key, 0) > 0:
            d["sensor_" + key] = sensor[key]
    if "roi" in sensor and sensor["roi"][2] > 0:
        d["roi"] = list(sensor["roi"])
    d["y_source"] = motion.get("y_source", "frame")
    d["y_step_mm"] = float(motion.get("y_step_mm", 1.0))
    if "y_per_tick_mm" in motion:
        d["y_per_tick_mm"] = float(motion["y_per_tick_mm"])
    d["y_offset_mm"] = float(motion.get("y_offset_mm", 0.0))
    if "fit" in t:
        d["fit"] = dict(t["fit"])
    return d


def _png_text(data):
    out, at = {}, 8
    while at + 8 <= len(data):
        n, kind = struct.unpack(">I4s", data[at:at + 8])
        body = data[at + 8:at + 8 + n]
        if kind == b"tEXt" and b"\x00" in body:
            k, v = body.split(b"\x00", 1)
            out[k.decode("latin-1")] = v.decode("latin-1")
        elif kind == b"zTXt" and b"\x00" in body:
            k, v = body.split(b"\x00", 1)
            out[k.decode("latin-1")] = zlib.decompress(v[1:]).decode("latin-1")
        elif kind == b"IEND":
            break
        at += 12 + n
    return out


def _tiff_description(data):
    e = "<" if data[:2] == b"II" else ">"
    ifd = struct.unpack(e + "I", data[4:8])[0]
    if ifd + 2 > len(data):
        return None
    count = struct.unpack(e + "H", data[ifd:ifd + 2])[0]
    for i in range(count):
        tag, typ, n, value = struct.unpack(e + "HHII", data[ifd + 2 + 12 * i:ifd + 14 + 12 * i])
        if tag == 270 and typ == 2:
            raw = data[ifd + 10 + 12 * i:ifd + 14 + 12 * i][:n] if n <= 4 else data[value:value + n]
            return raw.rstrip(b"\x00").decode("utf-8", "replace")
    return None


def _ply_comment(data):
    end = data.find(b"end_header")
    for line in data[:end].decode("ascii", "replace").splitlines():
        if line.startswith("comment " + PLY_COMMENT_KEY):
            return line[len("comment "):]
    return None


def main(argv=None):
    import sys
    paths = sys.argv[1:] if argv is None else argv
    rc = 0
    for p in paths:
        try:
            print(json.dumps({"file": p, **describe(p)}))  # one line a file, as `stripeline describe --json`
        except (OSError, ValueError) as e:
            print(f"{e}", file=sys.stderr)
            rc = 2
    return rc
