"""Assemble the profile rows of one series into arrays, and map them to X/Y/Z."""
import math
from dataclasses import dataclass, field
from typing import List, Optional, Tuple, Union

import numpy as np

from .wire import Calibration, MalformedMessage, Measurement, Rows, SeriesEnd, SeriesStart, SheetCalibration


MAX_SERIES_ROWS = 1 << 26  # a series_row beyond this is taken as malformed, not allocated
MAX_SERIES_ELEMENTS = 1 << 28  # rows x slots x width of an assembled series: at most 1 GiB of z
MAX_SKIPPED_ELEMENTS = 1 << 26  # rows skipped (never received) may add at most this, or as much as was received


@dataclass
class Series:
    """One series: arrays indexed by series row; shapes [rows, slots, width] for z/intensity/width.

    Rows never received (lost messages) and rows whose frame never arrived
    (missing_rows) are NaN in z and listed in `missing`/`lost`.
    """
    start: Optional[SeriesStart]
    end: Optional[SeriesEnd]
    z: np.ndarray
    intensity: np.ndarray
    width: np.ndarray
    index: np.ndarray           # uint64 global acquisition index per row
    frame_ids: np.ndarray       # uint64
    timestamps_ns: np.ndarray   # int64
    encoder: np.ndarray         # int64 (valid where has_encoder)
    has_encoder: np.ndarray     # bool
    received: np.ndarray        # bool: row arrived in some message
    missing: np.ndarray         # bool: the frame never arrived at the sender (all NaN)
    # The series' calibration: the sheet-of-light model when series-start carries one
    # (SheetCalibration, unit mm), else the linear one (Calibration; enabled=False: pixels).
    calibration: Union[Calibration, SheetCalibration] = field(default_factory=Calibration)
    gaps: List[Tuple[int, int]] = field(default_factory=list)  # (first missing seq, count)
    malformed: int = 0
    malformed_by_reason: dict = field(default_factory=dict)
    measurements: List[Measurement] = field(default_factory=list)  # parts measured live in the series (format 1.3)
    quality: Optional[np.ndarray] = None  # [rows, slots, width] uint16: contrast above the local background
    # The publisher's calibrated points (format 1.2, sheet-of-light calibration), when every
    # received row carried them: [rows, slots, width, 3] float32 X, Y - motion_y, Z (NaN = none)
    # and motion_y [rows] float64; None otherwise (then points() maps with the model).
    xyz: Optional[np.ndarray] = None
    motion_y: Optional[np.ndarray] = None

    @property
    def rows(self):
        return self.z.shape[0]

    @property
    def lost(self):
        """Series rows never received (their message was dropped or lost)."""
        return np.flatnonzero(~self.received)

    @property
    def complete(self):
        # Without its series-start (joined after it went out) the series lacks its calibration
        # and unit, so it is not complete even when every row arrived.
        return (self.start is not None and self.end is not None and not self.gaps
                and bool(self.received.all()) and self.rows == self.end.profile_rows)

    def _mask(self, calibration=None):
        """[rows, width, slots] bool: the entries that are points, in the PLY's order (row,
        column, slot). With a sheet-of-light model a detection beyond the laser plane's horizon
        is no point."""
        return mapping_for(calibration or self.calibration, self).mask(self)

    def _per_point(self, a, calibration=None):
        return np.transpose(a, (0, 2, 1))[self._mask(calibration)]

    def point_quality(self, calibration=None):
        """Each point's quality, float32, in the order of points()."""
        q = self.quality if self.quality is not None else np.zeros(self.z.shape, dtype=np.uint16)
        return self._per_point(q, calibration).astype(np.float32)

    def point_slots(self, calibration=None):
        """Each point's slot (0 = the column's primary peak), uint8, in the order of points()."""
        slots = np.broadcast_to(np.arange(self.z.shape[1], dtype=np.uint8)[None, :, None], self.z.shape)
        return self._per_point(slots, calibration)

    def point_widths(self, calibration=None):
        """Each point's stripe width in pixels, uint16, in the order of points()."""
        return self._per_point(self.width, calibration).astype(np.uint16)

    def points(self, calibration=None):
        """Points (x, y, z, intensity), in the PLY's order and types: x, z, intensity float32,
        y float64 (the scan axis, exact past 2^24 frames).

        With a sheet-of-light calibration: X/Y/Z in mm, the very values of the publisher's PLY,
        from the points the messages carry (format 1.2) or, from a publisher that left them
        out (or an older one), mapped here with series-start's model (SheetMapping). A series
        whose header says mm but holds no usable model raises ValueError: pixels are never
        returned as millimetres. `calibration` replaces the series' own.
        """
        return mapping_for(calibration or self.calibration, self).points(self)


class LinearMapping:
    """core/profile_mapping.h for the linear calibration: x = cal.x(column),
    y = cal.y(index) (or of the encoder count with y_from_encoder), z as sent."""

    def __init__(self, cal: Calibration):
        self.cal = cal

    def x(self, column):
        c = self.cal
        column = np.asarray(column, dtype=np.float64)
        return c.x_scale * column + c.x_offset if c.enabled else column

    def y(self, index, encoder=None, has_encoder=None):
        c = self.cal
        v = np.asarray(index, dtype=np.float64)
        if c.enabled and c.y_from_encoder and encoder is not None:
            v = np.where(has_encoder, np.asarray(encoder, dtype=np.float64), v)
        return c.y_scale * v + c.y_offset if c.enabled else v

    def mask(self, s: Series):
        return ~np.isnan(np.transpose(s.z, (0, 2, 1)))

    def points(self, s: Series):
        # [rows, slots, width] -> [rows, width, slots]: the PLY walks column, then slot.
        z = np.transpose(s.z, (0, 2, 1))
        keep = ~np.isnan(z)
        r, col, _ = np.nonzero(keep)
        y_row = self.y(s.index, s.encoder, s.has_encoder).astype(np.float64)
        return (self.x(col).astype(np.float32), y_row[r], z[keep].astype(np.float32),
                np.transpose(s.intensity, (0, 2, 1))[keep].astype(np.float32))


class SheetMapping:
    """The sheet-of-light model (core/sheet_of_light.h, core/calibrated_point.h) in numpy, in
    float64 with the C++ code's operations in its order, so that a point comes out as the
    processor's floats: u = roi_x + column, v = roi_y + row; normalise by the centre and scale;
    Brown-Conrady correction; the homography to the laser plane (no point where W' <= 0); the
    plane's axes (skew) to the world; X, dY, Z to float32; Y = motion_y + dY in float64 with
    motion_y = (frame index or encoder count) * y_step_mm + y_offset_mm.

    A series whose rows all carry the publisher's points uses those instead (exactly the PLY's),
    unless `carried` is False (a model given in place of the series' own maps the rows)."""

    def __init__(self, cal: SheetCalibration, carried: bool = True):
        self.cal = cal
        self.carried = carried

    def motion_y(self, index, encoder=None, has_encoder=None):
        """Y of each row's frame (double): core/sheet_of_light.h motion_y."""
        v = np.asarray(index, dtype=np.uint64).astype(np.float64)
        if self.cal.y_from_encoder and encoder is not None:
            v = np.where(has_encoder, np.asarray(encoder, dtype=np.int64).astype(np.float64), v)
        return v * self.cal.y_step_mm + self.cal.y_offset_mm

    def plane_axes(self):
        """The laser plane's X and Z axes in the world (SheetOfLightModel::map)."""
        deg = 3.14159265358979323846 / 180.0
        ca, sa = math.cos(self.cal.skew_about_x_deg * deg), math.sin(self.cal.skew_about_x_deg * deg)
        cg, sg = math.cos(self.cal.skew_about_z_deg * deg), math.sin(self.cal.skew_about_z_deg * deg)
        return (cg, sg, 0.0), (sa * sg, -sa * cg, ca)

    def map(self, column, row):
        """Image points (column, row within the frame; arrays) -> (X, dY, Z) float32 and a bool
        mask of those in front of the horizon (elsewhere NaN)."""
        c = self.cal
        u = (np.asarray(column, dtype=np.int64) + c.roi_offset[0]).astype(np.float64)
        v = np.float64(c.roi_offset[1]) + np.asarray(row, dtype=np.float64)
        inv_scale = 1.0 / c.scale
        x = (u - c.centre[0]) * inv_scale
        y = (v - c.centre[1]) * inv_scale
        k1, k2, k3, p1, p2 = c.distortion
        r2 = x * x + y * y
        q = r2 * (k1 + r2 * (k2 + r2 * k3))
        xy = x * y
        xu = x + x * q + 2.0 * p1 * xy + p2 * (r2 + 2.0 * x * x)
        yu = y + y * q + p1 * (r2 + 2.0 * y * y) + 2.0 * p2 * xy
        h = c.homography
        w = h[6] * xu + h[7] * yu + h[8]
        ok = w > 0.0
        w = np.where(ok, w, 1.0)
        X = (h[0] * xu + h[1] * yu + h[2]) / w
        Z = (h[3] * xu + h[4] * yu + h[5]) / w
        ax, az = self.plane_axes()
        out = np.stack([X * ax[0] + Z * az[0], X * ax[1] + Z * az[1] + 0.0, X * ax[2] + Z * az[2]], axis=-1).astype(np.float32)
        out[~ok] = np.nan
        return out, ok

    def xyz(self, s: Series):
        """[rows, slots, width, 3] float32 X, dY, Z and [rows] motion_y: carried, or mapped."""
        if self.carried and s.xyz is not None and s.motion_y is not None:
            return s.xyz, s.motion_y
        if self.cal.model == "unknown":
            raise ValueError("the series' rows carry no points and its series-start (with the sheet-of-light model) "
                             "was not received: cannot map to mm; pass the calibration")
        cached = getattr(s, "_mapped", None)
        if cached is not None and cached[0] == self.cal:
            return cached[1], cached[2]
        cols = np.broadcast_to(np.arange(s.z.shape[2]), s.z.shape)
        detected = ~np.isnan(s.z)
        out = np.full(s.z.shape + (3,), np.nan, dtype=np.float32)
        mapped, ok = self.map(cols[detected], s.z[detected])
        out[detected] = mapped
        motion = self.motion_y(s.index, s.encoder, s.has_encoder)
        s._mapped = (self.cal, out, motion)
        return out, motion

    def mask(self, s: Series):
        pts, _ = self.xyz(s)
        return ~np.isnan(np.transpose(pts[..., 0], (0, 2, 1)))

    def points(self, s: Series):
        pts, motion = self.xyz(s)
        p = np.transpose(pts, (0, 2, 1, 3))  # [rows, width, slots, 3]: the PLY's order
        keep = ~np.isnan(p[..., 0])
        r, _, _ = np.nonzero(keep)
        kept = p[keep]
        return (kept[:, 0], motion[r] + kept[:, 1].astype(np.float64), kept[:, 2],
                np.transpose(s.intensity, (0, 2, 1))[keep].astype(np.float32))


def mapping_for(cal, series: Optional[Series] = None):
    """The mapping for a series' calibration: SheetMapping for a sheet-of-light model,
    LinearMapping otherwise. A series whose header says its points are mm (point_unit) but
    that holds no model and whose rows carry no points is refused (ValueError)."""
    if isinstance(cal, SheetCalibration):
        return SheetMapping(cal, carried=series is None or cal is series.calibration)
    start = series.start if series is not None else None
    if start is not None and start.point_unit == "mm" and not cal.enabled:
        raise ValueError("series-start says its points are in mm (a sheet-of-light calibration) but carries no usable "
                         "sheet_calibration model and its rows carry no points: cannot map to mm; pass the calibration "
                         "(points(calibration=SheetCalibration.from_json(...)))")
    return LinearMapping(cal)


class SeriesAssembler:
    """Collects the messages of one series (by series id) into a Series."""

    def __init__(self):
        self.start = None
        self.end = None
        self.blocks: List[Rows] = []
        self.measurements: List[Measurement] = []
        self.series_id = None
        self.last_seq = None
        self.gaps = []
        self.rejected = 0  # messages refused here (MalformedMessage raised by add)
        self.next_row = None  # series row expected next
        self.last_row_seq = None
        self.per_message = 0  # rows per profile message: series-start's, or the largest block seen
        self.received_elements = 0
        self.skipped_elements = 0

    def _refuse(self, text, reason):
        self.rejected += 1
        raise MalformedMessage(text, reason)

    def _max_skip(self, seq, width, slots, rows):
        """Rows a block may skip: only messages that are missing can have held them, and
        skipped rows cost a sender nothing, so they stay within what was received."""
        missed = seq - self.last_row_seq - 1 if self.last_row_seq is not None and seq > self.last_row_seq else 0
        per_row = max(1, width * slots)
        budget = max(MAX_SKIPPED_ELEMENTS, self.received_elements + per_row * rows)
        return min(self.per_message * min(missed, 1 << 20), max(0, budget - self.skipped_elements) // per_row)

    def add(self, msg) -> bool:
        """Feed a decoded message; True once its series-end arrived. Messages of another
        series than the first one seen are ignored. A message that does not fit the
        series (a seq that does not grow, a second series-start, rows of another shape,
        rows already received, or starting further on than the missed messages could
        hold) raises MalformedMessage and changes nothing; the caller counts and skips it."""
        if self.series_id is None:
            self.series_id = msg.series
        elif msg.series != self.series_id:
            return False
        if self.last_seq is not None and msg.seq <= self.last_seq:
            self._refuse(f"seq {msg.seq} after {self.last_seq} (expected seq to grow)", "seq")
        # It arrived: its seq counts for the gaps even when its content is refused below.
        if self.last_seq is not None and msg.seq > self.last_seq + 1:
            self.gaps.append((self.last_seq + 1, msg.seq - self.last_seq - 1))
        self.last_seq = msg.seq
        if isinstance(msg, SeriesStart):
            if self.start is not None or self.blocks:
                self._refuse(f"a second series-start (seq {msg.seq})", "repeated")
        elif isinstance(msg, Rows) and msg.topic == "profile" and msg.rows > 0:
            self._check_rows(msg)
        if isinstance(msg, SeriesStart):
            self.start = msg
            self.per_message = max(self.per_message, _rows_per_message(msg))
        elif isinstance(msg, Rows) and msg.topic == "profile" and msg.rows > 0:
            self.blocks.append(msg)
            per_row = msg.width * msg.slots
            if self.next_row is not None and msg.series_row > self.next_row:
                self.skipped_elements += per_row * (msg.series_row - self.next_row)
            self.received_elements += per_row * msg.rows
            self.next_row = msg.series_row + msg.rows
            self.last_row_seq = msg.seq
            if not (self.start and _rows_per_message(self.start)):
                self.per_message = max(self.per_message, msg.rows)
        elif isinstance(msg, Measurement):
            self.measurements.append(msg)
        elif isinstance(msg, SeriesEnd):
            self.end = msg
            return True
        return False

    def _check_rows(self, msg):
        width = self.start.width if self.start else (self.blocks[0].width if self.blocks else msg.width)
        slots = self.start.slots if self.start else (self.blocks[0].slots if self.blocks else msg.slots)
        if msg.width != width or msg.slots > slots:
            self._refuse(f"a block of {msg.width} columns x {msg.slots} slots in a series of {width} x {slots}", "geometry")
        rpm = _rows_per_message(self.start) if self.start else 0
        if rpm and msg.rows > rpm:
            self._refuse(f"a block of {msg.rows} rows (series-start said at most {rpm} per message)", "shape")
        end = msg.series_row + msg.rows
        if end > MAX_SERIES_ROWS or end * width * slots > MAX_SERIES_ELEMENTS:
            self._refuse(f"series_row {msg.series_row} + {msg.rows} rows is beyond what a series may hold here", "series-row")
        if self.next_row is None:
            return  # the first block: a late joiner starts where it joined
        if msg.series_row < self.next_row:
            self._refuse(f"series_row {msg.series_row}..{end - 1} repeats rows already received "
                         f"(expected {self.next_row} on)", "overlap")
        skip = msg.series_row - self.next_row
        limit = self._max_skip(msg.seq, width, slots, msg.rows)
        if skip > limit:
            self._refuse(f"series_row {msg.series_row} skips {skip} rows (expected at most {limit} after the messages missed)",
                         "series-row")

    def series(self, malformed=0, malformed_by_reason=None) -> Series:
        blocks = self.blocks
        width = self.start.width if self.start else (blocks[0].width if blocks else 0)
        slots = self.start.slots if self.start else (blocks[0].slots if blocks else 1)
        n = max([b.series_row + b.rows for b in blocks] + [0])
        if self.end and self.end.profile_rows > n:
            # Rows published after the last block received: only as many as the
            # messages missed before series-end could have held.
            last = self.last_row_seq if self.last_row_seq is not None else (self.start.seq if self.start else None)
            missed = self.end.seq - last - 1 if last is not None and self.end.seq > last else 0
            per = self.per_message or 1
            n = min(self.end.profile_rows, n + per * min(missed, 1 << 20), MAX_SERIES_ROWS,
                    MAX_SERIES_ELEMENTS // max(1, width * slots))
            n = max(n, max([b.series_row + b.rows for b in blocks] + [0]))
        z = np.full((n, slots, width), np.nan, dtype=np.float32)
        inten = np.zeros((n, slots, width), dtype=np.uint16)
        wid = np.zeros((n, slots, width), dtype=np.uint16)
        qual = np.zeros((n, slots, width), dtype=np.uint16)
        carried = bool(blocks) and all(b.points is not None for b in blocks)
        xyz = np.full((n, slots, width, 3), np.nan, dtype=np.float32) if carried else None
        motion = np.full(n, np.nan, dtype=np.float64) if carried else None
        index = np.zeros(n, dtype=np.uint64)
        fids = np.zeros(n, dtype=np.uint64)
        ts = np.zeros(n, dtype=np.int64)
        enc = np.zeros(n, dtype=np.int64)
        has_enc = np.zeros(n, dtype=bool)
        received = np.zeros(n, dtype=bool)
        missing = np.zeros(n, dtype=bool)
        cal = self.start.calibration if self.start else Calibration()
        if self.start and self.start.sheet_calibration is not None:
            cal = self.start.sheet_calibration
        rejected = self.rejected
        for b in blocks:
            if b.width != width or b.slots > slots:
                rejected += 1  # no series-start to check against when it arrived
                continue
            sl = slice(b.series_row, b.series_row + b.rows)
            z[sl, :b.slots] = b.z
            inten[sl, :b.slots] = b.intensity
            wid[sl, :b.slots] = b.stripe_width
            if b.quality is not None:
                qual[sl, :b.slots] = b.quality
            if carried:
                xyz[sl, :b.slots] = b.points
                motion[sl] = b.motion_y
            index[sl] = np.uint64(b.index) + np.arange(b.rows, dtype=np.uint64)
            fids[sl], ts[sl], enc[sl], has_enc[sl] = b.frame_ids, b.timestamps_ns, b.encoder, b.has_encoder
            received[sl] = True
            missing[sl] = b.missing_rows
            if not self.start:
                cal = b.calibration
        if carried and not isinstance(cal, SheetCalibration):  # the points are mm, the model was not received (joined late)
            cal = SheetCalibration(model="unknown")
        return Series(start=self.start, end=self.end, z=z, intensity=inten, width=wid, quality=qual, index=index,
                      frame_ids=fids, timestamps_ns=ts, encoder=enc, has_encoder=has_enc,
                      received=received, missing=missing, calibration=cal, gaps=list(self.gaps), xyz=xyz, motion_y=motion,
                      malformed=malformed + (rejected if malformed_by_reason is None else 0),
                      malformed_by_reason=dict(malformed_by_reason or {}), measurements=list(self.measurements))


def _rows_per_message(start):
    v = start.header.get("rows_per_message", 0) if start is not None else 0
    return v if isinstance(v, int) and not isinstance(v, bool) else 0
