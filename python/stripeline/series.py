"""Assemble the profile rows of one series into arrays, and map them to X/Y/Z."""
from dataclasses import dataclass, field
from typing import List, Optional, Tuple

import numpy as np

from .wire import Calibration, Rows, SeriesEnd, SeriesStart


MAX_SERIES_ROWS = 1 << 26  # a series_row beyond this is taken as malformed, not allocated


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
    calibration: Calibration = field(default_factory=Calibration)
    gaps: List[Tuple[int, int]] = field(default_factory=list)  # (first missing seq, count)
    malformed: int = 0
    quality: Optional[np.ndarray] = None  # [rows, slots, width] uint16: contrast above the local background

    @property
    def rows(self):
        return self.z.shape[0]

    @property
    def lost(self):
        """Series rows never received (their message was dropped or lost)."""
        return np.flatnonzero(~self.received)

    @property
    def complete(self):
        return (self.end is not None and not self.gaps and bool(self.received.all())
                and self.rows == self.end.profile_rows)

    def point_quality(self):
        """Each detected point's quality, float32, in the order of points()."""
        z = np.transpose(self.z, (0, 2, 1))
        q = self.quality if self.quality is not None else np.zeros(self.z.shape, dtype=np.uint16)
        return np.transpose(q, (0, 2, 1))[~np.isnan(z)].astype(np.float32)

    def point_slots(self):
        """Each detected point's slot (0 = the column's primary peak), uint8, in the order of points()."""
        z = np.transpose(self.z, (0, 2, 1))
        slots = np.broadcast_to(np.arange(z.shape[2], dtype=np.uint8), z.shape)
        return slots[~np.isnan(z)]

    def point_widths(self):
        """Each detected point's stripe width in pixels, uint16, in the order of points()."""
        z = np.transpose(self.z, (0, 2, 1))
        return np.transpose(self.width, (0, 2, 1))[~np.isnan(z)].astype(np.uint16)

    def points(self, calibration: Optional[Calibration] = None):
        """Detected points (x, y, z, intensity), in the PLY's order: x, z, intensity float32,
        y float64 (as in the PLY: the scan axis, exact past 2^24 frames).

        Uses the series' calibration unless one is given: the extension point for a
        richer calibration block a later series-start may carry.
        """
        return mapping_for(calibration or self.calibration).points(self)


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

    def points(self, s: Series):
        # [rows, slots, width] -> [rows, width, slots]: the PLY walks column, then slot.
        z = np.transpose(s.z, (0, 2, 1))
        keep = ~np.isnan(z)
        r, col, _ = np.nonzero(keep)
        y_row = self.y(s.index, s.encoder, s.has_encoder).astype(np.float64)
        return (self.x(col).astype(np.float32), y_row[r], z[keep].astype(np.float32),
                np.transpose(s.intensity, (0, 2, 1))[keep].astype(np.float32))


def mapping_for(cal: Calibration):
    """The mapping for a series' calibration. A new calibration kind (a block a later
    series-start carries) registers its mapping here."""
    return LinearMapping(cal)


class SeriesAssembler:
    """Collects the messages of one series (by series id) into a Series."""

    def __init__(self):
        self.start = None
        self.end = None
        self.blocks: List[Rows] = []
        self.series_id = None
        self.last_seq = None
        self.gaps = []
        self.rejected = 0  # row blocks that do not fit the series (shape, absurd offset)

    def add(self, msg) -> bool:
        """Feed a decoded message; True once its series-end arrived. Messages of another
        series than the first one seen are ignored."""
        if self.series_id is None:
            self.series_id = msg.series
        elif msg.series != self.series_id:
            return False
        if self.last_seq is not None and msg.seq > self.last_seq + 1:
            self.gaps.append((self.last_seq + 1, msg.seq - self.last_seq - 1))
        if self.last_seq is None or msg.seq > self.last_seq:
            self.last_seq = msg.seq
        if isinstance(msg, SeriesStart):
            self.start = msg
        elif isinstance(msg, Rows) and msg.topic == "profile":
            fits = (msg.series_row + msg.rows <= MAX_SERIES_ROWS and
                    (self.start is None or (msg.width == self.start.width and msg.slots <= self.start.slots)))
            if fits:
                self.blocks.append(msg)
            else:
                self.rejected += 1
        elif isinstance(msg, SeriesEnd):
            self.end = msg
            return True
        return False

    def series(self, malformed=0) -> Series:
        blocks = self.blocks
        width = self.start.width if self.start else (blocks[0].width if blocks else 0)
        slots = self.start.slots if self.start else (blocks[0].slots if blocks else 1)
        n = max([b.series_row + b.rows for b in blocks] + [min(self.end.profile_rows, MAX_SERIES_ROWS) if self.end else 0])
        z = np.full((n, slots, width), np.nan, dtype=np.float32)
        inten = np.zeros((n, slots, width), dtype=np.uint16)
        wid = np.zeros((n, slots, width), dtype=np.uint16)
        qual = np.zeros((n, slots, width), dtype=np.uint16)
        index = np.zeros(n, dtype=np.uint64)
        fids = np.zeros(n, dtype=np.uint64)
        ts = np.zeros(n, dtype=np.int64)
        enc = np.zeros(n, dtype=np.int64)
        has_enc = np.zeros(n, dtype=bool)
        received = np.zeros(n, dtype=bool)
        missing = np.zeros(n, dtype=bool)
        cal = self.start.calibration if self.start else Calibration()
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
            index[sl] = np.uint64(b.index) + np.arange(b.rows, dtype=np.uint64)
            fids[sl], ts[sl], enc[sl], has_enc[sl] = b.frame_ids, b.timestamps_ns, b.encoder, b.has_encoder
            received[sl] = True
            missing[sl] = b.missing_rows
            if not self.start:
                cal = b.calibration
        return Series(start=self.start, end=self.end, z=z, intensity=inten, width=wid, quality=qual, index=index,
                      frame_ids=fids, timestamps_ns=ts, encoder=enc, has_encoder=has_enc,
                      received=received, missing=missing, calibration=cal, gaps=list(self.gaps),
                      malformed=malformed + rejected)
