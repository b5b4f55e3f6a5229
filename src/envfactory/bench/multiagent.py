"""Benchmark of the multi-agent worlds: ``envfactory bench multiagent`` prints JSON.

Per world: in-process episodes of the strongest scripted seats (``step_us_p50``: one action,
``observe_us_p50``: one seat's view, ``episodes_per_s`` with the scripted policies' own
thinking included), and the same seats through the multi-seat rollout engine
(``engine_trajectories_per_s``: seat trajectories recorded per second, each seat's transcript
and records built). Task synthesis is left out of both.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from statistics import median
from typing import Any

from envfactory.contract.errors import WrongKind
from envfactory.multiagent.environment import MultiAgentEnvironment
from envfactory.registry import list_envs, make
from envfactory.rollout.engine import RolloutEngine
from envfactory.rollout.run import run_and_close
from envfactory.rollout.seating import ScriptedSeatPolicy
from envfactory.rollout.types import EngineConfig, TaskRef


def bench_world(env: MultiAgentEnvironment, episodes: int) -> dict[str, Any]:
    top = env.strengths[-1]
    steps: list[float] = []
    views: list[float] = []
    refs = [
        TaskRef(env.id, "train", env.difficulties[i % len(env.difficulties)], i)
        for i in range(episodes)
    ]
    tasks = [env.task(r.split, r.difficulty, r.index) for r in refs]  # synthesis is not timed
    ep = env.episode()
    t0 = time.perf_counter()
    for i, task in enumerate(tasks):
        ep.reset(task)
        players = {s: env.scripted(s, top, seed=i) for s in env.agents}
        for seat, p in players.items():
            p.start(task, seat)
        while not ep.done:
            for seat in ep.current_actors():
                a = time.perf_counter()
                obs = ep.observe(seat)
                b = time.perf_counter()
                action = players[seat].act(obs)
                c = time.perf_counter()
                ep.step(action, seat=seat)
                steps.append(time.perf_counter() - c)
                views.append(b - a)
                if ep.done:
                    break
    wall = time.perf_counter() - t0
    ep.close()
    t0 = time.perf_counter()
    seats = dict.fromkeys(env.agents, f"scripted:{top}")
    engine = RolloutEngine(
        ScriptedSeatPolicy(env, top), config=EngineConfig(concurrency=64), seats=seats
    )
    _, records = asyncio.run(run_and_close(engine, refs))
    engine_wall = time.perf_counter() - t0
    return {
        "env": env.id,
        "episodes": episodes,
        "steps_per_episode": round(len(steps) / episodes, 2),
        "step_us_p50": round(median(steps) * 1e6, 1),
        "observe_us_p50": round(median(views) * 1e6, 1),
        "episodes_per_s": round(episodes / wall, 1),
        "engine_trajectories_per_s": round(len(records) / engine_wall, 1),
    }


def bench_multiagent(envs: Sequence[str] = (), episodes: int = 100) -> list[dict[str, Any]]:
    """:func:`bench_world` for each world of ``envs`` (default: every world with seats)."""
    ids = list(envs) or [e for e in list_envs() if make(e).seats]
    rows = []
    for env_id in ids:
        env = make(env_id)
        if not isinstance(env, MultiAgentEnvironment):
            raise WrongKind(f"{env_id} is not a multi-agent world")
        rows.append(bench_world(env, episodes))
    return rows
