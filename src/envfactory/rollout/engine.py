"""The async rollout engine: groups of G episodes per task, a concurrency limit, timeouts,
retries, over-sampling, checkpoints, and a resume that neither loses nor repeats an episode.

A world with seats plays every seat in each episode (``seats`` says who plays which: see
:mod:`envfactory.rollout.seating`) and leaves one trajectory per seat
(:mod:`envfactory.rollout.seat_play`); the group counts episodes, not trajectories.

A group wants ``group_size`` episodes. It starts ``group_size + oversample``, keeps the first
``group_size`` to finish and cancels the rest; an infrastructure failure is recorded (as
``infra_error``, unscored) and replaced, up to ``replace_failed`` times. With a store, each kept
episode is durable before the next is counted, so a run killed at any moment resumes from the
store: complete groups are skipped, checkpointed episodes continue, the rest run again.
"""

from __future__ import annotations

import asyncio
import math
import random
import time
from collections import defaultdict, deque
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from envfactory.contract.config import EpisodeConfig
from envfactory.contract.environment import Environment
from envfactory.contract.errors import EnvFactoryError
from envfactory.contract.tasks import Task
from envfactory.episode.seats import SeatedWorld, seated
from envfactory.gc_tuning import quiet_gc
from envfactory.harness.config import HarnessConfig
from envfactory.harness.context import Summariser
from envfactory.policies.base import RolloutPolicy
from envfactory.registry import make
from envfactory.rollout.executor import (
    AutoExecutor,
    DirectExecutor,
    EnvExecutor,
    Lane,
    SlicedExecutor,
    ThreadExecutor,
    WorkerExecutor,
)
from envfactory.rollout.lag import LagMonitor
from envfactory.rollout.play import Play, Sample
from envfactory.rollout.prefix import Prefix, play_prefix
from envfactory.rollout.seat_play import SeatPlay
from envfactory.rollout.seating import Seating, SeatSpec
from envfactory.rollout.summary import RolloutStats, RunSummary
from envfactory.rollout.types import EngineConfig, TaskRef, episode_id
from envfactory.trajectory.record import EpisodeRecord
from envfactory.trajectory.store import Entry, TrajectoryStore

Listener = Callable[[EpisodeRecord], None]


class RolloutEngine:
    """Runs groups of episodes of a policy over tasks; see the module docstring."""

    def __init__(
        self,
        policy: RolloutPolicy,
        *,
        harness: HarnessConfig | None = None,
        config: EngineConfig | None = None,
        store: TrajectoryStore | None = None,
        episode_config: EpisodeConfig | None = None,
        summariser: Summariser | None = None,
        on_episode: Listener | None = None,
        keep_records: bool = True,
        seats: Mapping[str, SeatSpec] | None = None,
    ) -> None:
        self.policy = policy
        self.seating = Seating(policy, seats)
        self.harness = harness or HarnessConfig()
        self.config = config or EngineConfig()
        self.store = store
        self.episode_config = self.harness.episode_config(episode_config)
        self.summariser = summariser
        self.on_episode = on_episode
        self.keep_records = keep_records
        if self.harness.tool_format == "grammar" and not getattr(policy, "decodes_grammar", False):
            raise EnvFactoryError(
                f"tool_format 'grammar' constrains a local model's decoding; {policy.info.name} "
                "cannot: use 'native' (a server's own tool-call parser) or 'text'"
            )
        self.model_info = policy.info.model_copy(update={"tool_format": self.harness.tool_format})
        self.rng = random.Random(self.config.seed)
        self.stopping = False
        self.live = self.peak_live = 0
        self.records: list[EpisodeRecord] = []
        self.stats = RolloutStats()
        self.checkpoint_errors = 0
        self._pool = ThreadPoolExecutor(self.config.env_threads, thread_name_prefix="env")
        self._executors: dict[str, EnvExecutor] = {}
        self._worker = WorkerExecutor()
        self._sliced = SlicedExecutor(self.config.slice_ms / 1000)
        self._synth = ThreadExecutor(self._pool)
        self._tools: dict[str, list[dict[str, Any]]] = {}
        self._slots: asyncio.Semaphore | None = None

    # -- shared by the episodes --------------------------------------------------------------

    def executor(self, env: Environment) -> EnvExecutor:
        """Where ``env``'s work runs: sliced on the loop for fast in-memory worlds, threads for
        kinds that may block (and for a user simulated by a model over HTTP)."""
        ex = self._executors.get(env.id)
        if ex is None:
            kind = self.config.env_executor
            user = getattr(getattr(self.episode_config, "user", None), "kind", "scripted")
            blocking = env.blocking or user != "scripted"
            if kind == "thread" or (kind == "auto" and blocking):
                ex = ThreadExecutor(self._pool)
            elif kind == "auto":
                ex = AutoExecutor(self._sliced, self._pool)
            elif kind == "worker":
                ex = self._worker
            elif kind == "sliced":
                ex = self._sliced
            else:
                ex = DirectExecutor()
            self._executors[env.id] = ex
        return ex

    def tool_schemas(self, env: Environment) -> list[dict[str, Any]]:
        tools = self._tools.get(env.id)
        if tools is None:
            tools = self._tools[env.id] = env.tools("openai")
        return tools

    def checkpoint(self, record: EpisodeRecord) -> None:
        """Save an in-flight episode to the store's checkpoints (a shortcut, never required)."""
        if self.store is None or not record.calls:
            return
        self.store.checkpoint(record).add_done_callback(self._checkpointed)

    def _checkpointed(self, fut: Any) -> None:
        if fut.exception() is not None:
            self.checkpoint_errors += 1

    def stop(self) -> None:
        """Stop gracefully: no new episodes; live ones checkpoint at their next turn."""
        self.stopping = True

    # -- running -----------------------------------------------------------------------------

    def run_sync(self, tasks: Iterable[TaskRef]) -> RunSummary:
        return asyncio.run(self.run(tasks))

    async def run(self, tasks: Iterable[TaskRef]) -> RunSummary:
        """Run every task's group to completion (or until :meth:`stop`)."""
        refs = list(tasks)
        if len({r.group_id for r in refs}) != len(refs):
            raise ValueError("a task appears twice; give repeated groups different tags")
        recorded: dict[str, list[Entry]] = defaultdict(list)
        partial: dict[str, list[EpisodeRecord]] = defaultdict(list)
        if self.store is not None:
            for entry in self.store.entries.values():
                recorded[entry.group_id].append(entry)
            for rec in self.store.partials.values():
                partial[rec.group_id].append(rec)
        cfg = self.config
        self._slots = asyncio.Semaphore(cfg.concurrency)
        per_group = cfg.group_size + cfg.oversample
        groups = asyncio.Semaphore(math.ceil(cfg.concurrency / per_group) + 1)
        every = max(1, 256 // per_group)  # episodes started per turn of the loop, at most
        t0 = time.perf_counter()
        with quiet_gc(cfg.gc_tuning):
            async with LagMonitor() as lag, asyncio.TaskGroup() as tg:
                launched = 0
                for i, ref in enumerate(refs):
                    if self.stopping:
                        break
                    launched += 1
                    await groups.acquire()
                    recs, parts = recorded.get(ref.group_id, []), partial.get(ref.group_id, [])
                    job = tg.create_task(self._group(ref, recs, parts))
                    job.add_done_callback(lambda _: groups.release())
                    if i % every == every - 1:
                        await asyncio.sleep(0)  # let the groups started so far begin
        self.stats.groups["incomplete"] += len(refs) - launched  # never started: a stop
        return self.stats.summary(
            time.perf_counter() - t0,
            peak_live=self.peak_live,
            loop_lag_ms_p99=lag.p(99),
            out=str(self.store.path) if self.store else None,
        )

    async def _group(
        self, ref: TaskRef, recorded: list[Entry], partial: list[EpisodeRecord]
    ) -> None:
        cfg, stats = self.config, self.stats
        k = cfg.group_size
        kept = len({e.sample_index for e in recorded if e.status != "infra_error"})
        if kept >= k:
            stats.groups["skipped"] += 1
            return
        try:
            env = make(ref.env_id)
            task = await self._synth.call(  # synthesis can take a while: never on the loop
                lambda: env.task(ref.split, ref.difficulty, ref.index), Lane()
            )
            world = seated(env)
            seats = None if world is None else self.seating.resolve(world, task)
            prefix = await self._prefix(env, task, world)
        except Exception as exc:  # no such environment, no task there, a bad seating or prefix
            stats.errors.append(f"{ref.group_id}: {type(exc).__name__}: {exc}")
            stats.groups["incomplete"] += 1
            return
        try:
            await self._samples(ref, env, task, world, seats, prefix, recorded, partial, kept)
        finally:
            if prefix is not None:  # forkable worlds keep their state in memory: closing is quick
                prefix.close()

    async def _prefix(
        self, env: Environment, task: Task, world: SeatedWorld | None
    ) -> Prefix | None:
        """The group's root when ``prefix_steps`` asks for one (never for a world with seats)."""
        steps = self.config.prefix_steps
        if not steps:
            return None
        if world is not None:
            raise EnvFactoryError("prefix_steps needs a single-agent world that can fork")
        return await self._synth.call(
            lambda: play_prefix(env, self.episode_config, task, steps), Lane()
        )

    async def _samples(
        self,
        ref: TaskRef,
        env: Environment,
        task: Task,
        world: SeatedWorld | None,
        seats: dict[str, RolloutPolicy] | None,
        prefix: Prefix | None,
        recorded: list[Entry],
        partial: list[EpisodeRecord],
        kept: int,
    ) -> None:
        """Run the group's samples until ``group_size`` are kept (``kept`` already are)."""
        cfg, stats = self.config, self.stats
        k = cfg.group_size
        used = {e.sample_index for e in recorded}  # an episode with seats: one entry a seat
        attempts = len(used)
        want, budget = k + cfg.oversample, k + cfg.oversample + cfg.replace_failed
        resumes = deque(sorted(partial, key=lambda r: r.sample_index))
        running: set[asyncio.Task[list[EpisodeRecord] | None]] = set()
        finished: asyncio.Queue[asyncio.Task[list[EpisodeRecord] | None]] = asyncio.Queue()
        index = 0

        def launch() -> None:
            nonlocal index
            while (
                not self.stopping
                and kept + len(running) < want
                and attempts + len(running) < budget
            ):
                resume = resumes.popleft() if resumes else None
                if resume is not None:
                    i = resume.sample_index
                else:
                    while index in used:
                        index += 1
                    i = index
                used.add(i)
                sample = Sample(ref.group_id, episode_id(ref.group_id, i), i, resume)
                job = asyncio.create_task(self._episode(sample, env, task, world, seats, prefix))
                job.add_done_callback(finished.put_nowait)
                running.add(job)

        launch()
        while running:
            job = await finished.get()
            running.discard(job)
            records = job.result()
            if records is None:
                continue  # paused by a stop
            failed = records[0].status == "infra_error"
            if kept >= k and not failed:
                stats.discarded += 1
            else:
                for rec in records:
                    await self._record(rec)
                attempts += 1
                kept += not failed
            if kept >= k:
                for job in running:
                    job.cancel()
                await asyncio.gather(*running, return_exceptions=True)
                stats.discarded += len(running)
                running.clear()
            else:
                launch()
        stats.groups["complete" if kept >= k else "incomplete"] += 1

    async def _episode(
        self,
        sample: Sample,
        env: Environment,
        task: Task,
        world: SeatedWorld | None,
        seats: dict[str, RolloutPolicy] | None,
        prefix: Prefix | None,
    ) -> list[EpisodeRecord] | None:
        """One episode's trajectories (one, or one per seat); None when paused."""
        assert self._slots is not None
        async with self._slots:
            self.live += 1
            self.peak_live = max(self.peak_live, self.live)
            try:
                if world is None or seats is None:
                    play = Play(self, sample, env, task, prefix)
                else:
                    play = SeatPlay(self, sample, env, world, task, seats)
                return None if await play.run() is None else play.trajectories()
            finally:
                self.live -= 1

    async def _record(self, rec: EpisodeRecord) -> None:
        if self.store is not None:
            await self.store.append(rec)
        self.stats.add(rec)
        if self.keep_records:
            self.records.append(rec)
        if self.on_episode is not None:
            self.on_episode(rec)

    async def aclose(self) -> None:
        """Release the policies' connections and the environment threads."""
        for policy in self.seating.policies():
            await policy.aclose()
        self._worker.shutdown()
        self._pool.shutdown(wait=False, cancel_futures=True)
