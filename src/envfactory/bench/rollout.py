"""``envfactory bench rollout``: the rollout engine's capacity, throughput and loop lag.

An instant in-process policy (the oracle) drives the engine, so every number is the engine's
and the world's own cost, never a model's. Two runs per executor: *capacity* holds ``live``
episodes at once (10,000 by default) and *throughput* runs at a concurrency a model server
would batch (256). Each reports the peak number of live episodes, environment steps per second
through the engine, and the event loop's lag (how late a 10 ms timer fires). The yardstick is
the world alone: the same episodes, as many live at once, stepped in turn by a plain
synchronous loop (measured first, in the same process), so a run on a busy machine can still be
read (``vs_world_alone``).
"""

from __future__ import annotations

import asyncio
import gc
import os
import time

from pydantic import BaseModel, Field

from envfactory.contract.actions import Observation
from envfactory.contract.environment import Environment
from envfactory.contract.episode import Episode
from envfactory.contract.tasks import Task
from envfactory.policies.scripted import Oracle
from envfactory.policies.wrap import ScriptedPolicy
from envfactory.registry import make
from envfactory.rollout.engine import RolloutEngine
from envfactory.rollout.executor import ExecutorKind
from envfactory.rollout.lag import LagMonitor
from envfactory.rollout.types import EngineConfig, TaskRef


class RolloutRun(BaseModel):
    run: str
    executor: str
    concurrency: int
    episodes: int
    peak_live: int
    steps: int
    steps_per_s: float
    episodes_per_s: float
    loop_lag_ms_p50: float | None
    loop_lag_ms_p99: float | None
    loop_lag_ms_max: float | None
    reward_mean: float | None
    wall_s: float
    vs_world_alone: float = Field(description="steps/s over the world alone's, same machine")


class RolloutBench(BaseModel):
    env: str
    cpus: int
    load_avg_1m: float = Field(description="the machine's load when it ended (shared machines)")
    world_alone_steps_per_s: dict[str, float] = Field(
        description="by live count: the same episodes in a plain synchronous loop, no engine"
    )
    live: int
    live_peak: int
    steps_per_s: float
    loop_lag_ms_p99: float | None
    executor: str
    runs: list[RolloutRun]


def _world_alone(env: Environment, tasks: list[Task], live: int, episodes: int) -> float:
    """Steps per second of the oracle in a plain synchronous loop that holds ``live`` episodes
    at once and steps them in turn (as the engine does, so both pay the same cache misses)."""
    steps, started, t0 = 0, 0, time.perf_counter()
    slots: list[tuple[Episode, Oracle, Observation]] = []
    while started < episodes or slots:
        while started < episodes and len(slots) < live:
            task, ep, oracle = tasks[started % len(tasks)], env.episode(), Oracle()
            oracle.start(task, [])
            slots.append((ep, oracle, ep.reset(task)))
            started += 1
        going = []
        for ep, oracle, obs in slots:
            obs = ep.step(oracle.act(obs))
            ep.state_hash()
            steps += 1
            if obs.done:
                ep.evaluate()
                ep.close()
            else:
                going.append((ep, oracle, obs))
        slots = going
    return steps / (time.perf_counter() - t0)


async def _measure(
    run: str,
    refs: list[TaskRef],
    executor: ExecutorKind,
    concurrency: int,
    group: int,
    alone: float,
) -> RolloutRun:
    config = EngineConfig(group_size=group, concurrency=concurrency, env_executor=executor)
    engine = RolloutEngine(ScriptedPolicy("oracle"), config=config, keep_records=False)
    try:
        t0 = time.perf_counter()
        async with LagMonitor() as lag:
            summary = await engine.run(refs)
        wall = time.perf_counter() - t0
    finally:
        await engine.aclose()
    return RolloutRun(
        run=run,
        executor=executor,
        concurrency=concurrency,
        episodes=summary.episodes,
        peak_live=summary.peak_live,
        steps=summary.steps,
        steps_per_s=round(summary.steps / wall, 1),
        episodes_per_s=round(summary.episodes / wall, 1),
        loop_lag_ms_p50=lag.p(50),
        loop_lag_ms_p99=lag.p(99),
        loop_lag_ms_max=lag.p(100),
        reward_mean=summary.reward_mean,
        wall_s=round(wall, 2),
        vs_world_alone=round(summary.steps / wall / alone, 2),
    )


def bench_rollout(
    env_id: str = "retail",
    live: int = 10_000,
    throughput_concurrency: int = 256,
    executors: tuple[ExecutorKind, ...] = ("sliced", "worker", "thread"),
    tasks: int = 500,
) -> RolloutBench:
    """Capacity and throughput runs for each executor; the headline numbers are the first
    executor's (the engine's choice for database worlds)."""
    env = make(env_id)
    refs = [
        TaskRef(env_id, "train", env.difficulties[i % len(env.difficulties)], i)
        for i in range(tasks)
    ]
    made = [env.task(r.split, r.difficulty, r.index) for r in refs]  # synthesis: not here
    group = max(1, -(-live // tasks))
    plan = (("capacity", live), ("throughput", throughput_concurrency))
    alone = {c: _world_alone(env, made, c, min(group * tasks, max(2 * c, 2000))) for _, c in plan}
    runs = []
    for executor in executors:
        for run, concurrency in plan:
            gc.collect()
            runs.append(
                asyncio.run(_measure(run, refs, executor, concurrency, group, alone[concurrency]))
            )
    head = [r for r in runs if r.executor == executors[0]]
    return RolloutBench(
        env=env_id,
        cpus=os.cpu_count() or 1,
        load_avg_1m=round(os.getloadavg()[0], 2),
        world_alone_steps_per_s={str(c): round(v, 1) for c, v in alone.items()},
        live=live,
        live_peak=head[0].peak_live,
        steps_per_s=max(r.steps_per_s for r in head),
        loop_lag_ms_p99=max((r.loop_lag_ms_p99 or 0.0) for r in head),
        executor=executors[0],
        runs=runs,
    )
