"""``envfactory bench ray``: episodes per second through a Ray pool of 1 vs 2 workers.

Scripted oracle episodes on a local cluster (one CPU per worker): the environment work, the
engine, and shipping every record back to the driver are all in the measure."""

from __future__ import annotations

import asyncio
import functools
import os
import statistics
import time

from pydantic import BaseModel, Field

from envfactory.policies.wrap import ScriptedPolicy
from envfactory.rollout.engine import RolloutEngine
from envfactory.rollout.types import EngineConfig, TaskRef


class WorkerRun(BaseModel):
    workers: int
    episodes_per_s: float = Field(description="median over the runs")
    runs_s: list[float]


class RayBench(BaseModel):
    env: str
    groups: int
    group_size: int
    episodes: int = Field(description="per run")
    cpus: int
    in_process_episodes_per_s: float = Field(
        description="the same episodes through one RolloutEngine in this process (median)"
    )
    runs: list[WorkerRun]
    speedup: float = Field(description="episodes/s of the most workers over one worker")
    load_avg: float = Field(description="the machine's 1-minute load average at the end")


def bench_ray(
    env_id: str = "retail",
    *,
    groups: int = 300,
    group_size: int = 4,
    worker_counts: tuple[int, ...] = (1, 2),
    repeats: int = 3,
) -> RayBench:
    import ray

    from envfactory.integrations.ray.cluster import init_local
    from envfactory.integrations.ray.pool import RayRolloutPool

    cpus = max(worker_counts)
    local = []
    for r in range(repeats):
        engine = RolloutEngine(ScriptedPolicy("oracle"), config=EngineConfig(group_size=group_size))
        refs = [TaskRef(env_id, "train", 1, i, f"local{r}") for i in range(groups)]
        t0 = time.perf_counter()
        engine.run_sync(refs)
        local.append(time.perf_counter() - t0)
        asyncio.run(engine.aclose())
    init_local(num_cpus=cpus)
    runs = []
    try:
        for n in worker_counts:
            pool = RayRolloutPool(
                functools.partial(ScriptedPolicy, "oracle"),
                workers=n,
                config=EngineConfig(group_size=group_size, concurrency=64),
                max_concurrency=2,
            )
            pool.pids()  # the workers are up before the clock starts
            warm = [TaskRef(env_id, "train", 1, i, "warm") for i in range(4 * n)]
            pool.run(warm)
            times = []
            for r in range(repeats):
                refs = [TaskRef(env_id, "train", 1, i, f"run{r}") for i in range(groups)]
                t0 = time.perf_counter()
                records = pool.run(refs)
                times.append(time.perf_counter() - t0)
                want = groups * group_size
                if len(records) != want:
                    raise RuntimeError(f"{len(records)} of {want} episodes came back")
            pool.shutdown()
            eps = groups * group_size / statistics.median(times)
            runs.append(WorkerRun(workers=n, episodes_per_s=round(eps, 1), runs_s=times))
    finally:
        ray.shutdown()
    return RayBench(
        env=env_id,
        groups=groups,
        group_size=group_size,
        episodes=groups * group_size,
        cpus=cpus,
        in_process_episodes_per_s=round(groups * group_size / statistics.median(local), 1),
        runs=runs,
        speedup=round(runs[-1].episodes_per_s / runs[0].episodes_per_s, 2),
        load_avg=round(os.getloadavg()[0], 2),
    )
