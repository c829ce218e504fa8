"""Assemble the profile rows of one series into arrays, and map them to X/Y/Z."""
from dataclasses import dataclass, field
from typing import List, Optional, Tuple

import numpy as np

from .wire import Calibration, MalformedMessage, Rows, SeriesEnd, SeriesStart


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
    calibration: Calibration = field(default_factory=Calibration)
    gaps: List[Tuple[int, int]] = field(default_factory=list)  # (first missing seq, count)
    malformed: int = 0
    malformed_by_reason: dict = field(default_factory=dict)
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
                      malformed=malformed + (rejected if malformed_by_reason is None else 0),
                      malformed_by_reason=dict(malformed_by_reason or {}))


def _rows_per_message(start):
    v = start.header.get("rows_per_message", 0) if start is not None else 0
    return v if isinstance(v, int) and not isinstance(v, bool) else 0
