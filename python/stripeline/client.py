"""Subscribe to a stripeline publisher (pyzmq), optionally over CURVE."""
import os
from typing import Iterator, Optional

import zmq

from .series import Series, SeriesAssembler
from .wire import MalformedMessage, Rows, decode


def load_key_file(path):
    """A key file as streaming/curve.* writes it (zmq_curve_keypair format:
    `public-key = "..."` / `secret-key = "..."`) -> (public, secret or None) as bytes."""
    public = secret = None
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if "=" not in line or line.startswith("#"):
                continue
            k, v = (s.strip() for s in line.split("=", 1))
            v = v.strip('"').encode()
            if k == "public-key":
                public = v
            elif k == "secret-key":
                secret = v
    if public is None or len(public) != 40 or (secret is not None and len(secret) != 40):
        raise ValueError(f"{path}: no 40-character Z85 public-key (a stripeline/ZeroMQ CURVE key file was expected)")
    return public, secret


class Subscriber:
    """Connects a SUB socket; iterate for decoded messages. Malformed messages are
    skipped and counted in `malformed` (last reason in `last_error`)."""

    def __init__(self, endpoint: str, topics=("",), server_key: Optional[str] = None,
                 client_key: Optional[str] = None, context: Optional[zmq.Context] = None):
        self.sock = (context or zmq.Context.instance()).socket(zmq.SUB)
        self.sock.setsockopt(zmq.LINGER, 0)
        if server_key or client_key:
            if not (server_key and client_key):
                raise ValueError("CURVE needs both the server's public key file and this client's key file")
            server_public, _ = load_key_file(server_key)
            public, secret = load_key_file(client_key)
            if secret is None:
                raise ValueError(f"{client_key}: no secret-key (the client's own key file is needed)")
            self.sock.curve_serverkey, self.sock.curve_publickey, self.sock.curve_secretkey = server_public, public, secret
        self.sock.connect(endpoint)
        for t in topics:
            self.sock.setsockopt(zmq.SUBSCRIBE, t.encode())
        self.malformed = 0
        self.malformed_by_reason = {}
        self.last_error = None

    def close(self):
        self.sock.close(0)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def messages(self, timeout: float = 30.0) -> Iterator:
        """Decoded messages until `timeout` seconds pass without one (then TimeoutError)."""
        while True:
            if not self.sock.poll(int(timeout * 1000)):
                raise TimeoutError(f"no message for {timeout} s")
            frames = self.sock.recv_multipart(copy=True)
            try:
                msg = decode(frames)
            except MalformedMessage as e:
                self.count_malformed(e)
                continue
            yield msg

    def count_malformed(self, e: MalformedMessage):
        """Count a skipped message by its reason (decode, or the assembler's checks)."""
        self.malformed += 1
        self.malformed_by_reason[e.reason] = self.malformed_by_reason.get(e.reason, 0) + 1
        self.last_error = str(e)

    __iter__ = messages

    def receive_series(self, timeout: float = 30.0, max_rows: int = 0) -> Series:
        """Follow one series (the first one seen) to its series-end, or `max_rows` rows."""
        asm = SeriesAssembler()
        rows = 0
        for msg in self.messages(timeout):
            try:
                if asm.add(msg):
                    break
            except MalformedMessage as e:  # out of order, a second start, rows that do not fit the series
                self.count_malformed(e)
                continue
            rows += msg.rows if isinstance(msg, Rows) and msg.topic == "profile" else 0
            if max_rows and rows >= max_rows:
                break
        return asm.series(malformed=self.malformed, malformed_by_reason=dict(self.malformed_by_reason))


def receive_series(endpoint: str, timeout: float = 30.0, **kw) -> Series:
    """Connect, receive one series, disconnect."""
    with Subscriber(endpoint, **{k: v for k, v in kw.items() if k in ("server_key", "client_key")}) as sub:
        return sub.receive_series(timeout=timeout, max_rows=kw.get("max_rows", 0))
