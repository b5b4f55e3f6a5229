"""``envfactory bench --rollout``: the rollout engine's capacity, throughput and loop lag.

An instant in-process policy (the oracle) drives the engine, so every number is the engine's
and the world's own cost, never a model's. Two runs per executor: *capacity* holds
``live`` episodes at once (10,000 by default) and *throughput* runs at a concurrency a model
server would batch (256). Each reports the peak number of live episodes, environment steps per
second through the engine, and the event loop's lag (how late a 10 ms timer fires).
"""

from __future__ import annotations

import asyncio
import gc
import os
import time

from pydantic import BaseModel

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


class RolloutBench(BaseModel):
    env: str
    cpus: int
    load_avg_1m: float
    live: int
    live_peak: int
    steps_per_s: float
    loop_lag_ms_p99: float | None
    executor: str
    runs: list[RolloutRun]


async def _measure(
    run: str, refs: list[TaskRef], executor: ExecutorKind, concurrency: int, group: int
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
    )


def bench_rollout(
    env_id: str = "retail",
    live: int = 10_000,
    throughput_concurrency: int = 256,
    executors: tuple[ExecutorKind, ...] = ("worker", "sliced", "thread"),
    tasks: int = 500,
) -> RolloutBench:
    """Capacity and throughput runs for each executor; the headline numbers are the first
    executor's (the engine's choice for database worlds)."""
    env = make(env_id)
    refs = [
        TaskRef(env_id, "train", env.difficulties[i % len(env.difficulties)], i)
        for i in range(tasks)
    ]
    for r in refs:  # synthesis is measured elsewhere (envfactory bench)
        env.task(r.split, r.difficulty, r.index)
    group = max(1, -(-live // tasks))
    runs = []
    for executor in executors:
        gc.collect()
        runs.append(asyncio.run(_measure("capacity", refs, executor, live, group)))
        gc.collect()
        runs.append(
            asyncio.run(_measure("throughput", refs, executor, throughput_concurrency, group))
        )
    head = [r for r in runs if r.executor == executors[0]]
    return RolloutBench(
        env=env_id,
        cpus=os.cpu_count() or 1,
        load_avg_1m=round(os.getloadavg()[0], 2),
        live=live,
        live_peak=head[0].peak_live,
        steps_per_s=max(r.steps_per_s for r in head),
        loop_lag_ms_p99=max((r.loop_lag_ms_p99 or 0.0) for r in head),
        executor=executors[0],
        runs=runs,
    )
