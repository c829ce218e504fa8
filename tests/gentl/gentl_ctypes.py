"""A GenTL consumer written from the EMVA GenTL 1.5 standard alone (ctypes).

It shares nothing with stripeline's own consumer (acquisition/gentl/): the
names and numeric values below are the standard's (GenTL v1.5, chapter 6),
typed here by hand; the node maps are read as GenApi XML (GenICam standard)
through the ports. Used by producer_conformance.py to test a producer (.cti).
"""
import ctypes as C
import io
import re
import struct
import xml.etree.ElementTree as ET
import zipfile

# GC_ERROR (GenTL 1.5, 6.2.1)
ERRORS = {
    0: "SUCCESS", -1001: "ERROR", -1002: "NOT_INITIALIZED", -1003: "NOT_IMPLEMENTED", -1004: "RESOURCE_IN_USE",
    -1005: "ACCESS_DENIED", -1006: "INVALID_HANDLE", -1007: "INVALID_ID", -1008: "NO_DATA", -1009: "INVALID_PARAMETER",
    -1010: "IO", -1011: "TIMEOUT", -1012: "ABORT", -1013: "INVALID_BUFFER", -1014: "NOT_AVAILABLE",
    -1015: "INVALID_ADDRESS", -1016: "BUFFER_TOO_SMALL", -1017: "INVALID_INDEX", -1018: "PARSING_CHUNK_DATA",
    -1019: "INVALID_VALUE", -1020: "RESOURCE_EXHAUSTED", -1021: "OUT_OF_MEMORY", -1022: "BUSY",
}
for _code, _name in ERRORS.items():
    globals()["GC_ERR_" + _name] = _code

GENTL_INFINITE = 0xFFFFFFFFFFFFFFFF

# INFO_DATATYPE
INFO_DATATYPE_STRING, INFO_DATATYPE_INT32, INFO_DATATYPE_UINT32, INFO_DATATYPE_UINT64 = 1, 5, 6, 8
INFO_DATATYPE_PTR, INFO_DATATYPE_BOOL8, INFO_DATATYPE_SIZET = 10, 11, 12

# TL_INFO_CMD
TL_INFO_ID, TL_INFO_VENDOR, TL_INFO_MODEL, TL_INFO_VERSION, TL_INFO_TLTYPE = 0, 1, 2, 3, 4
TL_INFO_NAME, TL_INFO_PATHNAME, TL_INFO_DISPLAYNAME, TL_INFO_CHAR_ENCODING = 5, 6, 7, 8
TL_INFO_GENTL_VER_MAJOR, TL_INFO_GENTL_VER_MINOR = 9, 10
# INTERFACE_INFO_CMD
INTERFACE_INFO_ID, INTERFACE_INFO_DISPLAYNAME, INTERFACE_INFO_TLTYPE = 0, 1, 2
# DEVICE_ACCESS_FLAGS / DEVICE_ACCESS_STATUS / DEVICE_INFO_CMD
DEVICE_ACCESS_READONLY, DEVICE_ACCESS_CONTROL, DEVICE_ACCESS_EXCLUSIVE = 2, 3, 4
DEVICE_ACCESS_STATUS_READWRITE, DEVICE_ACCESS_STATUS_OPEN_READWRITE, DEVICE_ACCESS_STATUS_OPEN_READONLY = 1, 5, 6
DEVICE_INFO_ID, DEVICE_INFO_VENDOR, DEVICE_INFO_MODEL, DEVICE_INFO_TLTYPE, DEVICE_INFO_DISPLAYNAME = 0, 1, 2, 3, 4
DEVICE_INFO_ACCESS_STATUS, DEVICE_INFO_USER_DEFINED_NAME, DEVICE_INFO_SERIAL_NUMBER, DEVICE_INFO_VERSION = 5, 6, 7, 8
# ACQ_QUEUE_TYPE
ACQ_QUEUE_INPUT_TO_OUTPUT, ACQ_QUEUE_OUTPUT_DISCARD, ACQ_QUEUE_ALL_TO_INPUT = 0, 1, 2
ACQ_QUEUE_UNQUEUED_TO_INPUT, ACQ_QUEUE_ALL_DISCARD = 3, 4
ACQ_START_FLAGS_DEFAULT, ACQ_STOP_FLAGS_DEFAULT, ACQ_STOP_FLAGS_KILL = 0, 0, 1
# STREAM_INFO_CMD
STREAM_INFO_ID, STREAM_INFO_NUM_DELIVERED, STREAM_INFO_NUM_UNDERRUN, STREAM_INFO_NUM_ANNOUNCED = 0, 1, 2, 3
STREAM_INFO_NUM_QUEUED, STREAM_INFO_NUM_AWAIT_DELIVERY, STREAM_INFO_NUM_STARTED, STREAM_INFO_PAYLOAD_SIZE = 4, 5, 6, 7
STREAM_INFO_IS_GRABBING, STREAM_INFO_DEFINES_PAYLOADSIZE = 8, 9
# BUFFER_INFO_CMD
BUFFER_INFO_BASE, BUFFER_INFO_SIZE, BUFFER_INFO_USER_PTR, BUFFER_INFO_TIMESTAMP, BUFFER_INFO_NEW_DATA = 0, 1, 2, 3, 4
BUFFER_INFO_IS_QUEUED, BUFFER_INFO_IS_ACQUIRING, BUFFER_INFO_IS_INCOMPLETE, BUFFER_INFO_TLTYPE = 5, 6, 7, 8
BUFFER_INFO_SIZE_FILLED, BUFFER_INFO_WIDTH, BUFFER_INFO_HEIGHT = 9, 10, 11
BUFFER_INFO_FRAMEID, BUFFER_INFO_IMAGEPRESENT, BUFFER_INFO_PIXELFORMAT = 16, 17, 20
BUFFER_INFO_DELIVERED_IMAGEHEIGHT = 22
BUFFER_INFO_DATA_SIZE, BUFFER_INFO_DATA_LARGER_THAN_BUFFER = 27, 29
# PORT_INFO_CMD
PORT_INFO_ID, PORT_INFO_MODULE, PORT_INFO_ACCESS_READ, PORT_INFO_ACCESS_WRITE = 0, 4, 7, 8
# EVENT_TYPE / EVENT_INFO_CMD / EVENT_DATA_INFO_CMD
EVENT_ERROR, EVENT_NEW_BUFFER = 0, 1
EVENT_EVENT_TYPE, EVENT_NUM_IN_QUEUE, EVENT_NUM_FIRED = 0, 1, 2
EVENT_DATA_ID, EVENT_DATA_VALUE = 0, 1

H = C.c_void_p
S = C.c_size_t
I32 = C.c_int32
U32 = C.c_uint32
U64 = C.c_uint64
P = C.c_void_p
PS = C.POINTER(C.c_size_t)
PH = C.POINTER(C.c_void_p)
PI32 = C.POINTER(C.c_int32)


class PORT_REGISTER_STACK_ENTRY(C.Structure):
    _pack_ = 1
    _fields_ = [("Address", C.c_uint64), ("pBuffer", C.c_void_p), ("Size", C.c_size_t)]


class EVENT_NEW_BUFFER_DATA(C.Structure):
    _pack_ = 1
    _fields_ = [("BufferHandle", C.c_void_p), ("pUserPointer", C.c_void_p)]


# The producer's calls (GenTL 1.5, 6.3): name -> argument types; each returns GC_ERROR.
CALLS = {
    "GCInitLib": [], "GCCloseLib": [], "GCGetLastError": [PI32, C.c_char_p, PS],
    "GCGetInfo": [I32, PI32, P, PS],
    "GCReadPort": [H, U64, P, PS], "GCWritePort": [H, U64, P, PS],
    "GCReadPortStacked": [H, P, PS], "GCWritePortStacked": [H, P, PS],
    "GCGetPortURL": [H, C.c_char_p, PS], "GCGetPortInfo": [H, I32, PI32, P, PS],
    "GCGetNumPortURLs": [H, C.POINTER(U32)], "GCGetPortURLInfo": [H, U32, I32, PI32, P, PS],
    "GCRegisterEvent": [H, I32, PH], "GCUnregisterEvent": [H, I32],
    "EventGetData": [H, P, PS, U64], "EventGetDataInfo": [H, P, S, I32, PI32, P, PS],
    "EventGetInfo": [H, I32, PI32, P, PS], "EventFlush": [H], "EventKill": [H],
    "TLOpen": [PH], "TLClose": [H], "TLGetInfo": [H, I32, PI32, P, PS], "TLGetNumInterfaces": [H, C.POINTER(U32)],
    "TLGetInterfaceID": [H, U32, C.c_char_p, PS], "TLGetInterfaceInfo": [H, C.c_char_p, I32, PI32, P, PS],
    "TLOpenInterface": [H, C.c_char_p, PH], "TLUpdateInterfaceList": [H, C.POINTER(C.c_uint8), U64],
    "IFClose": [H], "IFGetInfo": [H, I32, PI32, P, PS], "IFGetNumDevices": [H, C.POINTER(U32)],
    "IFGetDeviceID": [H, U32, C.c_char_p, PS], "IFUpdateDeviceList": [H, C.POINTER(C.c_uint8), U64],
    "IFGetDeviceInfo": [H, C.c_char_p, I32, PI32, P, PS], "IFOpenDevice": [H, C.c_char_p, I32, PH],
    "IFGetParentTL": [H, PH],
    "DevGetPort": [H, PH], "DevGetNumDataStreams": [H, C.POINTER(U32)], "DevGetDataStreamID": [H, U32, C.c_char_p, PS],
    "DevOpenDataStream": [H, C.c_char_p, PH], "DevGetInfo": [H, I32, PI32, P, PS], "DevClose": [H],
    "DevGetParentIF": [H, PH],
    "DSAnnounceBuffer": [H, P, S, P, PH], "DSAllocAndAnnounceBuffer": [H, S, P, PH], "DSFlushQueue": [H, I32],
    "DSStartAcquisition": [H, I32, U64], "DSStopAcquisition": [H, I32], "DSGetInfo": [H, I32, PI32, P, PS],
    "DSGetBufferID": [H, U32, PH], "DSClose": [H], "DSRevokeBuffer": [H, H, PH, PH], "DSQueueBuffer": [H, H],
    "DSGetBufferInfo": [H, H, I32, PI32, P, PS], "DSGetBufferChunkData": [H, H, P, PS], "DSGetParentDev": [H, PH],
    "DSGetNumBufferParts": [H, H, C.POINTER(U32)], "DSGetBufferPartInfo": [H, H, U32, I32, PI32, P, PS],
}


class GenTLError(Exception):
    def __init__(self, call, code):
        super().__init__(f"{call}: GC_ERR_{ERRORS.get(code, code)} ({code})")
        self.code = code


def name(code):
    return "GC_ERR_" + ERRORS.get(code, str(code))


class Producer:
    """The loaded .cti: every call as a method returning its GC_ERROR, plus checked helpers."""

    def __init__(self, path):
        self.lib = C.CDLL(path)
        for call, args in CALLS.items():
            f = getattr(self.lib, call)
            f.restype = I32
            f.argtypes = args
            setattr(self, call, f)

    def check(self, call, *args):
        rc = getattr(self, call)(*args)
        if rc != 0:
            raise GenTLError(call, rc)

    # --- info answers: a null buffer asks for the size (GenTL 1.5, 6.3.1) ---
    def info_raw(self, fn, *args):
        size = S(0)
        t = I32(0)
        rc = fn(*args, C.byref(t), None, C.byref(size))
        if rc != 0:
            raise GenTLError(fn.__name__, rc)
        buf = C.create_string_buffer(size.value)
        rc = fn(*args, C.byref(t), buf, C.byref(size))
        if rc != 0:
            raise GenTLError(fn.__name__, rc)
        return t.value, buf.raw[: size.value]

    def info(self, fn, *args):
        t, raw = self.info_raw(fn, *args)
        if t == INFO_DATATYPE_STRING:
            return raw.split(b"\0", 1)[0].decode()
        fmt = {INFO_DATATYPE_INT32: "<i", INFO_DATATYPE_UINT32: "<I", INFO_DATATYPE_UINT64: "<Q", INFO_DATATYPE_PTR: "<Q",
               INFO_DATATYPE_BOOL8: "<B", INFO_DATATYPE_SIZET: "<Q"}.get(t)
        if fmt is None:
            return raw
        v = struct.unpack(fmt, raw[: struct.calcsize(fmt)])[0]
        return bool(v) if t == INFO_DATATYPE_BOOL8 else v

    def id_string(self, fn, *args):
        size = S(0)
        self.check(fn.__name__, *args, None, C.byref(size))
        buf = C.create_string_buffer(size.value)
        self.check(fn.__name__, *args, buf, C.byref(size))
        return buf.value.decode()


class NodeMap:
    """A module's node map, read through its port: the URL, the (zipped) XML, and registers."""

    NS = "{http://www.genicam.org/GenApi/Version_1_1}"

    def __init__(self, p, port):
        self.p, self.port = p, port
        url = p.id_string(p.GCGetPortURL, port)
        m = re.match(r"local:(?:///)?([^;]+);([0-9A-Fa-f]+);([0-9A-Fa-f]+)", url)
        if not m:
            raise ValueError(f"unexpected URL {url}")
        file_name, address, length = m.group(1), int(m.group(2), 16), int(m.group(3), 16)
        data = self.read(address, length)
        if file_name.lower().endswith(".zip"):
            with zipfile.ZipFile(io.BytesIO(data)) as z:
                data = z.read([n for n in z.namelist() if n.lower().endswith(".xml")][0])
        self.root = ET.fromstring(data)
        self.nodes = {e.get("Name"): e for e in self.root if e.get("Name")}

    def read(self, address, length):
        buf = C.create_string_buffer(length)
        size = S(length)
        self.p.check("GCReadPort", self.port, address, buf, C.byref(size))
        return buf.raw[:length]

    def child(self, node, tag):
        e = node.find(self.NS + tag)
        return None if e is None else e.text.strip()

    def register(self, feature):
        """(address, length) of a feature's register (through pValue, or its own for a StringReg)."""
        node = self.nodes[feature]
        reg = self.nodes[self.child(node, "pValue")] if self.child(node, "pValue") else node
        return int(self.child(reg, "Address"), 0), int(self.child(reg, "Length"), 0)

    def write_raw(self, feature, value):
        address, length = self.register(feature)
        data = C.create_string_buffer(struct.pack("<q", value), length)
        size = S(length)
        return self.p.GCWritePort(self.port, address, data, C.byref(size))

    def set(self, feature, value):
        rc = self.write_raw(feature, value)
        if rc != 0:
            raise GenTLError(f"GCWritePort({feature})", rc)

    def get(self, feature):
        address, length = self.register(feature)
        raw = self.read(address, length)
        return struct.unpack("<d" if self.nodes[feature].tag == self.NS + "Float" else "<q", raw[:8])[0]

    def execute(self, command):
        node = self.nodes[command]
        self.set(command, int(self.child(node, "CommandValue") or 1))
