"""The actors. Both are asyncio actors: every call runs on the actor's one event loop, so
``max_concurrency`` (given explicitly when the actor is made) is how many calls it holds at
once, and environment work never races on an episode.

- :class:`RolloutWorker` runs groups through a rollout engine of its own and streams each
  group back the moment it is complete (a Ray streaming generator), so a worker that dies
  loses only the groups it had not finished.
- :class:`EnvHost` holds live episodes for policies that run elsewhere: open, step, evaluate,
  close, by episode key (only public task data crosses the boundary).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
from collections import defaultdict
from collections.abc import AsyncIterator, Callable
from typing import Any

import ray

from envfactory.contract.config import EpisodeConfig
from envfactory.contract.episode import Episode
from envfactory.harness.config import HarnessConfig
from envfactory.integrations.text import load_task
from envfactory.policies.base import RolloutPolicy
from envfactory.rollout.engine import RolloutEngine
from envfactory.rollout.types import EngineConfig, TaskRef
from envfactory.trajectory.record import EpisodeRecord

PolicyFactory = Callable[[], RolloutPolicy]
GroupResult = tuple[str, list[bytes]]
"""A finished group: its id and its episode records as JSON (cheaper to ship than objects)."""


class RolloutWorkerImpl:
    """The worker's logic (``RolloutWorker`` is this class as a Ray actor)."""

    def __init__(
        self,
        policy: PolicyFactory,
        harness: HarnessConfig | None = None,
        config: EngineConfig | None = None,
    ) -> None:
        self.policy = policy()
        self.harness = harness
        self.config = config or EngineConfig()

    def pid(self) -> int:
        return os.getpid()

    async def run(self, refs: list[TaskRef]) -> AsyncIterator[GroupResult]:
        """Run the groups of ``refs``; yield each group as soon as it has all its episodes
        (and, at the end, any group that could not be completed, with what it has)."""
        done: asyncio.Queue[GroupResult | None] = asyncio.Queue()
        pending: dict[str, list[EpisodeRecord]] = defaultdict(list)
        want = self.config.group_size

        def on_episode(rec: EpisodeRecord) -> None:
            recs = pending[rec.group_id]
            recs.append(rec)
            if sum(r.status != "infra_error" for r in recs) == want:
                done.put_nowait((rec.group_id, [r.model_dump_json().encode() for r in recs]))
                del pending[rec.group_id]

        engine = RolloutEngine(
            self.policy,
            harness=self.harness,
            config=self.config,
            on_episode=on_episode,
            keep_records=False,
        )

        async def drive() -> None:
            try:
                await engine.run(refs)
            finally:
                for gid, recs in list(pending.items()):
                    done.put_nowait((gid, [r.model_dump_json().encode() for r in recs]))
                pending.clear()
                done.put_nowait(None)

        job = asyncio.create_task(drive())
        try:
            while (item := await done.get()) is not None:
                yield item
            await job  # surfaces an engine failure
        finally:
            job.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await job
            await engine.aclose()


class EnvHostImpl:
    """Live episodes by key; observations and verdicts go back as JSON-ready dicts."""

    def __init__(self, max_steps: int = 60, max_episodes: int = 4096) -> None:
        self.config = EpisodeConfig(max_steps=max_steps)
        self.max_episodes = max_episodes
        self.episodes: dict[str, Episode] = {}
        self._ids = itertools.count()

    def pid(self) -> int:
        return os.getpid()

    async def open(self, task_id: str) -> dict[str, Any]:
        """Start the task at ``task_id``: its key, public task view and first observation."""
        if len(self.episodes) >= self.max_episodes:
            raise RuntimeError(f"the host holds {self.max_episodes} episodes already")
        env, task = load_task(task_id)
        episode = env.episode(self.config)
        first = episode.reset(task)
        key = f"{os.getpid()}-{next(self._ids)}"
        self.episodes[key] = episode
        return {
            "key": key,
            "task": task.public.model_dump(mode="json"),
            "observation": first.model_dump(mode="json"),
        }

    def _episode(self, key: str) -> Episode:
        try:
            return self.episodes[key]
        except KeyError:
            raise KeyError(f"no open episode {key!r}") from None

    async def step(self, key: str, action: Any) -> dict[str, Any]:
        """One action (a dict or JSON text); malformed ones come back as tool errors."""
        obs = self._episode(key).step(action)
        return obs.model_dump(mode="json")

    async def evaluate(self, key: str) -> dict[str, Any]:
        return self._episode(key).evaluate().model_dump(mode="json")

    async def close(self, key: str) -> None:
        episode = self.episodes.pop(key, None)
        if episode is not None:
            episode.close()

    async def live(self) -> int:
        return len(self.episodes)


RolloutWorker = ray.remote(RolloutWorkerImpl)
"""``RolloutWorker.options(max_concurrency=...).remote(policy_factory, harness, config)``."""

EnvHost = ray.remote(EnvHostImpl)
"""``EnvHost.options(max_concurrency=...).remote(max_steps=60)``; see :func:`start_env_host`."""


def start_env_host(
    max_concurrency: int = 64, max_steps: int = 60, max_episodes: int = 4096, num_cpus: float = 1
) -> Any:
    """An :class:`EnvHost` actor holding at most ``max_concurrency`` calls at once."""
    options = {"max_concurrency": max_concurrency, "num_cpus": num_cpus}
    return EnvHost.options(**options).remote(max_steps=max_steps, max_episodes=max_episodes)
