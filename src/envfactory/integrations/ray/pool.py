"""A pool of Ray rollout workers: groups are spread over the workers in chunks, each group's
episodes come back as soon as the group is complete, and a worker that dies is replaced while
its unfinished groups run again elsewhere. A group is accepted once, whole, so no episode is
ever recorded twice."""

from __future__ import annotations

import asyncio
import math
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from pydantic import BaseModel, Field

from envfactory.harness.config import HarnessConfig
from envfactory.integrations.ray.actors import PolicyFactory, RolloutWorker
from envfactory.rollout.types import EngineConfig, TaskRef
from envfactory.trajectory.record import EpisodeRecord
from envfactory.trajectory.store import TrajectoryStore

GroupListener = Callable[[str, list[EpisodeRecord]], None]


class PoolStats(BaseModel):
    groups: int = 0
    complete: int = Field(0, description="groups with all their episodes")
    incomplete: int = Field(0, description="groups that ran out of retries for their faults")
    episodes: int = 0
    reruns: int = Field(0, description="groups run again after their worker died")
    workers_lost: int = 0
    failed: list[str] = Field(default_factory=list, description="groups given up on")


class RayRolloutPool:
    """``workers`` rollout workers, each an actor with ``max_concurrency`` and an engine of its
    own (``config``: group size, concurrency, retries). Call :meth:`run` with task refs; Ray
    must be initialised (``ray.init``) first."""

    def __init__(
        self,
        policy: PolicyFactory,
        *,
        workers: int = 2,
        harness: HarnessConfig | None = None,
        config: EngineConfig | None = None,
        max_concurrency: int = 4,
        chunk: int | None = None,
        max_attempts: int = 3,
        num_cpus: float = 1.0,
    ) -> None:
        if workers < 1:
            raise ValueError("a pool needs at least one worker")
        self.policy = policy
        self.harness = harness
        self.config = config or EngineConfig()
        self.max_concurrency = max_concurrency
        self.chunk = chunk
        self.max_attempts = max_attempts
        self.num_cpus = num_cpus
        self.workers: list[Any] = [self._spawn() for _ in range(workers)]
        self.stats = PoolStats()

    def _spawn(self) -> Any:
        options = {"max_concurrency": self.max_concurrency, "num_cpus": self.num_cpus}
        return RolloutWorker.options(**options).remote(self.policy, self.harness, self.config)

    def pids(self) -> list[int]:
        import ray

        return [int(p) for p in ray.get([w.pid.remote() for w in self.workers])]

    def run(
        self,
        refs: Iterable[TaskRef],
        *,
        store: TrajectoryStore | None = None,
        on_group: GroupListener | None = None,
    ) -> list[EpisodeRecord]:
        """Run every group once; records in the order groups completed (also to ``store``)."""
        return asyncio.run(self.arun(refs, store=store, on_group=on_group))

    async def arun(
        self,
        refs: Iterable[TaskRef],
        *,
        store: TrajectoryStore | None = None,
        on_group: GroupListener | None = None,
    ) -> list[EpisodeRecord]:
        todo = list(refs)
        if len({r.group_id for r in todo}) != len(todo):
            raise ValueError("a task appears twice; give repeated groups different tags")
        size = self.chunk or max(1, math.ceil(len(todo) / (len(self.workers) * 4)))
        queue: deque[list[TaskRef]] = deque(todo[i : i + size] for i in range(0, len(todo), size))
        accepted: dict[str, list[EpisodeRecord]] = {}
        attempts: dict[str, int] = {}
        self.stats = stats = PoolStats(groups=len(todo))
        wake = asyncio.Event()
        busy = 0

        def accept(group_id: str, recs: list[EpisodeRecord]) -> None:
            if group_id in accepted:  # a group is taken once, whole
                return
            accepted[group_id] = recs
            kept = sum(r.status != "infra_error" for r in recs)
            stats.complete += kept >= self.config.group_size
            stats.incomplete += kept < self.config.group_size
            stats.episodes += len(recs)
            if store is not None:
                for rec in recs:
                    store.append_sync(rec)
            if on_group is not None:
                on_group(group_id, recs)

        async def slot(i: int) -> None:
            nonlocal busy
            while queue or busy:
                if not queue:
                    wake.clear()
                    await wake.wait()  # another slot may hand back a dead worker's groups
                    continue
                chunk = queue.popleft()
                busy += 1
                try:
                    await self._chunk(i, chunk, accept)
                except Exception as exc:  # the worker died (or failed): run the rest again
                    left = [r for r in chunk if r.group_id not in accepted]
                    again = []
                    for r in left:
                        attempts[r.group_id] = attempts.get(r.group_id, 1) + 1
                        if attempts[r.group_id] > self.max_attempts:
                            stats.failed.append(f"{r.group_id}: {type(exc).__name__}: {exc}")
                        else:
                            again.append(r)
                    stats.reruns += len(again)
                    if again:
                        queue.appendleft(again)
                    self._replace(i)
                finally:
                    busy -= 1
                    wake.set()

        await asyncio.gather(*(slot(i) for i in range(len(self.workers))))
        return [rec for recs in accepted.values() for rec in recs]

    async def _chunk(
        self, i: int, chunk: list[TaskRef], accept: Callable[[str, list[EpisodeRecord]], None]
    ) -> None:
        async for ref in self.workers[i].run.remote(chunk):
            group_id, recs = await ref
            accept(group_id, [EpisodeRecord.model_validate_json(r) for r in recs])

    def _replace(self, i: int) -> None:
        import ray

        self.stats.workers_lost += 1
        ray.kill(self.workers[i], no_restart=True)
        self.workers[i] = self._spawn()

    def shutdown(self) -> None:
        import ray

        for w in self.workers:
            ray.kill(w, no_restart=True)
        self.workers = []
