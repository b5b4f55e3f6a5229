"""A lean WebSocket load generator (RFC 6455 text frames on asyncio protocols).

A load generator must cost less than the servers it measures: a general client library spends
more CPU per message than a fast server does, and on a small machine the benchmark would then
measure the client. Here each connection is an ``asyncio.Protocol``: replies are parsed in
``data_received`` and the next call is written from the same callback (or after a pause), with
no coroutine per message. Frames are pre-encoded; pings are answered.

One process drives its connections from one core. :class:`ClientPool` spreads them over
several processes (each its own event loop, optionally pinned to given cores), started
together for each phase, so that the load is not capped by one client core.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import multiprocessing
import os
import random
import struct
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any, cast
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


def is_observation(reply: bytes) -> bool:
    """An OpenEnv observation message (not an error)."""
    return reply[:40].replace(b" ", b"").startswith(b'{"type":"observation"')


async def open_conns(url: str, seeds: Iterable[int]) -> list[Conn]:
    """One connection per seed, each reset with its seed (at most 100 handshakes at once)."""
    gate = asyncio.Semaphore(100)

    async def one(seed: int) -> Conn:
        async with gate:
            conn = await connect(url)
            reply = await conn.request(json.dumps({"type": "reset", "data": {"seed": seed}}))
            if not is_observation(reply):
                raise RuntimeError(f"reset failed: {reply[:300]!r}")
            return conn

    return list(await asyncio.gather(*(one(i) for i in seeds)))


def new_loop() -> asyncio.AbstractEventLoop:
    """uvloop's event loop when it is installed, asyncio's otherwise."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


def _client(pipe: Connection, url: str, first: int, count: int, cpus: list[int]) -> None:
    """A client process: open ``count`` connections (seeds from ``first``), then run each
    ``drive`` command the pool sends, from its start time, and send back the tally."""
    if cpus and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, set(cpus))
    loop = new_loop()
    asyncio.set_event_loop(loop)
    try:
        conns = loop.run_until_complete(open_conns(url, range(first, first + count)))
    except Exception as exc:  # the pool reports it
        pipe.send(("error", f"{type(exc).__name__}: {exc}"))
        return
    pipe.send(("ready", len(conns)))
    while True:
        command = pipe.recv()
        if command[0] != "drive":
            break
        _, message, warmup, seconds, think, start_at = command
        time.sleep(max(0.0, start_at - time.time()))
        tally, span = loop.run_until_complete(
            drive(conns, message, is_observation, warmup, seconds, think)
        )
        pipe.send(("done", tally.latencies, tally.errors, span))
    for conn in conns:
        conn.close()
    loop.run_until_complete(asyncio.sleep(0.05))  # let the close frames go out
    loop.close()


class ClientPool:
    """``concurrent`` connections to ``url`` spread over ``procs`` processes (pinned to
    ``cpus`` when given). Use as a context manager; :meth:`drive` runs one phase on all."""

    def __init__(self, url: str, concurrent: int, procs: int, cpus: Iterable[int] = ()) -> None:
        self.procs = max(1, min(procs, concurrent))
        self.cpus = sorted(cpus)
        ctx = multiprocessing.get_context("spawn")  # the parent may run threads
        self._pipes: list[Connection] = []
        self._workers: list[Any] = []
        share, extra = divmod(concurrent, self.procs)
        first = 0
        for i in range(self.procs):
            count = share + (i < extra)
            ours, theirs = ctx.Pipe()
            worker = ctx.Process(
                target=_client, args=(theirs, url, first, count, self.cpus), daemon=True
            )
            worker.start()
            theirs.close()
            self._pipes.append(ours)
            self._workers.append(worker)
            first += count
        try:
            for pipe in self._pipes:
                status, detail = self._recv(pipe, 120)
                if status != "ready":
                    raise RuntimeError(f"a load client failed: {detail}")
        except BaseException:
            self.close()
            raise

    @staticmethod
    def _recv(pipe: Connection, timeout: float) -> tuple[Any, ...]:
        if not pipe.poll(timeout):
            raise RuntimeError(f"a load client did not answer in {timeout:.0f} s")
        reply: tuple[Any, ...] = pipe.recv()
        return reply

    def drive(
        self, message: str, warmup: float, seconds: float, think: float
    ) -> tuple[Tally, float]:
        """One phase (as :func:`drive`) on every process at once: the merged tally and the
        mean measured span."""
        start_at = time.time() + 0.2
        for pipe in self._pipes:
            pipe.send(("drive", message, warmup, seconds, think, start_at))
        tally, spans = Tally(), []
        for pipe in self._pipes:
            status, *rest = self._recv(pipe, warmup + seconds + 60)
            if status != "done":
                raise RuntimeError(f"a load client failed: {rest}")
            latencies, errors, span = rest
            tally.latencies += latencies
            tally.errors += errors
            spans.append(span)
        return tally, sum(spans) / len(spans)

    def close(self) -> None:
        for pipe in self._pipes:
            with contextlib.suppress(OSError):
                pipe.send(("close",))
        for worker in self._workers:
            worker.join(timeout=10)
            if worker.is_alive():
                worker.terminate()
                worker.join(timeout=5)
        for pipe in self._pipes:
            pipe.close()
        self._pipes, self._workers = [], []

    def __enter__(self) -> ClientPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
