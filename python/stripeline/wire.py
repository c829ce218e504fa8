"""Decode and validate one stripeline message (docs/wire-format.md, format 1.x; 1.3 adds measurement).

decode() raises MalformedMessage with one line saying what is wrong; the
client counts and skips such messages instead of letting them escape.
"""
import json
import math
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

FORMAT_MAJOR = 1
TOPICS = ("series-start", "profile", "heightmap", "series-end", "stats", "measurement")  # measurement: format 1.3 on
MAX_WIDTH = 1 << 16        # as the C++ decoder (kMaxWidth)
MAX_SLOTS = 4096           # slots never exceed a frame's height
ROW_PARTS = (("z", "<f4"), ("intensity", "<u2"), ("width", "<u2"), ("quality", "<u2"))  # quality: format 1.1 on
# Format 1.2, with a sheet-of-light calibration (unless the publisher leaves them out):
# the processor's points [rows, slots, width, 3] (X, Y - motion_y, Z mm; NaN = no point)
# and each row's motion position motion_y [rows] (mm): the PLY's X/Y/Z exactly.
POINT_PARTS = (("points", "<f4"), ("motion_y", "<f8"))
_U64 = (0, (1 << 64) - 1)
_I64 = (-(1 << 63), (1 << 63) - 1)


MAX_ROWS_PER_MESSAGE = 1 << 20   # as the C++ decoder (wire::kMaxRowsPerMessage)
MAX_SERIES_ROW = 1 << 48
MAX_FRAME_HEIGHT = 4096          # kMaxFrameHeight
DISTORTION_COUNT = 5             # k1, k2, k3, p1, p2 (core/sheet_of_light.h)
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
class SheetCalibration:
    """The sheet-of-light model a series-start carries (`sheet_calibration`; core/sheet_of_light.h,
    docs/calibration.md): image point (u, v) = (roi_offset + column, roi_offset + row) -> world
    (X, Y, Z) in mm through lens distortion, the laser-plane homography and the motion axis."""
    enabled: bool = True
    unit: str = "mm"
    model: str = "sheet-of-light"       # or "linear" (a per-axis calibration as the simplest model)
    id: str = ""
    file: str = ""
    file_fnv1a: str = ""
    roi_offset: tuple = (0, 0)          # full-sensor pixel of column 0 / row 0
    y_source: str = "frame"             # "frame": Y from the frame index; "encoder": from the encoder count
    y_step_mm: float = 1.0
    y_offset_mm: float = 0.0
    centre: tuple = (0.0, 0.0)          # distortion centre (cu, cv), px
    scale: float = 1.0                  # px per normalised unit
    distortion: tuple = (0.0,) * DISTORTION_COUNT   # k1, k2, k3, p1, p2 (correction direction)
    homography: tuple = (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0)  # row-major, normalised -> (X, Z) mm
    skew_about_x_deg: float = 0.0
    skew_about_z_deg: float = 0.0

    @property
    def y_from_encoder(self):
        return self.y_source == "encoder"

    @classmethod
    def from_json(cls, j):
        """Checked as the C++ decoder checks it (wire::sheet_calibration_from_json): MalformedMessage
        ("field") for anything but a complete model of finite values."""
        def bad(what):
            return MalformedMessage(f"sheet_calibration: {what} (expected a complete sheet-of-light model)", "field")
        if not isinstance(j, dict):
            raise bad("not an object")
        for k in ("model", "y_step_mm", "centre", "scale", "distortion", "homography", "roi_offset"):
            if k not in j:
                raise bad(f"'{k}' is missing")
        c = cls()
        for k in ("model", "id", "file", "file_fnv1a", "unit", "y_source"):
            if k in j:
                setattr(c, k, _str(j[k], "sheet_calibration." + k))
        c.model = "linear" if c.model == "linear" else "sheet-of-light"
        roi = j["roi_offset"]
        if not isinstance(roi, list) or len(roi) != 2:
            raise bad("'roi_offset' is not [x, y]")
        c.roi_offset = tuple(_int(v, "sheet_calibration.roi_offset[]", 0, MAX_WIDTH * 4) for v in roi)

        def numbers(key, n):
            v = j[key]
            if not isinstance(v, list) or len(v) != n:
                raise bad(f"'{key}' is not {n} numbers")
            return tuple(_finite(e, f"sheet_calibration.{key}[]") for e in v)
        c.centre = numbers("centre", 2)
        c.distortion = numbers("distortion", DISTORTION_COUNT)
        c.homography = numbers("homography", 9)
        c.scale = _finite(j["scale"], "sheet_calibration.scale")
        if not c.scale > 0:
            raise bad(f"scale {c.scale} (expected > 0)")
        c.y_step_mm = _finite(j["y_step_mm"], "sheet_calibration.y_step_mm")
        for k in ("y_offset_mm", "skew_about_x_deg", "skew_about_z_deg"):
            if k in j:
                setattr(c, k, _finite(j[k], "sheet_calibration." + k))
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
    sheet_calibration: Optional[SheetCalibration] = None  # the sheet-of-light model, when one is applied
    point_unit: str = ""                 # "mm" with a sheet-of-light calibration
    points: bool = False                 # whether the row messages carry the calibrated points


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
    points: Optional[np.ndarray] = None     # [rows, slots, width, 3] float32 X, Y - motion_y, Z (mm; NaN = no point), 1.2
    motion_y: Optional[np.ndarray] = None   # [rows] float64, mm: a point's Y is motion_y + float64(points[..., 1])
    form: str = ""                          # "rectified": z on a uniform X grid in mm (header grid); "" = sensor rows
    heads: Optional[np.ndarray] = None      # [rows] uint64, merged rows (stripeline merge): bit i = head i in the row


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


@dataclass
class ToolResult:
    """One tool of a measured part (docs/measure.md "Tools"): values in the part's units; NaN = none."""
    name: str
    type: str
    decision: str                                  # "pass", "fail" or "none" (no limits)
    values: dict = field(default_factory=dict)     # value name -> float (NaN when the part could not give it)
    decisions: dict = field(default_factory=dict)  # value name -> "pass", "fail" or "none"


@dataclass
class Measurement(Message):
    """A measured part (format 1.3, docs/wire-format.md "measurement"): the live job's record of it."""
    part: int = 0
    job: str = ""
    decision: str = ""           # the part's: "pass", "fail" or "none"
    units: str = ""              # "mm", or "px" without a sheet-of-light calibration
    frames: tuple = (0, 0)       # first and last frame index
    head: str = ""               # the head's name in a daemon of several heads
    tools: list = field(default_factory=list)  # [ToolResult], in the job's order
    record: dict = field(default_factory=dict)  # the whole record (box, y, encoder, timestamps, ...)

    def tool(self, name):
        for t in self.tools:
            if t.name == name:
                return t
        raise KeyError(name)


_DECISIONS = ("pass", "fail", "none")


def _measurement(h, base, frames):
    if len(frames) != 2:
        raise MalformedMessage(f"a measurement message has {len(frames)} parts (expected 2: topic, header)", "parts")
    p = _need(h, "part")
    if not isinstance(p, dict):
        raise MalformedMessage("'part' is not an object")
    tools = []
    raw = _need(p, "tools")
    if not isinstance(raw, list):
        raise MalformedMessage("'part.tools' is not a list")
    for t in raw:
        if not isinstance(t, dict):
            raise MalformedMessage(f"'part.tools[]' holds {printable(repr(t), 40)} (expected an object)")
        values = {}
        for k, v in (t.get("values") or {}).items():
            values[k] = math.nan if v is None else _finite(v, f"part.tools[].values.{printable(k, 30)}")
        decisions = {k: _str(v, "part.tools[].decisions") for k, v in (t.get("decisions") or {}).items()}
        decision = _str(_need(t, "decision"), "part.tools[].decision")
        if decision not in _DECISIONS or any(d not in _DECISIONS for d in decisions.values()):
            raise MalformedMessage(f"a decision of tool '{printable(t.get('name'), 30)}' is not pass, fail or none", "range")
        tools.append(ToolResult(name=_str(_need(t, "name"), "part.tools[].name"), type=_str(t.get("type", ""), "part.tools[].type"),
                                decision=decision, values=values, decisions=decisions))
    decision = _str(_need(p, "decision"), "part.decision")
    if decision not in _DECISIONS:
        raise MalformedMessage(f"part.decision is '{printable(decision, 20)}' (expected pass, fail or none)", "range")
    fr = p.get("frames", [0, 0])
    return Measurement(**base, part=_int(_need(p, "part"), "part.part", *_U64), job=_str(_need(p, "job"), "part.job"),
                       decision=decision, units=_str(_need(p, "units"), "part.units"),
                       frames=tuple(_int_list({"frames": fr}, "frames", 2, *_U64)), head=_str(p.get("head", ""), "part.head"),
                       tools=tools, record=p)


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
    if topic == "measurement":
        return _measurement(h, base, frames)
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
    sheet = SheetCalibration.from_json(h["sheet_calibration"]) if "sheet_calibration" in h else None
    points = _bool(h.get("points", False), "points")
    return SeriesStart(**base,
                       sheet_calibration=sheet, point_unit=_str(h.get("point_unit", ""), "point_unit"), points=points,
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
    # 1.0 sends z, intensity, width; 1.1 adds quality; 1.2 the points and motion_y (docs/wire-format.md).
    if len(frames) not in (5, 6, 8):
        raise MalformedMessage(f"a {base['topic']} message has {len(frames)} parts (expected 5, 6 or 8)", "parts")
    if "point_unit" in h:
        _str(h["point_unit"], "point_unit")
    parts = _need(h, "parts")
    if not isinstance(parts, list) or len(parts) != len(frames) - 2:
        raise MalformedMessage(f"parts does not describe the message's {len(frames) - 2} arrays", "shape")
    shape = [rows, slots, width]
    expected = [(name, dtype, shape) for name, dtype in ROW_PARTS] + [
        ("points", "<f4", shape + [3]), ("motion_y", "<f8", [rows])]
    arrays = {}
    for (name, dtype, want_shape), desc, buf in zip(expected, parts, frames[2:]):
        if (not isinstance(desc, dict) or desc.get("name") != name or desc.get("dtype") != dtype
                or desc.get("shape") != want_shape):
            raise MalformedMessage(f"parts entry {printable(repr(desc), 120)} (expected name {name}, dtype {dtype}, "
                                   f"shape {want_shape})", "shape")
        buf = memoryview(buf).cast("B") if not isinstance(buf, (bytes, bytearray)) else buf
        want = int(np.prod(want_shape)) * np.dtype(dtype).itemsize
        if len(buf) != want:
            raise MalformedMessage(f"part '{name}' has {len(buf)} bytes (expected {want})", "size")
        arrays[name] = np.frombuffer(buf, dtype=dtype).reshape(want_shape)
    heads = None
    if "heads" in h:  # merged rows: one head mask per row
        hd = h["heads"]
        if not isinstance(hd, list) or len(hd) != rows:
            raise MalformedMessage(f"heads is not a list of rows = {rows} head masks", "shape")
        heads = np.array([_int(m, "heads[]", *_U64) for m in hd], dtype=np.uint64)
    if np.isinf(arrays["z"]).any():
        raise MalformedMessage("z holds an infinite value (expected finite, or NaN for no detection)", "values")
    if "points" in arrays:
        _check_points(arrays["z"], arrays["points"], arrays["motion_y"])
    return Rows(**base, series_row=series_row, index=index,
                frame=_int(h.get("frame", frame_ids[0] if rows else 0), "frame", *_U64),
                rows=rows, width=width, slots=slots,
                frame_ids=np.array(frame_ids, dtype=np.uint64),
                timestamps_ns=np.array(stamps, dtype=np.int64),
                encoder=np.array([0 if e is None else e for e in enc], dtype=np.int64),
                has_encoder=np.array([e is not None for e in enc], dtype=bool),
                missing_rows=missing, calibration=Calibration.from_json(h.get("calibration")),
                z=arrays["z"], intensity=arrays["intensity"], stripe_width=arrays["width"],
                quality=arrays.get("quality", np.zeros(shape, dtype="<u2")),
                points=arrays.get("points"), motion_y=arrays.get("motion_y"),
                form=_str(h.get("form", ""), "form"), heads=heads)


def _check_points(z, points, motion_y):
    """As the C++ decoder: a point is three finite values or three NaN, none where z has no
    detection, every motion_y finite."""
    if np.isinf(points).any():
        raise MalformedMessage("points holds an infinite value (expected finite, or NaN for no point)", "values")
    nans = np.isnan(points).sum(axis=-1)
    if ((nans != 0) & (nans != 3)).any():
        raise MalformedMessage("points holds a point that is partly NaN (expected three finite values, or three NaN)",
                               "values")
    if ((nans == 0) & np.isnan(z)).any():
        raise MalformedMessage("points holds a point where z has no detection (expected NaN)", "values")
    if not np.isfinite(motion_y).all():
        raise MalformedMessage("motion_y holds a value that is not finite (expected a position in mm)", "values")
