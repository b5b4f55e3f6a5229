"""A lean WebSocket load generator (RFC 6455 text frames on asyncio protocols).

A load generator must cost less than the servers it measures: a general client library spends
more CPU per message than a fast server does, and on a small machine the benchmark would then
measure the client. Here each connection is an ``asyncio.Protocol``: replies are parsed in
``data_received`` and the next call is written from the same callback (or after a pause), with
no coroutine per message. Frames are pre-encoded; pings are answered.
"""

from __future__ import annotations

import asyncio
import base64
import os
import random
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import cast
from urllib.parse import urlsplit


def encode_frame(payload: bytes, mask: bytes, opcode: int = 0x1) -> bytes:
    """A masked, final frame (clients must mask what they send)."""
    n = len(payload)
    if n < 126:
        header = struct.pack("!BB", 0x80 | opcode, 0x80 | n)
    elif n < 1 << 16:
        header = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, n)
    else:
        header = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, n)
    return header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def parse_frames(buf: bytearray) -> list[tuple[int, bool, bytes]]:
    """Complete frames at the head of ``buf`` as (opcode, final, payload); consumes them."""
    out = []
    while len(buf) >= 2:
        b0, b1 = buf[0], buf[1]
        n, at = b1 & 0x7F, 2
        if n == 126:
            if len(buf) < 4:
                break
            (n,), at = struct.unpack_from("!H", buf, 2), 4
        elif n == 127:
            if len(buf) < 10:
                break
            (n,), at = struct.unpack_from("!Q", buf, 2), 10
        if len(buf) < at + n:
            break
        out.append((b0 & 0x0F, bool(b0 & 0x80), bytes(buf[at : at + n])))
        del buf[: at + n]
    return out


@dataclass
class Tally:
    """Calls, errors and latencies (seconds) of one load phase."""

    latencies: list[float] = field(default_factory=list)
    errors: int = 0


class Conn(asyncio.Protocol):
    """One WebSocket connection driven by callbacks."""

    def __init__(self, host: str, path: str) -> None:
        self.host, self.path = host, path
        self.mask = os.urandom(4)
        self.buf = bytearray()
        self.parts: list[bytes] = []
        self.upgraded: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.on_message: Callable[[bytes], None] = lambda _: None
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass
        key = base64.b64encode(os.urandom(16)).decode()
        self.transport.write(
            f"GET {self.path} HTTP/1.1\r\nHost: {self.host}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
            "Sec-WebSocket-Version: 13\r\n\r\n".encode()
        )

    def data_received(self, data: bytes) -> None:
        self.buf += data
        if not self.upgraded.done():
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                return
            head = bytes(self.buf[:end])
            del self.buf[: end + 4]
            if b" 101 " not in head.split(b"\r\n", 1)[0]:
                self.upgraded.set_exception(ConnectionError(f"upgrade refused: {head[:200]!r}"))
                return
            self.upgraded.set_result(None)
        for opcode, final, payload in parse_frames(self.buf):
            if opcode == 0x9 and self.transport:  # ping
                self.transport.write(encode_frame(payload, self.mask, 0xA))
            elif opcode in (0x0, 0x1):
                self.parts.append(payload)
                if final:
                    message, self.parts = b"".join(self.parts), []
                    self.on_message(message)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.upgraded.done():
            self.upgraded.set_exception(exc or ConnectionError("connection lost"))

    def frame(self, text: str) -> bytes:
        return encode_frame(text.encode(), self.mask)

    def send(self, frame: bytes) -> None:
        assert self.transport is not None
        self.transport.write(frame)

    async def request(self, text: str) -> bytes:
        """Send one message and wait for the reply."""
        reply: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()

        def deliver(message: bytes) -> None:
            if not reply.done():
                reply.set_result(message)

        self.on_message = deliver
        self.send(self.frame(text))
        return await reply

    def close(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(encode_frame(struct.pack("!H", 1000), self.mask, 0x8))
            self.transport.close()


async def connect(url: str) -> Conn:
    parts = urlsplit(url)
    loop = asyncio.get_running_loop()
    _, conn = await loop.create_connection(
        lambda: Conn(parts.netloc, parts.path or "/"),
        parts.hostname or "127.0.0.1",
        parts.port or 80,
    )
    await conn.upgraded
    return conn


async def drive(
    conns: list[Conn],
    message: str,
    ok: Callable[[bytes], bool],
    warmup: float,
    seconds: float,
    think: float,
) -> tuple[Tally, float]:
    """Every connection calls, waits for the reply, pauses ``uniform(0, 2*think)`` seconds and
    calls again, until ``warmup + seconds`` have passed; only calls started after ``warmup``
    count. Returns the tally and the measured span in seconds."""
    loop = asyncio.get_running_loop()
    tally = Tally()
    start = time.perf_counter()
    measure_from, stop = start + warmup, start + warmup + seconds
    finished = loop.create_future()
    pending = len(conns)

    def run(conn: Conn) -> None:
        frame = conn.frame(message)
        sent_at = 0.0

        def fire() -> None:
            nonlocal sent_at
            sent_at = time.perf_counter()
            conn.send(frame)

        def on_message(reply: bytes) -> None:
            nonlocal pending
            now = time.perf_counter()
            if sent_at >= measure_from:
                tally.latencies.append(now - sent_at)
                tally.errors += not ok(reply)
            if now >= stop:
                pending -= 1
                if pending == 0 and not finished.done():
                    finished.set_result(None)
            elif think > 0:
                loop.call_later(random.uniform(0, 2 * think), fire)
            else:
                fire()

        conn.on_message = on_message
        if think > 0:
            loop.call_later(random.uniform(0, 2 * think), fire)
        else:
            fire()

    for conn in conns:
        run(conn)
    try:
        await asyncio.wait_for(finished, warmup + seconds + 30)
    except TimeoutError:
        tally.errors += pending  # connections that never answered their last call
    return tally, min(time.perf_counter(), stop) - measure_from
