"""Event-loop lag: how late a timer fires while the loop is busy."""

from __future__ import annotations

import asyncio
import contextlib
from types import TracebackType

from envfactory.rollout.summary import percentile


class LagMonitor:
    """Samples the loop's lag every ``interval_s`` while in use (``async with``)."""

    def __init__(self, interval_s: float = 0.01) -> None:
        self.interval_s = interval_s
        self.samples: list[float] = []
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            t = loop.time()
            await asyncio.sleep(self.interval_s)
            self.samples.append(max(0.0, loop.time() - t - self.interval_s))

    def p(self, q: float) -> float | None:
        """The ``q``-th percentile of lag, in milliseconds."""
        v = percentile(self.samples, q)
        return None if v is None else round(v * 1000, 2)

    async def __aenter__(self) -> LagMonitor:
        self._task = asyncio.create_task(self._run())
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
