#!/usr/bin/env python3
"""Conformance of a GenTL producer, driven by a consumer written from the EMVA
GenTL 1.5 standard alone (gentl_ctypes.py; nothing shared with stripeline's
own consumer).

    producer_conformance.py PRODUCER.cti [--group scenarios|bad|handles] [--only NAME] [--list]

Every probe runs in its own (forked) process, so a crash or a hang in the
producer is counted (crashes: killed by a signal; hangs: past the timeout)
instead of ending the run. A probe checks one or more expectations (one error code, one
value); the summary counts them: "N probes, R right, C crashes, H hangs".
Exit 0 only when every expectation holds, nothing crashed and nothing hung.
"""
import ctypes as C
import json
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gentl_ctypes import *  # noqa: E402,F401,F403  (the standard's names)
from gentl_ctypes import GenTLError, NodeMap, Producer, name  # noqa: E402

PROBES = {}
TIMEOUT_S = 60


def probe(fn):
    PROBES[fn.__name__] = fn
    return fn


class Check:
    """The expectations of one probe: (label, right, detail)."""

    def __init__(self):
        self.results = []

    def eq(self, label, expected, got):
        self.results.append((label, expected == got, f"expected {expected!r}, got {got!r}"))

    def code(self, label, expected, rc):
        self.results.append((label, expected == rc, f"expected {name(expected)}, got {name(rc)}"))

    def true(self, label, cond, detail=""):
        self.results.append((label, bool(cond), detail))


def garbage_handles():
    """A null handle, a pointer to memory the producer never handed out, and a wild value."""
    junk = C.create_string_buffer(b"\x5a" * 256)
    garbage_handles.keep = junk
    return [None, C.addressof(junk), 0xDEADBEEF0]


class Session:
    """GCInitLib, TLOpen, the first interface, its first device and data stream."""

    def __init__(self, cti, access=DEVICE_ACCESS_CONTROL, stream=True, small=True):
        self.p = p = Producer(cti)
        p.check("GCInitLib")
        self.tl = C.c_void_p()
        p.check("TLOpen", C.byref(self.tl))
        self.if_id = p.id_string(p.TLGetInterfaceID, self.tl, 0)
        self.iface = C.c_void_p()
        p.check("TLOpenInterface", self.tl, self.if_id.encode(), C.byref(self.iface))
        n = C.c_uint32()
        p.check("IFUpdateDeviceList", self.iface, None, 1000)
        p.check("IFGetNumDevices", self.iface, C.byref(n))
        self.dev_id = p.id_string(p.IFGetDeviceID, self.iface, 0)
        self.dev = C.c_void_p()
        p.check("IFOpenDevice", self.iface, self.dev_id.encode(), access, C.byref(self.dev))
        self.port = C.c_void_p()
        p.check("DevGetPort", self.dev, C.byref(self.port))
        self.remote = NodeMap(p, self.port)
        self.grabber = NodeMap(p, self.dev)
        if small and access != DEVICE_ACCESS_READONLY:  # small frames, rendered once: fast probes
            self.remote.set("Width", 512)
            self.remote.set("Height", 16)
            self.grabber.set("SimCachedFrames", 8)
        self.ds = C.c_void_p()
        self.buffers = []  # (handle, memory or None)
        self.event = None
        if stream:
            self.open_stream()

    def open_stream(self):
        sid = self.p.id_string(self.p.DevGetDataStreamID, self.dev, 0)
        self.ds = C.c_void_p()
        self.p.check("DevOpenDataStream", self.dev, sid.encode(), C.byref(self.ds))
        self.buffers = []
        self.event = None

    def payload(self):
        return self.p.info(self.p.DSGetInfo, self.ds, STREAM_INFO_PAYLOAD_SIZE)

    def announce(self, count, size=None, own=True):
        size = size or self.payload()
        out = []
        for i in range(count):
            h = C.c_void_p()
            if own:
                mem = C.create_string_buffer(size)
                self.p.check("DSAnnounceBuffer", self.ds, mem, size, C.c_void_p(1000 + len(self.buffers)), C.byref(h))
            else:
                mem = None
                self.p.check("DSAllocAndAnnounceBuffer", self.ds, size, C.c_void_p(1000 + len(self.buffers)), C.byref(h))
            self.buffers.append((h.value, mem))
            out.append(h.value)
        return out

    def queue(self, handles):
        for h in handles:
            self.p.check("DSQueueBuffer", self.ds, h)

    def register(self):
        self.event = C.c_void_p()
        self.p.check("GCRegisterEvent", self.ds, EVENT_NEW_BUFFER, C.byref(self.event))
        return self.event

    def start(self, count=GENTL_INFINITE):
        self.p.check("DSStartAcquisition", self.ds, ACQ_START_FLAGS_DEFAULT, count)
        self.remote.execute("AcquisitionStart")

    def acquire(self, buffers, count=GENTL_INFINITE, own=True):
        """Announces and queues `buffers` buffers, registers the new-buffer
        event and starts acquiring `count` frames; returns the handles."""
        handles = self.announce(buffers, own=own)
        self.queue(handles)
        self.register()
        self.start(count)
        return handles

    def stop(self):
        self.remote.execute("AcquisitionStop")
        self.p.check("DSStopAcquisition", self.ds, ACQ_STOP_FLAGS_DEFAULT)

    def next_buffer(self, timeout_ms=5000):
        data = EVENT_NEW_BUFFER_DATA()
        size = C.c_size_t(C.sizeof(data))
        rc = self.p.EventGetData(self.event, C.byref(data), C.byref(size), timeout_ms)
        return rc, data.BufferHandle, data.pUserPointer

    def binfo(self, h, cmd):
        return self.p.info(self.p.DSGetBufferInfo, self.ds, h, cmd)

    def sinfo(self, cmd):
        return self.p.info(self.p.DSGetInfo, self.ds, cmd)

    def einfo(self, cmd, event=None):
        return self.p.info(self.p.EventGetInfo, event or self.event, cmd)

    def wait_delivered(self, n, timeout_s=10):
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.sinfo(STREAM_INFO_NUM_DELIVERED) >= n:
                return True
            time.sleep(0.005)
        return False

    def close(self):
        self.p.GCCloseLib()


def cti():
    return PROBES["_cti"]


# ---------------------------------------------------------------------------
# Enumeration, info strings, open and reopen.
@probe
def enumeration_and_info(c):
    p = Producer(cti())
    t = C.c_int32()
    for cmd, label in [(TL_INFO_ID, "ID"), (TL_INFO_VENDOR, "VENDOR"), (TL_INFO_MODEL, "MODEL"), (TL_INFO_VERSION, "VERSION"),
                       (TL_INFO_TLTYPE, "TLTYPE"), (TL_INFO_DISPLAYNAME, "DISPLAYNAME")]:
        v = p.info(p.GCGetInfo, cmd)
        c.true(f"GCGetInfo({label}) is a non-empty string before GCInitLib", isinstance(v, str) and v, repr(v))
    c.eq("TL_INFO_PATHNAME is the full path of the .cti", os.path.realpath(cti()), p.info(p.GCGetInfo, TL_INFO_PATHNAME))
    c.eq("TL_INFO_NAME is its file name", os.path.basename(os.path.realpath(cti())), p.info(p.GCGetInfo, TL_INFO_NAME))
    c.eq("GenTL major version", 1, p.info(p.GCGetInfo, TL_INFO_GENTL_VER_MAJOR))
    p.check("GCInitLib")
    tl = C.c_void_p()
    p.check("TLOpen", C.byref(tl))
    c.eq("TLGetInfo(PATHNAME) as GCGetInfo", os.path.realpath(cti()), p.info(p.TLGetInfo, tl, TL_INFO_PATHNAME))
    n = C.c_uint32()
    p.check("TLUpdateInterfaceList", tl, None, 100)
    p.check("TLGetNumInterfaces", tl, C.byref(n))
    c.true("at least one interface", n.value >= 1, str(n.value))
    if_id = p.id_string(p.TLGetInterfaceID, tl, 0)
    c.eq("TLGetInterfaceInfo(ID) is the enumerated id", if_id, p.info(p.TLGetInterfaceInfo, tl, if_id.encode(), INTERFACE_INFO_ID))
    iface = C.c_void_p()
    p.check("TLOpenInterface", tl, if_id.encode(), C.byref(iface))
    c.eq("IFGetInfo(ID)", if_id, p.info(p.IFGetInfo, iface, INTERFACE_INFO_ID))
    parent = C.c_void_p()
    p.check("IFGetParentTL", iface, C.byref(parent))
    c.eq("IFGetParentTL is the TL handle", tl.value, parent.value)
    p.check("IFGetNumDevices", iface, C.byref(n))
    c.true("at least one device", n.value >= 1, str(n.value))
    dev_id = p.id_string(p.IFGetDeviceID, iface, 0)
    for cmd in (DEVICE_INFO_VENDOR, DEVICE_INFO_MODEL, DEVICE_INFO_TLTYPE, DEVICE_INFO_DISPLAYNAME, DEVICE_INFO_SERIAL_NUMBER):
        v = p.info(p.IFGetDeviceInfo, iface, dev_id.encode(), cmd)
        c.true(f"IFGetDeviceInfo({cmd}) is a string", isinstance(v, str), repr(v))
    c.eq("access status before open", DEVICE_ACCESS_STATUS_READWRITE, p.info(p.IFGetDeviceInfo, iface, dev_id.encode(), DEVICE_INFO_ACCESS_STATUS))
    dev = C.c_void_p()
    p.check("IFOpenDevice", iface, dev_id.encode(), DEVICE_ACCESS_CONTROL, C.byref(dev))
    c.eq("access status once open", DEVICE_ACCESS_STATUS_OPEN_READWRITE, p.info(p.DevGetInfo, dev, DEVICE_INFO_ACCESS_STATUS))
    c.eq("DevGetInfo(ID)", dev_id, p.info(p.DevGetInfo, dev, DEVICE_INFO_ID))
    dev2 = C.c_void_p()
    c.code("a second IFOpenDevice is refused", GC_ERR_RESOURCE_IN_USE, p.IFOpenDevice(iface, dev_id.encode(), DEVICE_ACCESS_CONTROL, C.byref(dev2)))
    port = C.c_void_p()
    p.check("DevGetPort", dev, C.byref(port))
    c.eq("the remote port's module", "Device", p.info(p.GCGetPortInfo, port, PORT_INFO_MODULE))
    remote = NodeMap(p, port)
    c.true("the camera's XML has Width, PayloadSize, TLParamsLocked",
           all(f in remote.nodes for f in ("Width", "PayloadSize", "TLParamsLocked")), "")
    p.check("DevClose", dev)
    c.eq("access status after close", DEVICE_ACCESS_STATUS_READWRITE, p.info(p.IFGetDeviceInfo, iface, dev_id.encode(), DEVICE_INFO_ACCESS_STATUS))
    c.code("DevOpen again after close", GC_ERR_SUCCESS, p.IFOpenDevice(iface, dev_id.encode(), DEVICE_ACCESS_CONTROL, C.byref(dev2)))
    c.code("GCCloseLib", GC_ERR_SUCCESS, p.GCCloseLib())


def acquire(c, s, count, own, label):
    s.grabber.set("SimWaitForBuffers", 1)  # back-pressure: no underrun however slow this consumer is
    handles = s.acquire(4, own=own)
    ids, sizes, payload = [], set(), s.payload()
    for _ in range(count):
        rc, h, user = s.next_buffer()
        if rc != 0:
            c.code(f"{label}: EventGetData", GC_ERR_SUCCESS, rc)
            return
        ids.append(s.binfo(h, BUFFER_INFO_FRAMEID))
        sizes.add((s.binfo(h, BUFFER_INFO_SIZE_FILLED), s.binfo(h, BUFFER_INFO_IS_INCOMPLETE), s.binfo(h, BUFFER_INFO_NEW_DATA)))
        s.p.check("DSQueueBuffer", s.ds, h)
    s.stop()
    gaps = [(a, b) for a, b in zip(ids, ids[1:]) if b != a + 1]
    c.eq(f"{label}: frame ids without gaps (first gaps shown)", [], gaps[:5])
    c.eq(f"{label}: every buffer full, complete, new", {(payload, False, True)}, sizes)
    c.code(f"{label}: revoke while queued is refused", GC_ERR_BUSY, s.p.DSRevokeBuffer(s.ds, handles[0], None, None))
    s.p.check("DSFlushQueue", s.ds, ACQ_QUEUE_ALL_DISCARD)
    for h, mem in list(s.buffers):
        mem_out, user = C.c_void_p(), C.c_void_p()
        s.p.check("DSRevokeBuffer", s.ds, h, C.byref(mem_out), C.byref(user))
        c.eq(f"{label}: revoke gives the memory back", C.addressof(mem) if mem is not None else None, mem_out.value)
    c.eq(f"{label}: no buffer left", 0, s.sinfo(STREAM_INFO_NUM_ANNOUNCED))
    s.buffers = []
    s.p.check("GCUnregisterEvent", s.ds, EVENT_NEW_BUFFER)


@probe
def own_buffers_stop_revoke_close_reopen(c):
    s = Session(cti())
    acquire(c, s, 200, True, "own buffers")
    s.p.check("DSClose", s.ds)
    s.open_stream()
    acquire(c, s, 50, True, "after DSClose and reopen")
    s.p.check("DevClose", s.dev)
    s.p.check("IFOpenDevice", s.iface, s.dev_id.encode(), DEVICE_ACCESS_CONTROL, C.byref(s.dev))
    s.p.check("DevGetPort", s.dev, C.byref(s.port))
    s.remote = NodeMap(s.p, s.port)
    s.grabber.set("SimCachedFrames", 8)
    s.open_stream()
    acquire(c, s, 50, True, "after DevClose and reopen")
    s.close()


@probe
def producer_allocated_buffers(c):
    s = Session(cti())
    acquire(c, s, 200, False, "producer buffers")
    s.close()


@probe
def multi_frame_buffers(c):
    s = Session(cti())
    s.grabber.set("FramesPerBuffer", 100)
    frame = 512 * 16
    c.eq("payload of 100 frames", 100 * frame, s.payload())
    s.acquire(3)
    ids = []
    for _ in range(10):
        rc, h, _u = s.next_buffer()
        c.code("EventGetData", GC_ERR_SUCCESS, rc)
        if rc:
            return
        ids.append(s.binfo(h, BUFFER_INFO_FRAMEID))
        if len(ids) == 1:
            c.eq("buffer height is 100 frames", 1600, s.binfo(h, BUFFER_INFO_HEIGHT))
            c.eq("delivered height", 1600, s.binfo(h, BUFFER_INFO_DELIVERED_IMAGEHEIGHT))
            c.eq("size filled", 100 * frame, s.binfo(h, BUFFER_INFO_SIZE_FILLED))
        s.p.check("DSQueueBuffer", s.ds, h)
    c.eq("buffer ids consecutive", list(range(ids[0], ids[0] + 10)), ids)
    s.stop()
    s.close()


# ---------------------------------------------------------------------------
# DSFlushQueue, every mode, with the new-buffer event registered.
def delivered_not_fetched(s, buffers=6, acquire=4):
    handles = s.acquire(buffers, acquire)
    ok = s.wait_delivered(acquire)
    deadline = time.monotonic() + 10
    while s.sinfo(STREAM_INFO_IS_GRABBING) and time.monotonic() < deadline and s.sinfo(STREAM_INFO_NUM_AWAIT_DELIVERY) < acquire:
        time.sleep(0.005)
    return handles, ok


@probe
def flush_input_to_output(c):
    s = Session(cti())
    handles = s.announce(4)
    s.queue(handles)
    s.register()
    s.p.check("DSFlushQueue", s.ds, ACQ_QUEUE_INPUT_TO_OUTPUT)
    c.eq("one new-buffer event per buffer", 4, s.einfo(EVENT_NUM_IN_QUEUE))
    c.eq("NUM_AWAIT_DELIVERY", 4, s.sinfo(STREAM_INFO_NUM_AWAIT_DELIVERY))
    c.eq("NUM_QUEUED", 0, s.sinfo(STREAM_INFO_NUM_QUEUED))
    got = []
    for _ in range(4):
        rc, h, _u = s.next_buffer(0)
        c.code("EventGetData", GC_ERR_SUCCESS, rc)
        got.append(h)
        c.eq("NEW_DATA false (flushed, not filled)", False, s.binfo(h, BUFFER_INFO_NEW_DATA))
    c.eq("the buffers, in queue order", handles, got)
    c.code("then the queue is empty", GC_ERR_TIMEOUT, s.next_buffer(0)[0])
    s.close()


@probe
def flush_output_discard(c):
    s = Session(cti())
    handles, ok = delivered_not_fetched(s)
    c.true("4 buffers delivered", ok)
    c.eq("NUM_AWAIT_DELIVERY with 4 delivered, not fetched", 4, s.sinfo(STREAM_INFO_NUM_AWAIT_DELIVERY))
    c.eq("EVENT_NUM_IN_QUEUE", 4, s.einfo(EVENT_NUM_IN_QUEUE))
    c.eq("IS_QUEUED of a buffer in the output queue", True, s.binfo(handles[0], BUFFER_INFO_IS_QUEUED))
    s.p.check("DSFlushQueue", s.ds, ACQ_QUEUE_OUTPUT_DISCARD)
    c.eq("events discarded with the output queue", 0, s.einfo(EVENT_NUM_IN_QUEUE))
    c.eq("NUM_AWAIT_DELIVERY after discard", 0, s.sinfo(STREAM_INFO_NUM_AWAIT_DELIVERY))
    c.code("EventGetData finds nothing", GC_ERR_TIMEOUT, s.next_buffer(0)[0])
    c.eq("IS_QUEUED after discard", False, s.binfo(handles[0], BUFFER_INFO_IS_QUEUED))
    c.eq("the 2 others stay in the input pool", 2, s.sinfo(STREAM_INFO_NUM_QUEUED))
    s.close()


@probe
def flush_all_to_input(c):
    s = Session(cti())
    handles, ok = delivered_not_fetched(s)
    rc, h, _u = s.next_buffer(0)  # one delivered to us: unqueued
    c.code("one fetched", GC_ERR_SUCCESS, rc)
    s.p.DSStopAcquisition(s.ds, ACQ_STOP_FLAGS_KILL)
    s.p.check("DSFlushQueue", s.ds, ACQ_QUEUE_ALL_TO_INPUT)
    c.eq("every buffer in the input pool", 6, s.sinfo(STREAM_INFO_NUM_QUEUED))
    c.eq("no event left", 0, s.einfo(EVENT_NUM_IN_QUEUE))
    c.code("no buffer comes back while in the input pool", GC_ERR_TIMEOUT, s.next_buffer(0)[0])
    c.eq("IS_QUEUED of the fetched one", True, s.binfo(h, BUFFER_INFO_IS_QUEUED))
    s.close()


@probe
def flush_unqueued_to_input(c):
    s = Session(cti())
    handles, ok = delivered_not_fetched(s)
    rc, h, _u = s.next_buffer(0)
    c.code("one fetched", GC_ERR_SUCCESS, rc)
    extra = s.announce(1)  # announced, never queued
    s.p.check("DSFlushQueue", s.ds, ACQ_QUEUE_UNQUEUED_TO_INPUT)
    c.eq("awaiting delivery stay where they are", 3, s.sinfo(STREAM_INFO_NUM_AWAIT_DELIVERY))
    c.eq("events of those stay", 3, s.einfo(EVENT_NUM_IN_QUEUE))
    c.eq("input pool: 2 never filled + the fetched + the new one", 4, s.sinfo(STREAM_INFO_NUM_QUEUED))
    c.eq("the new one is queued", True, s.binfo(extra[0], BUFFER_INFO_IS_QUEUED))
    s.close()


@probe
def flush_all_discard(c):
    s = Session(cti())
    handles, ok = delivered_not_fetched(s)
    s.p.DSStopAcquisition(s.ds, ACQ_STOP_FLAGS_KILL)
    s.p.check("DSFlushQueue", s.ds, ACQ_QUEUE_ALL_DISCARD)
    c.eq("input pool empty", 0, s.sinfo(STREAM_INFO_NUM_QUEUED))
    c.eq("output queue empty", 0, s.sinfo(STREAM_INFO_NUM_AWAIT_DELIVERY))
    c.eq("no event left", 0, s.einfo(EVENT_NUM_IN_QUEUE))
    for h in handles:
        c.code("each buffer revocable", GC_ERR_SUCCESS, s.p.DSRevokeBuffer(s.ds, h, None, None))
    s.close()


# ---------------------------------------------------------------------------
# Buffers smaller than the payload: never written past.
def guarded(size, guard=1 << 17):
    mem = C.create_string_buffer(b"\xa5" * (size + guard), size + guard)
    return mem


@probe
def small_own_buffer_is_never_overrun(c):
    s = Session(cti(), small=False)  # the camera's default geometry: 2048 x 52 Mono8 (106,496 bytes)
    s.grabber.set("SimCachedFrames", 4)
    ok_handles = s.announce(2)
    s.queue(ok_handles)
    s.register()
    s.start()
    mem = guarded(4096)
    h = C.c_void_p()
    s.p.check("DSAnnounceBuffer", s.ds, mem, 4096, None, C.byref(h))
    got = None
    s.p.check("DSQueueBuffer", s.ds, h)
    for _ in range(50):
        rc, b, _u = s.next_buffer()
        if rc:
            c.code("EventGetData", GC_ERR_SUCCESS, rc)
            break
        if b == h.value:
            got = b
            break
        s.p.check("DSQueueBuffer", s.ds, b)
    c.true("the 4,096-byte buffer is delivered", got is not None)
    if got:
        c.true("SIZE_FILLED within the buffer", s.binfo(got, BUFFER_INFO_SIZE_FILLED) <= 4096, str(s.binfo(got, BUFFER_INFO_SIZE_FILLED)))
        c.eq("IS_INCOMPLETE", True, s.binfo(got, BUFFER_INFO_IS_INCOMPLETE))
        c.eq("DATA_LARGER_THAN_BUFFER", True, s.binfo(got, BUFFER_INFO_DATA_LARGER_THAN_BUFFER))
    c.true("nothing written past 4,096 bytes", mem.raw[4096:] == b"\xa5" * (len(mem.raw) - 4096), "guard bytes changed")
    s.stop()
    s.close()


@probe
def partial_buffer_holds_the_frames_that_fit(c):
    s = Session(cti())
    s.grabber.set("FramesPerBuffer", 4)
    frame = 512 * 16
    mem = guarded(2 * frame + 100)
    h = C.c_void_p()
    s.p.check("DSAnnounceBuffer", s.ds, mem, 2 * frame + 100, None, C.byref(h))
    s.queue([h.value])
    s.register()
    s.start()
    rc, b, _u = s.next_buffer()
    c.code("delivered", GC_ERR_SUCCESS, rc)
    if rc == 0:
        c.eq("SIZE_FILLED: the 2 frames that fit", 2 * frame, s.binfo(b, BUFFER_INFO_SIZE_FILLED))
        c.eq("DELIVERED_IMAGEHEIGHT", 32, s.binfo(b, BUFFER_INFO_DELIVERED_IMAGEHEIGHT))
        c.eq("IS_INCOMPLETE", True, s.binfo(b, BUFFER_INFO_IS_INCOMPLETE))
        c.eq("DATA_LARGER_THAN_BUFFER", True, s.binfo(b, BUFFER_INFO_DATA_LARGER_THAN_BUFFER))
        c.true("frames written", mem.raw[:frame] != b"\xa5" * frame, "")
    c.true("nothing written past the buffer", mem.raw[2 * frame + 100:] == b"\xa5" * (len(mem.raw) - 2 * frame - 100), "")
    s.stop()
    s.close()


@probe
def tiny_producer_buffer_queued_while_acquiring(c):
    s = Session(cti())
    s.acquire(2)
    h = C.c_void_p()
    s.p.check("DSAllocAndAnnounceBuffer", s.ds, 64, None, C.byref(h))
    s.p.check("DSQueueBuffer", s.ds, h)
    seen = False
    for _ in range(50):
        rc, b, _u = s.next_buffer()
        if rc:
            break
        if b == h.value:
            seen = True
            c.eq("64-byte buffer: SIZE_FILLED", 0, s.binfo(b, BUFFER_INFO_SIZE_FILLED))
            c.eq("64-byte buffer: DATA_LARGER_THAN_BUFFER", True, s.binfo(b, BUFFER_INFO_DATA_LARGER_THAN_BUFFER))
            break
        s.p.check("DSQueueBuffer", s.ds, b)
    c.true("the 64-byte buffer came back (no crash)", seen)
    s.stop()
    s.close()


# ---------------------------------------------------------------------------
# The camera: AcquisitionStop, TLParamsLocked, read-only access.
@probe
def acquisition_stop_is_prompt(c):
    s = Session(cti())
    s.acquire(16)
    for _ in range(20):
        rc, b, _u = s.next_buffer()
        s.p.check("DSQueueBuffer", s.ds, b)
    s.remote.execute("AcquisitionStop")
    at_stop = s.sinfo(STREAM_INFO_NUM_DELIVERED)
    time.sleep(0.5)  # an observation window: nothing may arrive in it
    c.eq("no buffer delivered in the 0.5 s after AcquisitionStop", at_stop, s.sinfo(STREAM_INFO_NUM_DELIVERED))
    s.remote.execute("AcquisitionStart")
    c.true("AcquisitionStart again: buffers flow", s.wait_delivered(at_stop + 5), "")
    s.stop()
    s.close()


@probe
def tl_params_locked(c):
    s = Session(cti())
    node = s.remote.nodes["Width"]
    c.eq("Width names pIsLocked TLParamsLocked", "TLParamsLocked", s.remote.child(node, "pIsLocked"))
    c.eq("unlocked while idle", 0, s.remote.get("TLParamsLocked"))
    s.announce(2)
    s.queue([h for h, _m in s.buffers])
    s.register()
    s.start()
    c.eq("locked while acquiring", 1, s.remote.get("TLParamsLocked"))
    c.code("Width refused while locked", GC_ERR_BUSY, s.remote.write_raw("Width", 256))
    s.stop()
    c.eq("unlocked after stop", 0, s.remote.get("TLParamsLocked"))
    s.remote.set("TLParamsLocked", 1)
    c.code("Width refused while the consumer locks", GC_ERR_BUSY, s.remote.write_raw("Width", 256))
    s.remote.set("TLParamsLocked", 0)
    c.code("Width accepted once unlocked", GC_ERR_SUCCESS, s.remote.write_raw("Width", 256))
    s.close()


@probe
def read_only_access(c):
    s = Session(cti(), access=DEVICE_ACCESS_READONLY)
    c.eq("access status OPEN_READONLY", DEVICE_ACCESS_STATUS_OPEN_READONLY, s.p.info(s.p.DevGetInfo, s.dev, DEVICE_INFO_ACCESS_STATUS))
    c.eq("reads work", 2048, s.remote.get("Width"))
    c.code("GCWritePort(Width) denied", GC_ERR_ACCESS_DENIED, s.remote.write_raw("Width", 1024))
    c.eq("Width unchanged", 2048, s.remote.get("Width"))
    c.code("grabber port write denied", GC_ERR_ACCESS_DENIED, s.grabber.write_raw("FramesPerBuffer", 2))
    c.eq("PORT_INFO_ACCESS_WRITE false", False, s.p.info(s.p.GCGetPortInfo, s.port, PORT_INFO_ACCESS_WRITE))
    s.close()


# ---------------------------------------------------------------------------
# Events: kill, close while waiting, error data.
@probe
def event_kill_and_close_while_waiting(c):
    s = Session(cti())
    s.announce(2)
    s.register()
    results = []
    t = threading.Thread(target=lambda: results.append(s.next_buffer(GENTL_INFINITE)[0]))
    t.start()
    t.join(0.2)
    s.p.check("EventKill", s.event)
    t.join(10)
    c.true("EventKill ends an infinite wait", not t.is_alive())
    c.eq("... with GC_ERR_ABORT", [GC_ERR_ABORT], results)
    results.clear()
    t = threading.Thread(target=lambda: results.append(s.next_buffer(GENTL_INFINITE)[0]))
    t.start()
    t.join(0.2)
    s.p.check("DSClose", s.ds)
    t.join(10)
    c.true("DSClose ends an infinite wait", not t.is_alive())
    c.eq("... with GC_ERR_ABORT", [GC_ERR_ABORT], results)
    s.close()


@probe
def exit_while_acquiring(c):
    s = Session(cti())
    s.acquire(4)
    s.next_buffer()
    c.true("acquiring", s.sinfo(STREAM_INFO_IS_GRABBING))
    # The runner exits now, without GCCloseLib: the exit code must be 0. The
    # session (and the memory of its announced buffers, which the producer
    # keeps filling until it stops) stays alive until then: a consumer that
    # frees announced memory while acquiring breaks the standard, and the
    # producer's writes into it were this probe's own crash
    # (AddressSanitizer: heap-use-after-free, the buffers freed by Python).
    PROBES["_leave_open"] = s


# ---------------------------------------------------------------------------
# Bad calls: each in its own process; one error code each.
def bad(label, expected):
    """A bad-call probe: fn(s, c) returns the code of the one call under test."""
    def wrap(fn):
        def run(c):
            s = Session(cti()) if fn.__code__.co_argcount else None
            rc = fn(s) if s else fn()
            c.code(label, expected, rc)
            if s:
                s.close()
        run.__name__ = "bad_" + fn.__name__
        PROBES[run.__name__] = run
        return fn
    return wrap


def size(v=0):
    return C.byref(C.c_size_t(v))


def handle_probes():
    g = garbage_handles()
    for i, h in enumerate(g):
        for call, args, code in [
            ("TLGetInfo", lambda h: (h, TL_INFO_ID, None, None, size()), GC_ERR_INVALID_HANDLE),
            ("TLGetNumInterfaces", lambda h: (h, C.byref(C.c_uint32())), GC_ERR_INVALID_HANDLE),
            ("IFGetNumDevices", lambda h: (h, C.byref(C.c_uint32())), GC_ERR_INVALID_HANDLE),
            ("IFOpenDevice", lambda h: (h, b"x", DEVICE_ACCESS_CONTROL, C.byref(C.c_void_p())), GC_ERR_INVALID_HANDLE),
            ("DevGetPort", lambda h: (h, C.byref(C.c_void_p())), GC_ERR_INVALID_HANDLE),
            ("DevOpenDataStream", lambda h: (h, b"x", C.byref(C.c_void_p())), GC_ERR_INVALID_HANDLE),
            ("DSGetInfo", lambda h: (h, STREAM_INFO_ID, None, None, size()), GC_ERR_INVALID_HANDLE),
            ("DSStartAcquisition", lambda h: (h, 0, 1), GC_ERR_INVALID_HANDLE),
            ("DSFlushQueue", lambda h: (h, ACQ_QUEUE_ALL_DISCARD), GC_ERR_INVALID_HANDLE),
            ("GCReadPort", lambda h: (h, 0, C.create_string_buffer(8), size(8)), GC_ERR_INVALID_HANDLE),
            ("GCWritePort", lambda h: (h, 0, C.create_string_buffer(8), size(8)), GC_ERR_INVALID_HANDLE),
            ("GCGetPortURL", lambda h: (h, None, size()), GC_ERR_INVALID_HANDLE),
            ("GCRegisterEvent", lambda h: (h, EVENT_NEW_BUFFER, C.byref(C.c_void_p())), GC_ERR_INVALID_HANDLE),
            ("EventGetData", lambda h: (h, C.create_string_buffer(64), size(64), 0), GC_ERR_INVALID_HANDLE),
            ("EventKill", lambda h: (h,), GC_ERR_INVALID_HANDLE),
        ]:
            def make(call=call, args=args, code=code, i=i):
                def run(c):
                    s = Session(cti())
                    hh = garbage_handles()[i]
                    c.code(f"{call} with {['a null', 'a garbage', 'a wild'][i]} handle", code, getattr(s.p, call)(*args(hh)))
                    s.close()
                run.__name__ = f"handle_{call}_{['null', 'garbage', 'wild'][i]}"
                PROBES[run.__name__] = run
            make()


handle_probes()


def buffer_probes():
    for call, args in [("DSQueueBuffer", lambda s, b: (s.ds, b)),
                       ("DSGetBufferInfo", lambda s, b: (s.ds, b, BUFFER_INFO_SIZE, None, None, size())),
                       ("DSRevokeBuffer", lambda s, b: (s.ds, b, None, None))]:
        for i in range(3):
            def make(call=call, args=args, i=i):
                def run(c):
                    s = Session(cti())
                    c.code(f"{call} with {['a null', 'a garbage', 'a wild'][i]} buffer handle", GC_ERR_INVALID_HANDLE,
                           getattr(s.p, call)(*args(s, garbage_handles()[i])))
                    s.close()
                run.__name__ = f"handle_{call}_{['null', 'garbage', 'wild'][i]}"
                PROBES[run.__name__] = run
            make()


buffer_probes()


@bad("TLOpen before GCInitLib", GC_ERR_NOT_INITIALIZED)
def tlopen_uninitialized():
    return Producer(cti()).TLOpen(C.byref(C.c_void_p()))


@bad("GCInitLib twice", GC_ERR_RESOURCE_IN_USE)
def init_twice(s):
    return s.p.GCInitLib()


@bad("TLOpen(NULL)", GC_ERR_INVALID_PARAMETER)
def tlopen_null():
    p = Producer(cti())
    p.check("GCInitLib")
    return p.TLOpen(None)


@bad("GCGetInfo with a null size", GC_ERR_INVALID_PARAMETER)
def info_null_size():
    return Producer(cti()).GCGetInfo(TL_INFO_ID, None, C.create_string_buffer(64), None)


@bad("GCGetInfo(VENDOR) into 2 bytes", GC_ERR_BUFFER_TOO_SMALL)
def info_too_small():
    return Producer(cti()).GCGetInfo(TL_INFO_VENDOR, None, C.create_string_buffer(2), size(2))


@probe
def too_small_writes_the_size(c):
    p = Producer(cti())
    n = C.c_size_t(2)
    rc = p.GCGetInfo(TL_INFO_VENDOR, None, C.create_string_buffer(2), C.byref(n))
    c.code("GCGetInfo too small", GC_ERR_BUFFER_TOO_SMALL, rc)
    c.eq("... writes the size needed", len(p.info(p.GCGetInfo, TL_INFO_VENDOR)) + 1, n.value)
    s = Session(cti())
    n = C.c_size_t(1)
    c.code("DSGetInfo(PAYLOAD_SIZE) into 1 byte", GC_ERR_BUFFER_TOO_SMALL, s.p.DSGetInfo(s.ds, STREAM_INFO_PAYLOAD_SIZE, None, C.create_string_buffer(1), C.byref(n)))
    c.eq("... writes sizeof(size_t)", 8, n.value)
    n = C.c_size_t(3)
    c.code("GCGetPortURL into 3 bytes", GC_ERR_BUFFER_TOO_SMALL, s.p.GCGetPortURL(s.port, C.create_string_buffer(3), C.byref(n)))
    c.true("... writes the URL's size", n.value > 3, str(n.value))
    n = C.c_size_t(2)
    c.code("IFGetDeviceID into 2 bytes", GC_ERR_BUFFER_TOO_SMALL, s.p.IFGetDeviceID(s.iface, 0, C.create_string_buffer(2), C.byref(n)))
    c.eq("... writes the id's size", len(s.dev_id) + 1, n.value)
    s.p.TLOpen(None)  # leaves an error text
    code, n = C.c_int32(), C.c_size_t(1)
    c.code("GCGetLastError into 1 byte", GC_ERR_BUFFER_TOO_SMALL, s.p.GCGetLastError(C.byref(code), C.create_string_buffer(1), C.byref(n)))
    c.true("... writes the text's size", n.value > 1, str(n.value))
    s.queue(s.announce(2))
    s.register()
    s.p.check("DSFlushQueue", s.ds, ACQ_QUEUE_INPUT_TO_OUTPUT)
    n = C.c_size_t(4)
    c.code("EventGetData into 4 bytes", GC_ERR_BUFFER_TOO_SMALL, s.p.EventGetData(s.event, C.create_string_buffer(4), C.byref(n), 0))
    c.eq("... writes the event data size", 16, n.value)
    c.eq("... and keeps the event", 2, s.einfo(EVENT_NUM_IN_QUEUE))
    s.close()


@bad("TLGetInterfaceID index 99", GC_ERR_INVALID_INDEX)
def interface_index(s):
    return s.p.TLGetInterfaceID(s.tl, 99, None, size())


@bad("TLOpenInterface unknown id", GC_ERR_INVALID_ID)
def interface_unknown(s):
    return s.p.TLOpenInterface(s.tl, b"no-such-interface", C.byref(C.c_void_p()))


@bad("TLOpenInterface NULL id", GC_ERR_INVALID_ID)
def interface_null(s):
    return s.p.TLOpenInterface(s.tl, None, C.byref(C.c_void_p()))


@bad("TLGetNumInterfaces NULL count", GC_ERR_INVALID_PARAMETER)
def num_interfaces_null(s):
    return s.p.TLGetNumInterfaces(s.tl, None)


@bad("IFGetDeviceID index 99", GC_ERR_INVALID_INDEX)
def device_index(s):
    return s.p.IFGetDeviceID(s.iface, 99, None, size())


@bad("IFOpenDevice unknown id", GC_ERR_INVALID_ID)
def device_unknown(s):
    return s.p.IFOpenDevice(s.iface, b"no-such-device", DEVICE_ACCESS_CONTROL, C.byref(C.c_void_p()))


@bad("IFOpenDevice access flag 99", GC_ERR_INVALID_PARAMETER)
def device_flag():
    p = Producer(cti())
    p.check("GCInitLib")
    tl, iface = C.c_void_p(), C.c_void_p()
    p.check("TLOpen", C.byref(tl))
    if_id = p.id_string(p.TLGetInterfaceID, tl, 0)
    p.check("TLOpenInterface", tl, if_id.encode(), C.byref(iface))
    dev_id = p.id_string(p.IFGetDeviceID, iface, 0)
    return p.IFOpenDevice(iface, dev_id.encode(), 99, C.byref(C.c_void_p()))


@bad("IFOpenDevice NULL handle out", GC_ERR_INVALID_PARAMETER)
def device_null_out(s):
    s.p.check("DevClose", s.dev)
    return s.p.IFOpenDevice(s.iface, s.dev_id.encode(), DEVICE_ACCESS_CONTROL, None)


@bad("DevGetPort NULL out", GC_ERR_INVALID_PARAMETER)
def devport_null(s):
    return s.p.DevGetPort(s.dev, None)


@bad("DevGetParentIF NULL out", GC_ERR_INVALID_PARAMETER)
def devparent_null(s):
    return s.p.DevGetParentIF(s.dev, None)


@bad("DevOpenDataStream unknown id", GC_ERR_INVALID_ID)
def stream_unknown(s):
    return s.p.DevOpenDataStream(s.dev, b"Stream9", C.byref(C.c_void_p()))


@bad("DevOpenDataStream twice", GC_ERR_RESOURCE_IN_USE)
def stream_twice(s):
    return s.p.DevOpenDataStream(s.dev, b"Stream0", C.byref(C.c_void_p()))


@bad("DSAnnounceBuffer NULL memory", GC_ERR_INVALID_PARAMETER)
def announce_null(s):
    return s.p.DSAnnounceBuffer(s.ds, None, 4096, None, C.byref(C.c_void_p()))


@bad("DSAnnounceBuffer size 0", GC_ERR_INVALID_PARAMETER)
def announce_zero(s):
    return s.p.DSAnnounceBuffer(s.ds, C.create_string_buffer(16), 0, None, C.byref(C.c_void_p()))


@bad("DSAnnounceBuffer the same memory twice", GC_ERR_RESOURCE_IN_USE)
def announce_twice(s):
    mem = C.create_string_buffer(s.payload())
    s.p.check("DSAnnounceBuffer", s.ds, mem, len(mem), None, C.byref(C.c_void_p()))
    return s.p.DSAnnounceBuffer(s.ds, mem, len(mem), None, C.byref(C.c_void_p()))


@bad("DSAllocAndAnnounceBuffer SIZE_MAX", GC_ERR_OUT_OF_MEMORY)
def alloc_huge(s):
    return s.p.DSAllocAndAnnounceBuffer(s.ds, 2**64 - 1, None, C.byref(C.c_void_p()))


@bad("DSAllocAndAnnounceBuffer NULL out", GC_ERR_INVALID_PARAMETER)
def alloc_null(s):
    return s.p.DSAllocAndAnnounceBuffer(s.ds, 4096, None, None)


@bad("DSQueueBuffer twice", GC_ERR_RESOURCE_IN_USE)
def queue_twice(s):
    (h,) = s.announce(1)
    s.queue([h])
    return s.p.DSQueueBuffer(s.ds, h)


@bad("DSRevokeBuffer of a queued buffer", GC_ERR_BUSY)
def revoke_queued(s):
    (h,) = s.announce(1)
    s.queue([h])
    return s.p.DSRevokeBuffer(s.ds, h, None, None)


@bad("DSQueueBuffer of another stream's buffer", GC_ERR_INVALID_HANDLE)
def queue_revoked(s):
    (h,) = s.announce(1)
    s.p.check("DSRevokeBuffer", s.ds, h, None, None)
    return s.p.DSQueueBuffer(s.ds, h)


@bad("DSFlushQueue operation 77", GC_ERR_INVALID_PARAMETER)
def flush_bad(s):
    return s.p.DSFlushQueue(s.ds, 77)


@bad("DSStartAcquisition without buffers", GC_ERR_RESOURCE_EXHAUSTED)
def start_empty(s):
    return s.p.DSStartAcquisition(s.ds, 0, GENTL_INFINITE)


@bad("DSStartAcquisition twice", GC_ERR_RESOURCE_IN_USE)
def start_twice(s):
    s.queue(s.announce(2))
    s.p.check("DSStartAcquisition", s.ds, 0, GENTL_INFINITE)
    return s.p.DSStartAcquisition(s.ds, 0, GENTL_INFINITE)


@bad("DSGetInfo NULL size", GC_ERR_INVALID_PARAMETER)
def dsinfo_null(s):
    return s.p.DSGetInfo(s.ds, STREAM_INFO_ID, None, C.create_string_buffer(64), None)


@bad("DSGetBufferID index 99", GC_ERR_INVALID_INDEX)
def buffer_index(s):
    return s.p.DSGetBufferID(s.ds, 99, C.byref(C.c_void_p()))


@bad("DSGetNumBufferParts NULL count", GC_ERR_INVALID_PARAMETER)
def parts_null(s):
    (h,) = s.announce(1)
    return s.p.DSGetNumBufferParts(s.ds, h, None)


@bad("DSGetBufferChunkData without chunks", GC_ERR_NO_DATA)
def chunks_none(s):
    (h,) = s.announce(1)
    return s.p.DSGetBufferChunkData(s.ds, h, None, size())


@bad("GCReadPort at 0xFFFFFFFFFFFFFFF8, 1 MiB + 16 (wraps)", GC_ERR_INVALID_ADDRESS)
def read_wrapped(s):
    buf = C.create_string_buffer((1 << 20) + 16)
    return s.p.GCReadPort(s.port, 0xFFFFFFFFFFFFFFF8, buf, size((1 << 20) + 16))


@bad("GCReadPort of a register at an offset, past its end", GC_ERR_INVALID_ADDRESS)
def read_straddle(s):
    address, length = s.remote.register("Width")
    return s.p.GCReadPort(s.port, address + 4, C.create_string_buffer(8), size(8))


@bad("GCReadPort of a register with SIZE_MAX bytes", GC_ERR_INVALID_ADDRESS)
def read_huge(s):
    address, length = s.remote.register("Width")
    return s.p.GCReadPort(s.port, address, C.create_string_buffer(8), size(2**64 - 1))


@bad("GCReadPort at address 0", GC_ERR_INVALID_ADDRESS)
def read_zero(s):
    return s.p.GCReadPort(s.port, 0, C.create_string_buffer(8), size(8))


@bad("GCReadPort past the end of the XML file", GC_ERR_INVALID_ADDRESS)
def read_past_file(s):
    url = s.p.id_string(s.p.GCGetPortURL, s.port)
    address, length = [int(x, 16) for x in url.split("?")[0].split(";")[1:3]]
    return s.p.GCReadPort(s.port, address + length - 4, C.create_string_buffer(8), size(8))


@bad("GCReadPort NULL size", GC_ERR_INVALID_PARAMETER)
def read_null(s):
    return s.p.GCReadPort(s.port, 0x1000, C.create_string_buffer(8), None)


@bad("GCWritePort Width = 1 (below its minimum)", GC_ERR_INVALID_VALUE)
def write_range(s):
    return s.remote.write_raw("Width", 1)


@bad("GCWritePort of a read-only register (SensorWidth)", GC_ERR_ACCESS_DENIED)
def write_ro(s):
    return s.remote.write_raw("SensorWidth", 1)


@bad("GCReadPortStacked NULL entries", GC_ERR_INVALID_PARAMETER)
def stacked_null(s):
    return s.p.GCReadPortStacked(s.port, None, size(1))


@bad("GCRegisterEvent NULL out", GC_ERR_INVALID_PARAMETER)
def event_null_out(s):
    return s.p.GCRegisterEvent(s.ds, EVENT_NEW_BUFFER, None)


@bad("GCRegisterEvent event type 99", GC_ERR_NOT_IMPLEMENTED)
def event_type(s):
    return s.p.GCRegisterEvent(s.ds, 99, C.byref(C.c_void_p()))


@bad("GCRegisterEvent twice", GC_ERR_RESOURCE_IN_USE)
def event_twice(s):
    s.register()
    return s.p.GCRegisterEvent(s.ds, EVENT_NEW_BUFFER, C.byref(C.c_void_p()))


@bad("GCUnregisterEvent not registered", GC_ERR_NOT_AVAILABLE)
def unregister_none(s):
    return s.p.GCUnregisterEvent(s.ds, EVENT_NEW_BUFFER)


@bad("EventGetData with nothing queued, timeout 0", GC_ERR_TIMEOUT)
def event_timeout(s):
    s.register()
    return s.next_buffer(0)[0]


@bad("EventGetData with a 2^63 ms timeout and a buffer waiting", GC_ERR_SUCCESS)
def event_huge_timeout(s):
    s.queue(s.announce(1))
    s.register()
    s.p.check("DSFlushQueue", s.ds, ACQ_QUEUE_INPUT_TO_OUTPUT)
    return s.next_buffer(1 << 63)[0]


@bad("EventGetData NULL size", GC_ERR_INVALID_PARAMETER)
def event_null_size(s):
    s.register()
    return s.p.EventGetData(s.event, C.create_string_buffer(16), None, 0)


@bad("DSGetInfo on a closed stream", GC_ERR_INVALID_HANDLE)
def stale_stream(s):
    s.p.check("DSClose", s.ds)
    return s.p.DSGetInfo(s.ds, STREAM_INFO_ID, None, None, size())


@bad("GCReadPort on a closed device's port", GC_ERR_INVALID_HANDLE)
def stale_port(s):
    s.p.check("DevClose", s.dev)
    return s.p.GCReadPort(s.port, 0x1000, C.create_string_buffer(8), size(8))


@bad("DSStopAcquisition while idle", GC_ERR_RESOURCE_IN_USE)
def stop_idle(s):
    return s.p.DSStopAcquisition(s.ds, 0)


# ---------------------------------------------------------------------------
def run_forked(name_):
    """Runs one probe in a forked process: (results, how it ended: "ok" | "crash N" | "hang" | "exit N")."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: run, report through the pipe, leave without unwinding into the parent's code
        os.close(read_fd)
        code = 0
        c = Check()
        try:
            PROBES[name_](c)
        except Exception as e:  # a failed call the probe did not expect: counted as a wrong probe
            c.results.append((f"unexpected {type(e).__name__}", False, str(e)))
            code = 3
        os.write(write_fd, json.dumps(c.results).encode())
        os.close(write_fd)
        if PROBES.get("_leave_open"):
            C.CDLL(None).exit(0)  # exit while acquiring, without GCCloseLib: C exit(), the library's destructors run
        os._exit(code)
    os.close(write_fd)
    os.set_blocking(read_fd, False)
    data, deadline, status = b"", time.monotonic() + TIMEOUT_S, None
    while status is None:
        try:
            chunk = os.read(read_fd, 1 << 16)
            data += chunk
        except BlockingIOError:
            chunk = None
        done, st = os.waitpid(pid, os.WNOHANG)
        if done:
            status = st
        elif time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            os.close(read_fd)
            return [], "hang"
        elif not chunk:
            time.sleep(0.002)
    while True:
        try:
            chunk = os.read(read_fd, 1 << 16)
        except BlockingIOError:
            break
        if not chunk:
            break
        data += chunk
    os.close(read_fd)
    results = json.loads(data) if data else []
    if os.WIFSIGNALED(status):
        return results, f"crash {os.WTERMSIG(status)}"
    code = os.WEXITSTATUS(status)
    return results, "ok" if code == 0 else f"exit {code}"


def main():
    args = sys.argv[1:]
    if not args or not os.path.exists(args[0]):
        print("usage: producer_conformance.py PRODUCER.cti [--group scenarios|bad|handles] [--only NAME] [--list]", file=sys.stderr)
        return 2
    PROBES["_cti"] = args[0]
    names = [n for n, f in PROBES.items() if callable(f) and not n.startswith("_")]
    if "--only" in args:
        names = [args[args.index("--only") + 1]]
    if "--group" in args:
        group = args[args.index("--group") + 1]
        prefix = {"bad": "bad_", "handles": "handle_"}.get(group)
        names = [n for n in names if (n.startswith(prefix) if prefix else not n.startswith(("bad_", "handle_")))]
    if "--list" in args:
        print("\n".join(names))
        return 0
    total = right = crashes = hangs = 0
    failures = []
    for n in names:
        results, end = run_forked(n)
        if end == "hang":
            hangs += 1
            failures.append(f"{n}: HANG (no exit within {TIMEOUT_S} s)")
        elif end.startswith("crash"):
            crashes += 1
            failures.append(f"{n}: CRASH (signal {end.split()[1]}) after {len(results)} checks")
        elif end != "ok":
            failures.append(f"{n}: {end}")
        total += max(len(results), 1)
        right += sum(1 for _label, ok, _d in results if ok)
        failures += [f"{n}: {label}: {detail}" for label, ok, detail in results if not ok]
    for f in failures:
        print("FAIL " + f)
    print(f"{len(names)} probe processes, {total} probes, {right} right, {crashes} crashes, {hangs} hangs")
    return 0 if right == total and crashes == 0 and hangs == 0 and not failures else 1


if __name__ == "__main__":
    sys.exit(main())
