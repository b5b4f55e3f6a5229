"""What web worlds cost: reset, one browser action, and how many episodes run at once
(``envfactory bench web``).

``bench_web`` runs the scripted oracle (acting only through the browser) on tasks of one web
world: the reset (the database snapshot, a fresh session, the tab cleared and sent to the
site's home page, the first observation) and every browser action (the action, the page load
it causes, the observation), as medians and 95th percentiles. Then it holds ``held``
episodes at once (a tab each in the pool's capped browsers), each driven by the oracle in its
own thread, and reports, for each count, whether every episode still scored 1.0, the actions
per second of all of them together, the action latency and the browsers running.
``concurrent_episodes_held`` is the largest count that completed. Browsers are started before
the clock runs (the pool keeps them).
"""

from __future__ import annotations

import os
import threading
import time
from collections import defaultdict
from statistics import median, quantiles

from pydantic import BaseModel

from envfactory.bench.sections import Unavailable
from envfactory.contract.actions import ToolCall
from envfactory.contract.errors import WrongKind
from envfactory.contract.tasks import Task
from envfactory.policies.scripted import Oracle
from envfactory.registry import make
from envfactory.web import browser
from envfactory.web.environment import WebEnvironment
from envfactory.web.episode import WebEpisode


class HeldEpisodes(BaseModel):
    episodes: int
    completed: int = 0
    all_scored_one: bool
    actions: int
    wall_s: float
    actions_per_s: float
    step_ms_p50: float
    step_ms_p95: float
    memory_used_mb: float
    browsers: int  # Chromiums running for these episodes (the pool's cap)


class WebBench(BaseModel):
    env: str
    episodes: int
    reset_ms_p50: float
    reset_ms_p95: float
    step_ms_p50: float
    step_ms_p95: float
    step_ms_p50_by_action: dict[str, float]
    actions_per_episode_mean: float
    oracle_success: float
    held: list[HeldEpisodes]
    concurrent_episodes_held: int
    cpus: int
    load_average: tuple[float, float, float]


def _ms(samples: list[float], q: int = 50) -> float:
    if not samples:
        return 0.0
    if q == 50 or len(samples) < 2:
        return round(median(samples) * 1000, 2)
    return round(quantiles(samples, n=100)[q - 1] * 1000, 2)


def _memory_used_mb() -> float:
    info: dict[str, int] = {}
    with open("/proc/meminfo") as f:
        for line in f:
            key, value = line.split(":", 1)
            info[key] = int(value.split()[0])
    return (info["MemTotal"] - info["MemAvailable"]) / 1024


def _run(
    env: WebEnvironment, task: Task, episode: WebEpisode
) -> tuple[float, float, list[tuple[str, float]]]:
    """Reset and the oracle to the end: (reset seconds, reward, [(action, seconds)])."""
    t = time.perf_counter()
    obs = episode.reset(task)
    reset = time.perf_counter() - t
    oracle = Oracle()
    oracle.start(task, env.tools("openai"))
    timed: list[tuple[str, float]] = []
    while not obs.done:
        action = oracle.act(obs)
        t = time.perf_counter()
        obs = episode.step(action)
        if isinstance(action, ToolCall):
            timed.append((action.tool, time.perf_counter() - t))
    return reset, episode.evaluate().reward or 0.0, timed


def _tasks(env: WebEnvironment, n: int, offset: int = 0) -> list[Task]:
    levels = [d for d in env.difficulties if d >= 1] or env.difficulties
    return [env.task("train", levels[i % len(levels)], offset + i) for i in range(n)]


def _hold(env: WebEnvironment, k: int, rounds: int) -> HeldEpisodes:
    """``k`` episodes at once, each running ``rounds`` oracle episodes in its own thread."""
    episodes = [env.episode() for _ in range(k)]
    for ep in episodes:  # start the browsers before the clock
        ep.reset(env.task("train", 1, 0))
    before = _memory_used_mb()
    rewards: list[float] = []
    steps: list[float] = []
    lock = threading.Lock()

    def drive(i: int) -> None:
        for task in _tasks(env, rounds, offset=1000 + i * rounds):
            _, reward, timed = _run(env, task, episodes[i])
            with lock:
                rewards.append(reward)
                steps.extend(s for _, s in timed)

    t = time.perf_counter()
    threads = [threading.Thread(target=drive, args=(i,)) for i in range(k)]
    for th in threads:
        th.start()
    peak = before
    while any(th.is_alive() for th in threads):
        peak = max(peak, _memory_used_mb())
        time.sleep(0.2)
    wall = time.perf_counter() - t
    for ep in episodes:
        ep.close()
    return HeldEpisodes(
        episodes=k,
        completed=len(rewards),
        all_scored_one=len(rewards) == k * rounds and all(r == 1.0 for r in rewards),
        actions=len(steps),
        wall_s=round(wall, 2),
        actions_per_s=round(len(steps) / wall, 2) if wall else 0.0,
        step_ms_p50=_ms(steps),
        step_ms_p95=_ms(steps, 95),
        memory_used_mb=round(peak - before, 1),
        browsers=len(browser.POOL.browsers),
    )


def bench_web(
    env_id: str = "web-retail",
    episodes: int = 20,
    held: tuple[int, ...] = (1, 2, 4, 8),
    rounds: int = 2,
) -> WebBench:
    """Reset and action latency over ``episodes`` oracle episodes (train tasks cycling the
    difficulties from 1); then each count in ``held`` of episodes at once, ``rounds`` oracle
    episodes each."""
    why = browser.available()
    if why is not None:
        raise Unavailable(f"web worlds need a browser: {why}")
    env = make(env_id)
    if not isinstance(env, WebEnvironment):
        raise WrongKind(f"{env_id} is a {env.kind} world, not a web world")
    episode = env.episode()
    episode.reset(env.task("train", 1, 0))  # the browser starts before the clock
    resets: list[float] = []
    steps: list[float] = []
    by_action: dict[str, list[float]] = defaultdict(list)
    rewards: list[float] = []
    for task in _tasks(env, episodes):
        reset, reward, timed = _run(env, task, episode)
        resets.append(reset)
        rewards.append(reward)
        for name, s in timed:
            steps.append(s)
            by_action[name].append(s)
    episode.close()
    holds = [_hold(env, k, rounds) for k in held]
    ok = [h.episodes for h in holds if h.all_scored_one]
    return WebBench(
        env=env_id,
        episodes=episodes,
        reset_ms_p50=_ms(resets),
        reset_ms_p95=_ms(resets, 95),
        step_ms_p50=_ms(steps),
        step_ms_p95=_ms(steps, 95),
        step_ms_p50_by_action={k: _ms(v) for k, v in sorted(by_action.items())},
        actions_per_episode_mean=round(len(steps) / max(1, episodes), 1),
        oracle_success=round(sum(r == 1.0 for r in rewards) / max(1, len(rewards)), 4),
        held=holds,
        concurrent_episodes_held=max(ok, default=0),
        cpus=os.cpu_count() or 1,
        load_average=os.getloadavg(),
    )
