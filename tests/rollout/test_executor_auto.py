"""The engine's default executor for database worlds: sliced on the loop until a call is slow,
then a thread pool for that world's new episodes."""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from envfactory.rollout.executor import AutoExecutor, Lane, SlicedExecutor, WorkerExecutor


def test_auto_runs_fast_work_on_the_loop_and_moves_slow_worlds_to_the_pool() -> None:
    async def main() -> None:
        pool = ThreadPoolExecutor(2)
        auto = AutoExecutor(SlicedExecutor(), pool, slow_s=0.01)
        loop_thread = threading.get_ident()
        first = Lane()
        assert await auto.call(threading.get_ident, first) == loop_thread
        assert auto.kind == "sliced"
        await auto.call(lambda: time.sleep(0.03), first)  # slow: the world moves
        assert auto.kind == "thread"
        assert await auto.call(threading.get_ident, first) == loop_thread  # a lane stays put
        assert await auto.call(threading.get_ident, Lane()) != loop_thread
        pool.shutdown()

    asyncio.run(main())


def test_worker_executor_returns_results_and_errors_in_order() -> None:
    async def main() -> None:
        worker = WorkerExecutor()
        lane = Lane()
        results = await asyncio.gather(*(worker.call(lambda i=i: i * i, lane) for i in range(500)))
        assert results == [i * i for i in range(500)]
        try:
            await worker.call(lambda: 1 / 0, lane)
        except ZeroDivisionError:
            pass
        else:
            raise AssertionError("the error did not cross back to the loop")
        released = asyncio.Event()
        loop = asyncio.get_running_loop()
        worker.close(lane, lambda: loop.call_soon_threadsafe(released.set))
        await asyncio.wait_for(released.wait(), 5)
        worker.shutdown()

    asyncio.run(main())
