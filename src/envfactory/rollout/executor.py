"""Where environment work runs, so that it never blocks the event loop.

Database worlds are fast (reset ~35 µs, step ~40 µs): handing each call to a thread pool costs
more than the call. Two ways keep them off the loop's critical path:

- :class:`SlicedExecutor` runs them on the loop, queued and executed in slices of a few
  milliseconds, after which the loop serves timers and I/O again; the loop is never held
  longer than one slice, however many episodes are live. The default for database worlds:
  no thread hand-offs and no contention for the GIL.
- :class:`WorkerExecutor` runs them in one dedicated thread, in batches, and hands the results
  back to the loop a batch at a time; SQLite releases the GIL while it works, so the world's
  queries run beside the engine's own Python on a second core (a second thread also gets a
  larger share of a machine other processes keep busy).

Worlds that may block (a sandbox, a user simulated by a model over HTTP) run in a thread pool
(:class:`ThreadExecutor`). :class:`AutoExecutor` starts on the sliced executor and moves an
environment to the pool for good the first time one of its calls is slow. ``envfactory bench
--rollout`` measures the choices.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Literal, Protocol, TypeVar

T = TypeVar("T")
ExecutorKind = Literal["auto", "worker", "sliced", "thread", "direct"]


class EnvExecutor(Protocol):
    @property
    def kind(self) -> str:
        """Where the work runs now: worker, sliced, thread or direct."""

    async def call(self, fn: Callable[[], T], lane: Lane) -> T:
        """Run ``fn`` (environment work) and return its result."""

    def close(self, lane: Lane, release: Callable[[], None]) -> None:
        """Run ``release`` once none of the lane's work can still be running."""


class Lane:
    """The environment work of one episode, one call at a time. A call still running in a
    thread when its episode was cancelled (a timeout) is waited for before the next call
    and before the episode is released."""

    __slots__ = ("last", "pooled")

    def __init__(self) -> None:
        self.last: Future[Any] | None = None
        self.pooled: bool | None = None  # AutoExecutor: where this lane's work goes

    async def settle(self) -> None:
        """Wait for a call left running by a cancellation."""
        if self.last is not None and not self.last.done():
            with contextlib.suppress(Exception):
                await asyncio.wrap_future(self.last)

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

    def close(self, lane: Lane, release: Callable[[], None]) -> None:
        release()


class SlicedExecutor:
    """Runs queued work on the loop in slices of at most ``slice_s`` seconds."""

    kind: str = "sliced"

    def __init__(self, slice_s: float = 0.004) -> None:
        self.slice_s = slice_s
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
        deadline = clock() + self.slice_s
        queue = self._queue
        while queue:
            fn, fut = queue.popleft()
            if fut.cancelled():
                continue
            try:
                fut.set_result(fn())
            except Exception as exc:
                fut.set_exception(exc)
            if clock() >= deadline:
                break
        if queue:
            loop.call_soon(self._drain, loop)
        else:
            self._scheduled = False

    def close(self, lane: Lane, release: Callable[[], None]) -> None:
        release()  # single-threaded: a lane's work has either run or been skipped


Job = tuple[Callable[[], Any], "asyncio.Future[Any] | None", "asyncio.AbstractEventLoop | None"]


class WorkerExecutor:
    """Runs work in one dedicated thread; results go back to the loop in batches of at most
    ``batch_s`` seconds of work (one wake-up of the loop per batch)."""

    kind: str = "worker"

    def __init__(self, batch_s: float = 0.002) -> None:
        self.batch_s = batch_s
        # A SimpleQueue: putting costs a fraction of a microsecond, and an empty one blocks
        # the worker without a lock of the loop's to wake it through.
        self._inbox: queue.SimpleQueue[Job | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    async def call(self, fn: Callable[[], T], lane: Lane) -> T:
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[T] = loop.create_future()
        self._submit((fn, fut, loop))
        return await fut

    def close(self, lane: Lane, release: Callable[[], None]) -> None:
        self._submit((release, None, None))  # after anything of the lane still queued

    def _submit(self, job: Job | None) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="env-worker", daemon=True)
            self._thread.start()
        self._inbox.put(job)

    def _run(self) -> None:
        inbox, clock = self._inbox, time.perf_counter
        while True:
            job = inbox.get()  # wait for work
            out: list[tuple[asyncio.Future[Any], bool, Any]] = []
            target: asyncio.AbstractEventLoop | None = None
            deadline = clock() + self.batch_s
            while True:  # a batch: what is queued, for at most batch_s
                if job is None:
                    self._deliver_to(target, out)
                    return
                fn, fut, loop = job
                if fut is None or not fut.cancelled():
                    if loop is not target and out:
                        self._deliver_to(target, out)
                        out = []
                    target = loop
                    try:
                        result: tuple[bool, Any] = (True, fn())
                    except Exception as exc:
                        result = (False, exc)
                    if fut is not None:
                        out.append((fut, *result))
                if clock() >= deadline:
                    break
                try:
                    job = inbox.get_nowait()
                except queue.Empty:
                    break
            self._deliver_to(target, out)

    @staticmethod
    def _deliver_to(
        loop: asyncio.AbstractEventLoop | None, out: list[tuple[asyncio.Future[Any], bool, Any]]
    ) -> None:
        if loop is not None and out:
            with contextlib.suppress(RuntimeError):  # a closed loop: nobody is waiting
                loop.call_soon_threadsafe(_deliver, out)

    def shutdown(self) -> None:
        if self._thread is not None:
            self._submit(None)
            self._thread.join()
            self._thread = None


def _deliver(out: list[tuple[asyncio.Future[Any], bool, Any]]) -> None:
    for fut, ok, value in out:
        if fut.done():
            continue
        if ok:
            fut.set_result(value)
        else:
            fut.set_exception(value)


class ThreadExecutor:
    """Runs work in a thread pool."""

    kind: str = "thread"

    def __init__(self, pool: ThreadPoolExecutor) -> None:
        self.pool = pool

    async def call(self, fn: Callable[[], T], lane: Lane) -> T:
        await lane.settle()
        fut = self.pool.submit(fn)
        lane.last = fut
        return await asyncio.wrap_future(fut)

    def close(self, lane: Lane, release: Callable[[], None]) -> None:
        lane.close(release)


class AutoExecutor:
    """On a fast executor (sliced on the loop, or the shared worker) while every call is fast;
    in the pool from the first call slower than ``slow_s`` (one slow world must not hold up the
    others queued behind it). An episode stays where its first call went, so its work never
    runs in two places."""

    def __init__(
        self,
        fast: SlicedExecutor | WorkerExecutor,
        pool: ThreadPoolExecutor,
        slow_s: float = 0.02,
    ) -> None:
        self.fast = fast
        self.thread = ThreadExecutor(pool)
        self.slow_s = slow_s
        self.slow = False

    @property
    def kind(self) -> str:
        return "thread" if self.slow else self.fast.kind

    async def call(self, fn: Callable[[], T], lane: Lane) -> T:
        if lane.pooled is None:
            lane.pooled = self.slow
        if lane.pooled:
            return await self.thread.call(fn, lane)

        def timed() -> T:
            t0 = time.perf_counter()
            try:
                return fn()
            finally:
                if time.perf_counter() - t0 > self.slow_s:
                    self.slow = True

        return await self.fast.call(timed, lane)

    def close(self, lane: Lane, release: Callable[[], None]) -> None:
        (self.thread if lane.pooled else self.fast).close(lane, release)
