"""Decode and validate one stripeline message (docs/wire-format.md, format 1.x).

decode() raises MalformedMessage with one line saying what is wrong; the
client counts and skips such messages instead of letting them escape.
"""
import json
import math
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

FORMAT_MAJOR = 1
TOPICS = ("series-start", "profile", "heightmap", "series-end", "stats")
MAX_WIDTH = 1 << 16        # as the C++ decoder (kMaxWidth)
MAX_SLOTS = 4096           # slots never exceed a frame's height
ROW_PARTS = (("z", "<f4"), ("intensity", "<u2"), ("width", "<u2"), ("quality", "<u2"))  # quality: format 1.1 on
_U64 = (0, (1 << 64) - 1)
_I64 = (-(1 << 63), (1 << 63) - 1)


MAX_ROWS_PER_MESSAGE = 1 << 20   # as the C++ decoder (wire::kMaxRowsPerMessage)
MAX_SERIES_ROW = 1 << 48
MAX_FRAME_HEIGHT = 4096          # kMaxFrameHeight
_SERIES_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._:")


class MalformedMessage(ValueError):
    """A message that does not follow the wire format; the text is one printable line,
    `reason` a short key to count by (as the C++ subscriber: parts, topic, header, htype,
    version, field, range, shape, size, values; the assembler adds seq, repeated,
    geometry, overlap, series-row)."""

    def __init__(self, text, reason="field"):
        super().__init__(printable(text, 300))
        self.reason = reason


def printable(s, limit=80):
    """At most `limit` characters of s, anything outside printable ASCII as '?'."""
    s = str(s)
    out = "".join(c if " " <= c <= "~" else "?" for c in s[:limit])
    return out + ("..." if len(s) > limit else "")


@dataclass
class Calibration:
    """The linear mapping a series carries (core/calibration.h)."""
    enabled: bool = False
    unit: str = "px"
    x_scale: float = 1.0
    x_offset: float = 0.0
    y_scale: float = 1.0
    y_offset: float = 0.0
    z_scale: float = 1.0
    z_offset: float = 0.0
    y_from_encoder: bool = False

    @classmethod
    def from_json(cls, j):
        if j is None:
            return cls()
        if not isinstance(j, dict):
            raise MalformedMessage("calibration is not an object")
        c = cls()
        for name in ("enabled", "y_from_encoder"):
            if name in j:
                setattr(c, name, _bool(j[name], "calibration." + name))
        for name in ("x_scale", "x_offset", "y_scale", "y_offset", "z_scale", "z_offset"):
            if name in j:
                setattr(c, name, _finite(j[name], "calibration." + name))
        if "unit" in j:
            c.unit = _str(j["unit"], "calibration.unit")
        return c


@dataclass
class Message:
    topic: str
    header: dict
    series: str
    seq: int
    time_ns: int


@dataclass
class SeriesStart(Message):
    width: int = 0
    frame_height: int = 0
    slots: int = 1
    unit: str = "px"
    height_bits: int = 6
    method: str = ""
    source: str = ""
    software: str = ""
    calibration: Calibration = field(default_factory=Calibration)


@dataclass
class Rows(Message):
    """A profile or heightmap message: arrays are [rows, slots, width]."""
    series_row: int = 0
    index: int = 0
    frame: int = 0
    rows: int = 0
    width: int = 0
    slots: int = 1
    frame_ids: np.ndarray = None
    timestamps_ns: np.ndarray = None
    encoder: np.ndarray = None          # int64, valid where has_encoder
    has_encoder: np.ndarray = None      # bool
    missing_rows: np.ndarray = None     # bool [rows]
    calibration: Calibration = field(default_factory=Calibration)
    z: np.ndarray = None
    intensity: np.ndarray = None
    stripe_width: np.ndarray = None
    quality: np.ndarray = None          # contrast above the local background (0 from a 1.0 sender)


@dataclass
class SeriesEnd(Message):
    profile_rows: int = 0
    profile_messages: int = 0
    rows_in: int = 0
    messages: int = 0
    reason: str = ""
    rows_dropped: dict = field(default_factory=dict)


@dataclass
class Stats(Message):
    pass


def _int(v, what, lo, hi):
    if isinstance(v, bool) or not isinstance(v, int):
        raise MalformedMessage(f"{what} is {printable(repr(v), 40)} (expected an integer in {lo}..{hi})", "field")
    if not lo <= v <= hi:
        raise MalformedMessage(f"{what} is {printable(repr(v), 40)} (expected an integer in {lo}..{hi})", "range")
    return v


def _finite(v, what):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise MalformedMessage(f"{what} is {printable(repr(v), 40)} (expected a finite number)")
    return float(v)


def _bool(v, what):
    if not isinstance(v, bool):
        raise MalformedMessage(f"{what} is {printable(repr(v), 40)} (expected true or false)")
    return v


def _str(v, what):
    if not isinstance(v, str):
        raise MalformedMessage(f"{what} is {printable(repr(v), 40)} (expected a string)")
    return v


def _need(h, name):
    if name not in h:
        raise MalformedMessage(f"header field '{name}' is missing")
    return h[name]


def _int_list(h, name, n, lo, hi, allow_null=False):
    v = _need(h, name)
    if not isinstance(v, list) or len(v) != n:
        raise MalformedMessage(f"{name} has {len(v) if isinstance(v, list) else type(v).__name__} entries (expected {n})",
                               "shape" if isinstance(v, list) else "field")
    return [None if (allow_null and e is None) else _int(e, name + "[]", lo, hi) for e in v]


def decode(frames):
    """[topic, header, arrays...] (bytes) -> a typed Message; MalformedMessage otherwise."""
    if len(frames) < 2:
        raise MalformedMessage(f"{len(frames)} parts (expected at least 2: topic, header)", "parts")
    try:
        topic = bytes(frames[0]).decode("ascii")
    except UnicodeDecodeError:
        raise MalformedMessage("the topic is not ASCII", "topic") from None
    if topic not in TOPICS:
        raise MalformedMessage(f"unknown topic '{printable(topic, 40)}'", "topic")
    try:
        h = json.loads(bytes(frames[1]), parse_constant=_no_constant)
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        raise MalformedMessage(f"the header is not JSON ({printable(e, 160)})", "header") from None
    if not isinstance(h, dict):
        raise MalformedMessage("the header is not a JSON object", "header")
    if not isinstance(h.get("htype"), str):
        raise MalformedMessage("'htype' is missing or not a string", "htype")
    htype = h["htype"]
    prefix = f"stripeline-{topic}-"
    if not htype.startswith(prefix):
        raise MalformedMessage(f"htype '{printable(htype, 60)}' does not match topic '{topic}'", "htype")
    if htype[len(prefix):].split(".")[0] != str(FORMAT_MAJOR):
        raise MalformedMessage(f"htype '{printable(htype, 60)}' has an unsupported major version (expected {FORMAT_MAJOR}.x)",
                               "version")
    series = _str(_need(h, "series"), "series")
    if not 1 <= len(series) <= 64 or not set(series) <= _SERIES_CHARS:
        raise MalformedMessage(f"series is '{printable(series, 40)}' (expected 1..64 characters of A-Z a-z 0-9 . _ : -, a UUID)")
    base = dict(topic=topic, header=h, series=series,
                seq=_int(_need(h, "seq"), "seq", *_U64), time_ns=_int(h.get("time_ns", 0), "time_ns", *_I64))
    if topic == "series-start":
        return _series_start(h, base)
    if topic in ("profile", "heightmap"):
        return _rows(h, base, frames)
    if topic == "series-end":
        dropped = h.get("rows_dropped", {})
        if not isinstance(dropped, dict):
            raise MalformedMessage(f"rows_dropped is {printable(repr(dropped), 40)} (expected an object)")
        for k in ("hwm", "no_subscriber", "error"):
            if k in dropped:
                _int(dropped[k], "rows_dropped." + k, *_U64)
        if "scan" in h:
            _int(h["scan"], "scan", *_U64)
        return SeriesEnd(**base,
                         profile_rows=_int(_need(h, "profile_rows"), "profile_rows", *_U64),
                         profile_messages=_int(h.get("profile_messages", 0), "profile_messages", *_U64),
                         rows_in=_int(h.get("rows_in", 0), "rows_in", *_U64),
                         messages=_int(h.get("messages", 0), "messages", *_U64),
                         reason=_str(h.get("reason", ""), "reason"),
                         rows_dropped=dropped)
    for k in ("series_rows_in", "series_rows_published"):
        if k in h:
            _int(h[k], k, *_U64)
    for k in ("series_rows_dropped", "total"):
        if k in h:
            if not isinstance(h[k], dict):
                raise MalformedMessage(f"{k} is not an object")
            for name, v in h[k].items():  # counts, or counts by reason ({hwm, no_subscriber, error})
                for e in (v.values() if isinstance(v, dict) else (v,)):
                    _int(e, f"{k}.{printable(name, 30)}", *_U64)
    return Stats(**base)


def _no_constant(name):
    raise ValueError(f"{name} is not JSON")


def _series_start(h, base):
    cal = Calibration.from_json(h.get("calibration"))
    unit = _str(h.get("unit", cal.unit), "unit")
    if unit not in ("mm", "px"):
        raise MalformedMessage(f"unit '{unit[:20]}' (expected mm or px)")
    frame_height = _int(h.get("frame_height", 0), "frame_height", 0, MAX_FRAME_HEIGHT)
    height_bits = _int(h.get("height_bits", 6), "height_bits", 0, 8)
    if frame_height > (65535 >> height_bits):
        raise MalformedMessage(f"frame_height {frame_height} does not fit the height code with height_bits {height_bits} "
                               f"(expected at most {65535 >> height_bits})", "range")
    for k in ("rows_per_message", "heightmap_rows"):
        if k in h:
            _int(h[k], k, 0, MAX_ROWS_PER_MESSAGE)
    for k in ("backend", "pixel_format", "pixel_bits_origin", "format", "point_unit"):
        if k in h:
            _str(h[k], k)
    if "pixel_bits" in h:
        _int(h["pixel_bits"], "pixel_bits", 8, 16)
    if "scan" in h:
        _int(h["scan"], "scan", *_U64)
    if "sheet_calibration" in h and not isinstance(h["sheet_calibration"], dict):
        raise MalformedMessage("sheet_calibration is not an object")
    return SeriesStart(**base,
                       width=_int(_need(h, "width"), "width", 0, MAX_WIDTH),
                       frame_height=frame_height,
                       slots=_int(h.get("slots", 1), "slots", 1, MAX_SLOTS),
                       unit=unit,
                       height_bits=height_bits,
                       method=_str(h.get("method", ""), "method"),
                       source=_str(h.get("source", ""), "source"),
                       software=_str(h.get("software", ""), "software"),
                       calibration=cal)


def _rows(h, base, frames):
    rows = _int(_need(h, "rows"), "rows", 0, MAX_ROWS_PER_MESSAGE)
    width = _int(_need(h, "width"), "width", 1, MAX_WIDTH)
    slots = _int(_need(h, "slots"), "slots", 1, MAX_SLOTS)
    series_row = _int(_need(h, "series_row"), "series_row", 0, MAX_SERIES_ROW)
    if "height_bits" in h:
        _int(h["height_bits"], "height_bits", 0, 8)
    if "unit" in h and h["unit"] not in ("mm", "px"):
        raise MalformedMessage(f"unit is {printable(repr(h['unit']), 20)} (expected mm or px)")
    index = _int(_need(h, "index"), "index", *_U64)
    frame_ids = _int_list(h, "frame_ids", rows, *_U64)
    stamps = _int_list(h, "timestamps_ns", rows, *_I64)
    enc = _int_list(h, "encoder", rows, *_I64, allow_null=True)
    missing = np.zeros(rows, dtype=bool)
    mr = h.get("missing_rows", [])
    if not isinstance(mr, list):
        raise MalformedMessage("missing_rows is not a list")
    for m in mr:
        if rows == 0:
            raise MalformedMessage(f"missing_rows holds {printable(repr(m), 20)} in a message of 0 rows", "range")
        missing[_int(m, "missing_rows[]", 0, rows - 1)] = True
    # 1.0 sends z, intensity, width; 1.1 adds quality (docs/wire-format.md).
    if len(frames) not in (5, 6):
        raise MalformedMessage(f"a {base['topic']} message has {len(frames)} parts (expected 5 or 6)", "parts")
    parts = _need(h, "parts")
    if not isinstance(parts, list) or len(parts) != len(frames) - 2:
        raise MalformedMessage(f"parts does not describe the message's {len(frames) - 2} arrays", "shape")
    shape = [rows, slots, width]
    arrays = {}
    for (name, dtype), desc, buf in zip(ROW_PARTS, parts, frames[2:]):
        if not isinstance(desc, dict) or desc.get("name") != name or desc.get("dtype") != dtype or desc.get("shape") != shape:
            raise MalformedMessage(f"parts entry {printable(repr(desc), 120)} (expected name {name}, dtype {dtype}, shape {shape})",
                                   "shape")
        buf = memoryview(frames[2 + len(arrays)]).cast("B") if not isinstance(buf, (bytes, bytearray)) else buf
        want = rows * slots * width * np.dtype(dtype).itemsize
        if len(buf) != want:
            raise MalformedMessage(f"part '{name}' has {len(buf)} bytes (expected {want})", "size")
        arrays[name] = np.frombuffer(buf, dtype=dtype).reshape(shape)
    if np.isinf(arrays["z"]).any():
        raise MalformedMessage("z holds an infinite value (expected finite, or NaN for no detection)", "values")
    return Rows(**base, series_row=series_row, index=index,
                frame=_int(h.get("frame", frame_ids[0] if rows else 0), "frame", *_U64),
                rows=rows, width=width, slots=slots,
                frame_ids=np.array(frame_ids, dtype=np.uint64),
                timestamps_ns=np.array(stamps, dtype=np.int64),
                encoder=np.array([0 if e is None else e for e in enc], dtype=np.int64),
                has_encoder=np.array([e is not None for e in enc], dtype=bool),
                missing_rows=missing, calibration=Calibration.from_json(h.get("calibration")),
                z=arrays["z"], intensity=arrays["intensity"], stripe_width=arrays["width"],
                quality=arrays.get("quality", np.zeros(shape, dtype="<u2")))
