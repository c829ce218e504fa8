"""What a stripeline output says about itself: the JSON description in a height map's
PNG tEXt "Description" / TIFF ImageDescription, a PLY's comments, a JSON summary."""
import json
import struct
import zlib


def describe(path):
    """-> dict of the file's self-description (height_bits, rounding, frame_height, method,
    calibration, unit, source, software where written); ValueError when it has none."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        return _json_text(path, _png_text(data).get("Description"))
    if data[:4] in (b"II*\x00", b"MM\x00*"):
        return _json_text(path, _tiff_description(data))
    if data[:4] == b"ply\n":
        return _ply(data)
    try:
        j = json.loads(data)
    except ValueError:
        raise ValueError(f"{path}: not a PNG, TIFF, PLY or JSON file") from None
    if not isinstance(j, dict):
        raise ValueError(f"{path}: the JSON is not an object")
    return j


def _json_text(path, text):
    if not text:
        raise ValueError(f"{path}: carries no stripeline description (written before descriptions, or not by stripeline)")
    try:
        j = json.loads(text)
    except ValueError:
        return {"description": text}
    return j if isinstance(j, dict) else {"description": text}


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


def _ply(data):
    end = data.find(b"end_header")
    out = {"comments": []}
    for line in data[:end].decode("ascii", "replace").splitlines():
        if line.startswith("comment "):
            text = line[len("comment "):]
            out["comments"].append(text)
            key, _, value = text.partition(" ")
            if key in ("method", "units", "source", "software", "height_bits", "calibration"):
                out["unit" if key == "units" else key] = value
    return out


def main(argv=None):
    import sys
    paths = sys.argv[1:] if argv is None else argv
    rc = 0
    for p in paths:
        try:
            print(p + ": " + json.dumps(describe(p), indent=2))
        except (OSError, ValueError) as e:
            print(f"{e}", file=sys.stderr)
            rc = 2
    return rc
