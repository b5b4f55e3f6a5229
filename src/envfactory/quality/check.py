"""``envfactory check``: is every task solvable and every reward honest?

Runs the oracle and the baselines over tasks spread over every split (in proportion to its
share) and every difficulty, and counts what must be zero: unsolvable tasks, duplicates within
a cell, and tasks shared between splits. A world with seats is checked by its scripted seats
instead (:mod:`envfactory.quality.seat_check`).
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from collections.abc import Callable
from statistics import fmean
from typing import ClassVar

from pydantic import BaseModel

from envfactory.contract.environment import Environment
from envfactory.contract.errors import SynthesisError
from envfactory.contract.policy import Policy
from envfactory.contract.tasks import Task
from envfactory.episode.runner import run_episode
from envfactory.episode.seats import seated
from envfactory.policies.baselines import noisy_baseline, random_baseline
from envfactory.policies.scripted import NoOp, Oracle
from envfactory.quality.cells import sample_cells
from envfactory.quality.seat_check import SeatCheckReport, seat_check
from envfactory.tasks.seeds import SPLIT_SHARES

Progress = Callable[[int], None]


class DifficultyStats(BaseModel):
    tasks: int
    plan_steps_mean: float
    oracle_success_rate: float
    noisy_oracle_reward_mean: float


class CheckReport(BaseModel):
    SHOWN: ClassVar[tuple[str, ...]] = (
        "tasks",
        "oracle_success_rate",
        "noop_reward_mean",
        "random_reward_mean",
        "noisy_oracle_reward_mean",
        "unsolvable",
        "duplicate_tasks",
        "split_overlap",
        "seconds",
    )

    env: str
    tasks: int
    oracle_success_rate: float
    noop_reward_mean: float
    random_reward_mean: float
    noisy_oracle_reward_mean: float
    unsolvable: int
    duplicate_tasks: int
    split_overlap: int
    by_difficulty: dict[int, DifficultyStats]
    capacity: dict[str, list[int | None]]
    seconds: float
    passed: bool


def check(
    env: Environment, n: int = 500, seed: int = 0, progress: Progress | None = None
) -> CheckReport | SeatCheckReport:
    """Check ``env`` over ``n`` tasks (a world with seats: about ``n`` episodes of its
    scripted seats); see the module docstring."""
    world = seated(env)
    if world is not None:
        return seat_check(env, world, n, seed, progress)
    started = time.perf_counter()
    episode = env.episode()
    rewards: dict[str, list[float]] = defaultdict(list)
    per_diff: dict[int, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    cells: Counter[tuple[int, str]] = Counter()
    splits_of: dict[str, set[str]] = defaultdict(set)
    unsolvable = 0
    tasks = 0
    for split, difficulty, index in sample_cells(env, n):
        try:
            task: Task = env.task(split, difficulty, index)
        except SynthesisError:
            unsolvable += 1
            continue
        tasks += 1
        cells[(difficulty, task.hidden.fingerprint)] += 1
        splits_of[task.hidden.fingerprint].add(split)
        policies: dict[str, Policy] = {
            "oracle": Oracle(),
            "noop": NoOp(),
            "random": random_baseline(env, seed),
            "noisy_oracle": noisy_baseline(env, 0.8, seed),
        }
        for name, policy in policies.items():
            reward = run_episode(env, task, policy, episode).reward or 0.0
            rewards[name].append(reward)
            per_diff[difficulty][name].append(reward)
        if rewards["oracle"][-1] < 1.0:
            unsolvable += 1
        per_diff[difficulty]["steps"].append(len(task.hidden.gold_plan))
        if progress:
            progress(1)
    episode.close()
    oracle = [1.0 if r >= 1.0 else 0.0 for r in rewards["oracle"]]
    report = CheckReport(
        env=env.id,
        tasks=tasks,
        oracle_success_rate=_mean(oracle),
        noop_reward_mean=_mean(rewards["noop"]),
        random_reward_mean=_mean(rewards["random"]),
        noisy_oracle_reward_mean=_mean(rewards["noisy_oracle"]),
        unsolvable=unsolvable,
        duplicate_tasks=sum(c - 1 for c in cells.values()),
        split_overlap=sum(1 for s in splits_of.values() if len(s) > 1),
        by_difficulty={
            d: DifficultyStats(
                tasks=len(v["steps"]),
                plan_steps_mean=_mean(v["steps"]),
                oracle_success_rate=_mean([1.0 if r >= 1.0 else 0.0 for r in v["oracle"]]),
                noisy_oracle_reward_mean=_mean(v["noisy_oracle"]),
            )
            for d, v in sorted(per_diff.items())
        },
        capacity={s: [env.capacity(s, d) for d in env.difficulties] for s, _ in SPLIT_SHARES},
        seconds=round(time.perf_counter() - started, 3),
        passed=False,
    )
    report.passed = (
        report.oracle_success_rate == 1.0
        and report.noop_reward_mean <= 0.02
        and report.random_reward_mean <= 0.05
        and report.unsolvable == 0
        and report.duplicate_tasks == 0
        and report.split_overlap == 0
    )
    return report


def _mean(xs: list[float]) -> float:
    return round(fmean(xs), 6) if xs else 0.0
