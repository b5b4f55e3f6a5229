"""``envfactory bench``: the costs of the in-process episode API, as medians.

Each number is measured here, per call, on the default world size: reset (roll back the
episode's writes), one tool step, evaluate (verdict from the touched rows), the incremental
state hash beside a full canonical hash of the same state, task synthesis on one core, and the
memory of one live episode.
"""

from __future__ import annotations

import gc
import os
import time
from statistics import median

from pydantic import BaseModel

from envfactory.contract.actions import ToolCall
from envfactory.contract.errors import WrongKind
from envfactory.contract.tasks import SPLITS, Task
from envfactory.db.environment import DatabaseEnvironment
from envfactory.db.tasks import TaskFactory
from envfactory.registry import make
from envfactory.world.state import hash_rows


class WorldBench(BaseModel):
    env: str
    rows: int
    snapshot_kb: float
    reset_us_p50: float
    step_us_p50: float
    evaluate_us_p50: float
    state_hash_us_p50: float
    full_hash_us_p50: float
    tasks_per_s: float
    session_kb: float
    episodes_measured: int


def _us(samples: list[float]) -> float:
    return round(median(samples) * 1e6, 2)


def _rss_kb() -> float:
    try:
        with open(f"/proc/{os.getpid()}/statm") as f:
            pages = int(f.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / 1024
    except (OSError, ValueError):
        import resource

        return float(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def bench_world(env_id: str = "retail", episodes: int = 300, live: int = 1000) -> WorldBench:
    env = make(env_id)
    if not isinstance(env, DatabaseEnvironment):
        raise WrongKind(f"{env_id} is a {env.kind} world; this benchmark measures database worlds")
    tasks: list[Task] = [
        env.task(SPLITS[i % 3], env.difficulties[i % len(env.difficulties)], i // 15)
        for i in range(episodes)
    ]
    ep = env.episode()
    resets: list[float] = []
    steps: list[float] = []
    evals: list[float] = []
    hashes: list[float] = []
    fulls: list[float] = []
    clock = time.perf_counter
    for task in tasks:
        t0 = clock()
        ep.reset(task)
        resets.append(clock() - t0)
        for s in task.hidden.gold_plan:
            action = ToolCall(tool=s.tool, arguments=s.arguments)
            t0 = clock()
            ep.step(action)
            steps.append(clock() - t0)
        t0 = clock()
        ep.evaluate()
        evals.append(clock() - t0)
        t0 = clock()
        ep.store.state_hash()
        hashes.append(clock() - t0)
        if len(fulls) < 50:
            t0 = clock()
            hash_rows(ep.store.dump())
            fulls.append(clock() - t0)

    # Synthesis on one core: a fresh factory, pools warmed, then new tasks only.
    factory = TaskFactory(env.world, env.id)
    for split in SPLITS:
        for d in env.difficulties:
            factory.make(split, d, 0)
    made, t0 = 0, clock()
    while clock() - t0 < 2.0:
        for split in SPLITS:
            for d in env.difficulties:
                factory.make(split, d, 1 + made // 15)
                made += 1
    tasks_per_s = made / (clock() - t0)

    gc.collect()
    before = _rss_kb()
    held = []
    for i in range(live):
        e = env.episode()
        e.reset(tasks[i % len(tasks)])
        held.append(e)
    gc.collect()
    session_kb = (_rss_kb() - before) / live
    for e in held:
        e.close()

    return WorldBench(
        env=env_id,
        rows=env.world.row_count,
        snapshot_kb=round(len(env.world.base.snapshot) / 1024, 1),
        reset_us_p50=_us(resets),
        step_us_p50=_us(steps),
        evaluate_us_p50=_us(evals),
        state_hash_us_p50=_us(hashes),
        full_hash_us_p50=_us(fulls),
        tasks_per_s=round(tasks_per_s, 1),
        session_kb=round(session_kb, 1),
        episodes_measured=episodes,
    )
