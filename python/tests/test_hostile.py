"""A hostile publisher against the Python client (issue 14), run by ctest as Python.HostileStream.

    python3 python/tests/test_hostile.py

Each crafted message is sent over ipc in the middle of a good series: the client
must not raise, must count the message once under its reason, and must still
assemble the good rows around it exactly as a clean run does. Then all the
crafted messages in one series, through `tools/subscribe.py` and
`python -m stripeline save` as child processes: no traceback, every one counted.
Exits 77 (ctest: skipped) when pyzmq or numpy is missing.
"""
import json
import os
import subprocess
import sys
import tempfile
import threading
import unittest

try:
    import numpy as np
    import zmq
except ImportError as e:
    print(f"SKIP: {e} (Debian: apt-get install python3-zmq python3-numpy)")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
PKG_ROOT = os.path.dirname(HERE)
REPO = os.path.dirname(PKG_ROOT)
sys.path.insert(0, PKG_ROOT)
import stripeline  # noqa: E402

WIDTH = 6
SERIES = "6f1c2a8e-1b2c-4d3e-8f40-0123456789ab"


def rows_frames(seq, series_row, rows=2, width=WIDTH, slots=1, edit=None, topic=b"profile"):
    h = {"htype": f"stripeline-{topic.decode()}-1.1", "series": SERIES, "seq": seq, "time_ns": 5,
         "series_row": series_row, "index": 50 + series_row, "frame": 700 + series_row, "rows": rows, "width": width,
         "slots": slots, "frame_ids": [700 + series_row + r for r in range(rows)], "timestamps_ns": [1000] * rows,
         "encoder": [None] * rows, "missing_rows": [], "unit": "px", "height_bits": 6,
         "calibration": {"enabled": False, "unit": "px", "x_scale": 1.0, "x_offset": 0.0, "y_scale": 1.0, "y_offset": 0.0,
                         "z_scale": 1.0, "z_offset": 0.0, "y_from_encoder": False},
         "parts": [{"name": n, "dtype": d, "shape": [rows, slots, width]}
                   for n, d in (("z", "<f4"), ("intensity", "<u2"), ("width", "<u2"), ("quality", "<u2"))]}
    if edit:
        edit(h)
    n = rows * slots * width
    z = (3.5 + np.repeat(np.arange(series_row, series_row + rows), slots * width)
         + 0.25 * np.tile(np.arange(width), rows * slots)).astype("<f4")
    z[np.tile(np.arange(width), rows * slots) == 2] = np.nan
    ones = np.full(n, 100, "<u2").tobytes()
    return [topic, json.dumps(h).encode(), z.tobytes(), ones, ones, ones]


def with_points(frames, edit=None):
    """The message with carried points (format 1.2): X = column, dY = 0, Z = z where z has a
    detection, NaN elsewhere; motion_y 0.1 mm per row."""
    h = json.loads(frames[1])
    rows, slots, width = h["rows"], h["slots"], h["width"]
    h["htype"] = h["htype"].replace("-1.1", "-1.2")
    h["point_unit"] = "mm"
    h["parts"] += [{"name": "points", "dtype": "<f4", "shape": [rows, slots, width, 3]},
                   {"name": "motion_y", "dtype": "<f8", "shape": [rows]}]
    z = np.frombuffer(frames[2], "<f4")
    cols = np.tile(np.arange(width), rows * slots).astype("<f4")
    pts = np.stack([np.where(np.isnan(z), np.nan, cols), np.where(np.isnan(z), np.nan, 0.0), z], axis=1).astype("<f4")
    motion = 0.1 * (h["series_row"] + np.arange(rows, dtype="<f8"))
    if edit:
        edit(h, pts, motion)
    return [frames[0], json.dumps(h).encode()] + frames[2:6] + [pts.tobytes(), motion.tobytes()]


def start_header(**over):
    h = {"htype": "stripeline-series-start-1.1", "series": SERIES, "seq": 0, "time_ns": 1, "source": "hostile",
         "backend": "cpu", "method": "cog", "width": WIDTH, "frame_height": 32, "pixel_format": "Mono8", "slots": 1,
         "rows_per_message": 2, "heightmap_rows": 0, "unit": "px", "height_bits": 6, "format": "1.1"}
    h.update(over)
    return h


def end_header(seq, **over):
    h = {"htype": "stripeline-series-end-1.1", "series": SERIES, "seq": seq, "time_ns": 9, "profile_rows": 4,
         "profile_messages": 2, "rows_in": 4, "rows_dropped": {"hwm": 0, "no_subscriber": 0, "error": 0},
         "messages": seq + 1, "reason": "complete"}
    h.update(over)
    return h


def control(topic, h):
    return [topic.encode(), json.dumps(h).encode()]


def edited(edit):
    return rows_frames(2, 2, edit=edit)


def set_(key, value):
    def f(h):
        h[key] = value
    return f


def cases():
    """(name, frames, reason, replaces_start)"""
    c = []
    add = lambda name, frames, reason, start=False: c.append((name, frames, reason, start))  # noqa: E731
    add("block overlapping rows already received", rows_frames(2, 0), "overlap")
    add("long block overlapping by one row", rows_frames(2, 1), "overlap")
    add("block far beyond the rows so far", rows_frames(2, 1000), "series-row")
    add("series_row 2^40", rows_frames(2, 1 << 40), "series-row")
    add("series_row 2^60", rows_frames(2, 1 << 60), "range")
    add("wider block", rows_frames(2, 2, width=WIDTH + 1), "geometry")
    add("narrower block", rows_frames(2, 2, width=WIDTH - 1), "geometry")
    add("more slots", rows_frames(2, 2, slots=2), "geometry")
    add("more rows than rows_per_message", rows_frames(2, 2, rows=3), "shape")
    add("width 0", edited(set_("width", 0)), "range")
    add("rows 2^31", edited(set_("rows", 1 << 31)), "range")
    add("rows -1", edited(set_("rows", -1)), "range")
    add("height_bits 100", edited(set_("height_bits", 100)), "range")
    add("height_bits -92", edited(set_("height_bits", -92)), "range")
    add("height_bits a string", edited(set_("height_bits", "6")), "field")
    add("rows a float", edited(set_("rows", 2.0)), "field")
    add("frame_ids one short", edited(set_("frame_ids", [1])), "shape")
    add("frame_ids strings", edited(set_("frame_ids", ["a", "b"])), "field")
    add("timestamps_ns above int64", edited(set_("timestamps_ns", [2 ** 64 - 1, 1])), "range")
    add("encoder a string", edited(set_("encoder", ["x", None])), "field")
    add("encoder not a list", edited(set_("encoder", 5)), "field")
    add("missing_rows out of range", edited(set_("missing_rows", [99])), "range")
    add("missing_rows an object", edited(set_("missing_rows", {})), "field")
    add("calibration x_scale a string", edited(lambda h: h["calibration"].update(x_scale="a")), "field")
    add("calibration enabled a number", edited(lambda h: h["calibration"].update(enabled=1)), "field")
    add("parts with a wrong dtype", edited(lambda h: h["parts"][0].update(dtype="<f8")), "shape")
    add("parts with a wrong shape", edited(lambda h: h["parts"][1].update(shape=[2, 1, 99])), "shape")
    add("series_row negative", edited(set_("series_row", -1)), "range")
    add("unit furlongs", edited(set_("unit", "furlongs")), "field")
    f = rows_frames(2, 2)
    add("z one byte short", f[:2] + [f[2][:-1]] + f[3:], "size")
    add("quality too long", f[:5] + [f[5] + b"xx"], "size")
    add("4 parts", f[:4], "parts")
    add("7 parts", f + [b"extra"], "parts")
    z = np.frombuffer(f[2], "<f4").copy()
    z[1] = np.inf
    add("z infinite", f[:2] + [z.tobytes()] + f[3:], "values")
    # The carried points (format 1.2).
    p = with_points(f)
    add("points one byte short", p[:6] + [p[6][:-1], p[7]], "size")
    add("motion_y one row too long", p[:7] + [p[7] + bytes(8)], "size")

    def value(k, v, part="points"):
        def e(h, pts, motion):
            (pts if part == "points" else motion).reshape(-1)[k] = v
        return e
    add("a point partly NaN", with_points(f, value(1, np.nan)), "values")
    add("a point with an infinite Z", with_points(f, value(2, np.inf)), "values")
    add("a point where z has no detection", with_points(f, lambda h, pts, m: pts.__setitem__(2, (1, 1, 1))), "values")
    add("motion_y NaN", with_points(f, value(1, np.nan, "motion_y")), "values")
    add("points described without their 3 coordinates",
        with_points(f, lambda h, pts, m: h["parts"][4].update(shape=[2, 1, WIDTH])), "shape")
    add("motion_y described as float32", with_points(f, lambda h, pts, m: h["parts"][5].update(dtype="<f4")), "shape")
    add("8 parts, 5 described", with_points(f, lambda h, pts, m: h["parts"].pop()), "shape")
    add("point_unit a number", with_points(f, lambda h, pts, m: h.update(point_unit=1)), "field")
    add("seq -1", edited(set_("seq", -1)), "range")
    add("seq 1.5", edited(set_("seq", 1.5)), "field")
    add("seq missing", edited(lambda h: h.pop("seq")), "field")
    add("seq backwards (1 again)", edited(set_("seq", 1)), "seq")
    add("series with a newline", edited(set_("series", "abc\ndef")), "field")
    add("series 200 characters", edited(set_("series", "a" * 200)), "field")
    add("series a number", edited(set_("series", 7)), "field")
    add("htype major 2", edited(set_("htype", "stripeline-profile-2.0")), "version")
    add("htype major -2", edited(set_("htype", "stripeline-profile--2.0")), "version")
    add("htype of another topic", edited(set_("htype", "stripeline-heightmap-1.1")), "htype")
    add("htype a number", edited(set_("htype", 1)), "htype")
    add("time_ns a string", edited(set_("time_ns", "now")), "field")
    add("header not JSON", [b"profile", b'{"htype": "stripeline-profile-1.1", "seq": 2,'] + f[2:], "header")
    add("header an array", [b"profile", b"[1, 2]"] + f[2:], "header")
    add("header nested 20000 deep", [b"profile", b"[" * 20000 + b"]" * 20000] + f[2:], "header")
    add("header with NaN", [b"profile", b'{"htype": NaN}'] + f[2:], "header")
    add("header binary", [b"profile", b"\xff\xfe\x00\x01"] + f[2:], "header")
    add("unknown topic", [b"profiles", f[1]], "topic")
    add("topic with control bytes", [b"\x1b[2Jprofile", b"{}"], "topic")
    add("topic not ASCII", [b"\xffprofile", b"{}"], "topic")
    add("one part", [b"profile"], "parts")
    add("series-end profile_rows a string", control("series-end", end_header(2, profile_rows="4")), "field")
    add("series-end rows_dropped an array", control("series-end", end_header(2, rows_dropped=[1, 2])), "field")
    add("series-end reason a number", control("series-end", end_header(2, reason=7)), "field")
    add("series-end rows_dropped.hwm -1", control("series-end", end_header(2, rows_dropped={"hwm": -1})), "range")
    add("stats with a string count", control("stats", {"htype": "stripeline-stats-1.1", "series": SERIES, "seq": 2,
                                                        "series_rows_in": "x"}), "field")
    add("a second series-start", control("series-start", start_header(seq=2)), "repeated")
    add("series-start height_bits 9", control("series-start", start_header(height_bits=9)), "range", True)
    add("series-start frame_height 5000", control("series-start", start_header(frame_height=5000)), "range", True)
    add("series-start frame_height beyond the code", control("series-start", start_header(frame_height=2000)), "range", True)
    add("series-start width a string", control("series-start", start_header(width="6")), "field", True)
    add("series-start calibration a string", control("series-start", start_header(calibration="yes")), "field", True)
    add("series-start sheet_calibration a list", control("series-start", start_header(sheet_calibration=[1])), "field", True)
    add("series-start rows_per_message negative", control("series-start", start_header(rows_per_message=-2)), "range", True)
    add("series-start points a string", control("series-start", start_header(points="yes")), "field", True)
    add("series-start sheet_calibration incomplete", control("series-start", start_header(sheet_calibration={"model": 1})),
        "field", True)
    add("series-start sheet_calibration scale 0", control("series-start", start_header(sheet_calibration={
        "model": "sheet-of-light", "roi_offset": [0, 0], "y_step_mm": 0.1, "centre": [1, 2], "scale": 0,
        "distortion": [0] * 5, "homography": [1, 0, 0, 0, 1, 0, 0, 0, 1]})), "field", True)
    return c


def series_with(bad=None, replaces_start=False):
    m = [bad if bad is not None and replaces_start else control("series-start", start_header())]
    m.append(rows_frames(1, 0))
    if bad is not None and not replaces_start:
        m.append(bad)
    m.append(rows_frames(3, 2))
    m.append(control("series-end", end_header(4)))
    return m


class Publisher:
    """An XPUB bound to an ipc path; send() waits for a subscription first (no sleeping)."""

    def __init__(self, ctx, path):
        self.sock = ctx.socket(zmq.XPUB)
        self.sock.setsockopt(zmq.LINGER, 5000)
        self.endpoint = "ipc://" + path
        self.sock.bind(self.endpoint)

    def send(self, messages, timeout_ms=30000):
        if not self.sock.poll(timeout_ms):
            raise AssertionError("no subscriber within 30 s")
        self.sock.recv()
        for m in messages:
            self.sock.send_multipart(m)

    def close(self):
        self.sock.close()


class HostileStream(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="stripeline-hostile-")
        cls.ctx = zmq.Context()

    @classmethod
    def tearDownClass(cls):
        cls.ctx.term()
        cls.tmp.cleanup()

    def receive(self, messages):
        path = os.path.join(self.tmp.name, "s.sock")
        pub = Publisher(self.ctx, path)
        try:
            with stripeline.Subscriber(pub.endpoint, context=self.ctx) as sub:
                pub.send(messages)
                return sub.receive_series(timeout=10)
        finally:
            pub.close()

    def test_every_crafted_message_is_counted_and_the_good_rows_arrive(self):
        clean = self.receive(series_with())
        self.assertEqual(clean.malformed, 0)
        self.assertEqual(int(clean.received.sum()), 4)
        self.assertEqual(clean.gaps, [(2, 1)])  # the place a crafted message takes below
        all_cases = cases()
        self.assertGreaterEqual(len(all_cases), 30)
        for name, bad, reason, replaces_start in all_cases:
            with self.subTest(name):
                s = self.receive(series_with(bad, replaces_start))
                self.assertEqual(s.malformed, 1, name)
                self.assertEqual(s.malformed_by_reason, {reason: 1}, name)
                self.assertEqual(int(s.received.sum()), 4, name)
                np.testing.assert_array_equal(s.z, clean.z, err_msg=name)
                self.assertIsNotNone(s.end, name)

    def test_carried_points_are_kept(self):
        """A block with valid points between plain ones: decoded, nothing counted; the series
        keeps the points only when every block carried them."""
        s = self.receive([control("series-start", start_header()), rows_frames(1, 0), with_points(rows_frames(2, 2)),
                          control("series-end", end_header(3))])
        self.assertEqual(s.malformed, 0)
        self.assertEqual(int(s.received.sum()), 4)
        self.assertIsNone(s.xyz)  # blocks 0-1 and 2-3 carried none
        m = [control("series-start", start_header(point_unit="mm", points=True)),
             with_points(rows_frames(1, 0)), with_points(rows_frames(2, 2)), control("series-end", end_header(3))]
        s = self.receive(m)
        self.assertEqual(s.malformed, 0)
        x, y, z, _ = s.points()  # the start holds no model, the rows their points: mm as carried
        self.assertEqual((x.dtype, y.dtype, z.dtype), (np.float32, np.float64, np.float32))
        self.assertEqual(len(x), 4 * (WIDTH - 1))
        np.testing.assert_array_equal(y[:WIDTH - 1], 0.0)
        np.testing.assert_array_equal(z, s.z[~np.isnan(s.z)])
        self.assertEqual(s.calibration.model, "unknown")

    def test_mm_without_a_model_or_points_is_refused(self):
        m = [control("series-start", start_header(point_unit="mm")), rows_frames(1, 0), rows_frames(2, 2),
             control("series-end", end_header(3))]
        s = self.receive(m)
        with self.assertRaisesRegex(ValueError, "cannot map to mm"):
            s.points()

    def test_all_in_one_series_through_the_command_lines(self):
        msgs = [control("series-start", start_header())]
        seq, row, bad = 1, 0, 0
        for name, frames, reason, replaces_start in cases():
            if replaces_start:
                continue
            msgs.append(rows_frames(seq, row))
            seq, row = seq + 1, row + 2
            frames = list(frames)
            try:  # renumber the crafted message to sit at this place of the series
                h = json.loads(frames[1])
                if isinstance(h, dict) and not name.startswith("seq"):
                    if h.get("seq") == 2:
                        h["seq"] = seq
                    if h.get("series_row") == 2:
                        h["series_row"] = row
                    frames[1] = json.dumps(h).encode()
                if name.startswith("seq backwards"):
                    h["seq"] = seq - 1
                    frames[1] = json.dumps(h).encode()
            except (ValueError, IndexError, UnicodeDecodeError, RecursionError):
                pass
            msgs.append(frames)
            seq, bad = seq + 1, bad + 1
        msgs.append(rows_frames(seq, row))
        row += 2
        msgs.append(control("series-end", end_header(seq + 1, profile_rows=row)))
        for cmd in ([sys.executable, os.path.join(REPO, "tools", "subscribe.py")],
                    [sys.executable, "-m", "stripeline", "save"]):
            with self.subTest(cmd[-1]):
                path = os.path.join(self.tmp.name, "cli.sock")
                pub = Publisher(self.ctx, path)
                try:
                    proc = subprocess.Popen(cmd + [pub.endpoint, "--timeout", "20"], cwd=PKG_ROOT,
                                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                    sender = threading.Thread(target=pub.send, args=(msgs,))
                    sender.start()
                    out, _ = proc.communicate(timeout=60)
                    sender.join()
                finally:
                    pub.close()
                self.assertNotIn("Traceback", out)
                self.assertIn(f"malformed", out)
                self.assertRegex(out, rf"malformed(?: messages)? {bad}\b", out)
                self.assertIn(f"{row}", out)


if __name__ == "__main__":
    unittest.main(verbosity=2)
