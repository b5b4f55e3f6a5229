"""``envfactory check``: is every task solvable and every reward honest?

Runs the oracle and the baselines over tasks spread over every split (in proportion to its
share) and every difficulty, and counts what must be zero: unsolvable tasks, duplicates within
a cell, and tasks shared between splits.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from collections.abc import Callable
from statistics import fmean

from pydantic import BaseModel

from envfactory.contract.environment import Environment
from envfactory.contract.errors import SynthesisError
from envfactory.contract.policy import Policy
from envfactory.contract.tasks import Split, Task
from envfactory.episode.runner import run_episode
from envfactory.policies.baselines import noisy_baseline, random_baseline
from envfactory.policies.scripted import NoOp, Oracle
from envfactory.tasks.seeds import SPLIT_SHARES

Progress = Callable[[int], None]


class DifficultyStats(BaseModel):
    tasks: int
    plan_steps_mean: float
    oracle_success_rate: float
    noisy_oracle_reward_mean: float


class CheckReport(BaseModel):
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


def sample_cells(env: Environment, n: int) -> list[tuple[Split, int, int]]:
    """Up to ``n`` (split, difficulty, index) cells: the environment's splits by their share,
    difficulties in turn; an environment with a finite task list gives at most what it has."""
    shares = [(s, share) for s, share in SPLIT_SHARES if s in env.splits]
    total = sum(share for _, share in shares)
    cells: list[tuple[Split, int, int]] = []
    remaining = n
    for i, (split, share) in enumerate(shares):
        k = remaining if i == len(shares) - 1 else round(n * share / total)
        remaining -= k
        cells += _cells(env, split, k)
    return cells


def _cells(env: Environment, split: Split, k: int) -> list[tuple[Split, int, int]]:
    """``k`` cells of one split, round-robin over difficulties, skipping full ones."""
    sizes = {d: env.tasks_up_to(split, d, k) for d in env.difficulties}
    out: list[tuple[Split, int, int]] = []
    index = 0
    while len(out) < k:
        open_ = [d for d in env.difficulties if index < sizes[d]]
        if not open_:
            break
        for d in open_:
            if len(out) < k:
                out.append((split, d, index))
        index += 1
    return out


def check(
    env: Environment, n: int = 500, seed: int = 0, progress: Progress | None = None
) -> CheckReport:
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
