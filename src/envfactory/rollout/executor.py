"""Where environment work runs, so that it never blocks the event loop.

Database worlds are fast (reset ~25 µs, step ~40 µs): handing each call to a thread costs more
than the call. :class:`SlicedExecutor` runs them on the loop instead, queued and executed in
slices of a few milliseconds, after which the loop serves timers and I/O again; the loop is
never held longer than one slice, however many episodes are live. Worlds that may block (a
sandbox, a user simulated by a model over HTTP) run in a thread pool (:class:`ThreadExecutor`).
:class:`AutoExecutor` starts sliced and moves an environment to threads for good the first time
one of its calls is slow. ``envfactory bench --rollout`` measures the choices.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Literal, Protocol, TypeVar

T = TypeVar("T")
ExecutorKind = Literal["auto", "sliced", "thread", "direct"]


class EnvExecutor(Protocol):
    @property
    def kind(self) -> str:
        """Where the work runs now: direct, sliced or thread."""

    async def call(self, fn: Callable[[], T], lane: Lane) -> T:
        """Run ``fn`` (environment work) and return its result."""


class Lane:
    """The environment work of one episode: one call at a time; ``close`` waits for a call
    still running in a thread (a cancelled episode's last step) before releasing it."""

    __slots__ = ("last",)

    def __init__(self) -> None:
        self.last: Future[Any] | None = None

    def close(self, release: Callable[[], None]) -> None:
        if self.last is not None and not self.last.done():
            self.last.add_done_callback(lambda _: release())
        else:
            release()


class DirectExecutor:
    """Runs work inline, blocking the loop for its duration (for comparison)."""

    kind: str = "direct"

    async def call(self, fn: Callable[[], T], lane: Lane) -> T:
        return fn()


class SlicedExecutor:
    """Runs queued work on the loop in slices of at most ``slice_s`` seconds."""

    kind: str = "sliced"

    def __init__(self, slice_s: float = 0.004) -> None:
        self.slice_s = slice_s
        self.slowest_s = 0.0
        self._queue: deque[tuple[Callable[[], Any], asyncio.Future[Any]]] = deque()
        self._scheduled = False

    async def call(self, fn: Callable[[], T], lane: Lane) -> T:
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[T] = loop.create_future()
        self._queue.append((fn, fut))
        if not self._scheduled:
            self._scheduled = True
            loop.call_soon(self._drain, loop)
        return await fut

    def _drain(self, loop: asyncio.AbstractEventLoop) -> None:
        clock = time.perf_counter
        start = clock()
        deadline = start + self.slice_s
        queue = self._queue
        while queue:
            fn, fut = queue.popleft()
            if fut.cancelled():
                continue
            t0 = clock()
            try:
                fut.set_result(fn())
            except Exception as exc:
                fut.set_exception(exc)
            t1 = clock()
            self.slowest_s = max(self.slowest_s, t1 - t0)
            if t1 >= deadline:
                break
        if queue:
            loop.call_soon(self._drain, loop)
        else:
            self._scheduled = False


class ThreadExecutor:
    """Runs work in a thread pool."""

    kind: str = "thread"

    def __init__(self, pool: ThreadPoolExecutor) -> None:
        self.pool = pool

    async def call(self, fn: Callable[[], T], lane: Lane) -> T:
        fut = self.pool.submit(fn)
        lane.last = fut
        return await asyncio.wrap_future(fut)


class AutoExecutor:
    """Sliced while every call is fast; threads from the first call slower than ``slow_s``."""

    def __init__(self, pool: ThreadPoolExecutor, slice_s: float = 0.004, slow_s: float = 0.02):
        self.sliced = SlicedExecutor(slice_s)
        self.thread = ThreadExecutor(pool)
        self.slow_s = slow_s

    @property
    def kind(self) -> str:
        return "thread" if self.sliced.slowest_s > self.slow_s else "sliced"

    async def call(self, fn: Callable[[], T], lane: Lane) -> T:
        if self.sliced.slowest_s > self.slow_s:
            return await self.thread.call(fn, lane)
        return await self.sliced.call(fn, lane)


def make_executor(
    kind: ExecutorKind, pool: ThreadPoolExecutor, slice_s: float = 0.004
) -> EnvExecutor:
    if kind == "direct":
        return DirectExecutor()
    if kind == "sliced":
        return SlicedExecutor(slice_s)
    if kind == "thread":
        return ThreadExecutor(pool)
    return AutoExecutor(pool, slice_s)
