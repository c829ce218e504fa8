"""stripeline: receive a stripeline ZeroMQ stream (docs/wire-format.md) into numpy arrays.

    import stripeline
    s = stripeline.receive_series("tcp://127.0.0.1:5556")
    x, y, z, intensity = s.points()   # mm with a sheet-of-light calibration (s.calibration says which)
"""
from .client import Subscriber, load_key_file, receive_series
from .describe import describe
from .files import read_ply, save_npz, save_ply
from .series import LinearMapping, Series, SeriesAssembler, SheetMapping, mapping_for
from .wire import (Calibration, MalformedMessage, Measurement, Message, Rows, SeriesEnd, SeriesStart, SheetCalibration, Stats,
                   ToolResult, decode)

__version__ = "0.1.0"  # = project(stripeline VERSION) in CMakeLists.txt (ctest Version.PackageFollowsProgram)
__all__ = ["describe", "Subscriber", "load_key_file", "receive_series", "read_ply", "save_npz", "save_ply",
           "LinearMapping", "Series", "SeriesAssembler", "SheetMapping", "mapping_for", "Calibration", "SheetCalibration",
           "MalformedMessage", "Measurement", "Message", "Rows", "SeriesEnd", "SeriesStart", "Stats", "ToolResult", "decode"]
