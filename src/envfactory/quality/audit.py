"""``envfactory audit``: is an environment any good?

Scores each environment on what makes it worth training on: solvable (oracle success), honest
(no-op, random, spam and guess baselines near zero; no exploit policy earns more than a trace
and no agent input voids an episode), graded (gold plans lengthen and a noisy
oracle succeeds less as difficulty rises), deterministic, covering its tools, and diverse
(distinct plan shapes and instructions per 1,000 tasks).
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from itertools import pairwise
from statistics import fmean

from pydantic import BaseModel, Field

from envfactory.env import Environment
from envfactory.episode.runner import run_episode
from envfactory.errors import SynthesisError
from envfactory.policies.scripted import (
    Guess,
    NoOp,
    Oracle,
    Policy,
    SpamWrites,
    write_tools,
)
from envfactory.quality.adversary import Attack, ExploitStats, attack, shortfalls
from envfactory.quality.check import sample_cells
from envfactory.registry import build
from envfactory.tasks.types import Split, Task

Progress = Callable[[int], None]
BASELINE_MAX = 0.05
COVERAGE_MIN = 0.8
SHAPES_MIN = 50
INSTRUCTIONS_MIN = 500
NOISY_RUNS = 3
MAX_RISE = 0.1  # noisy-oracle success a level may gain over the one below, at the least


class AuditReport(BaseModel):
    """One environment's audit. ``curves`` and ``plan_lengths`` feed the HTML report."""

    env: str
    kind: str
    tasks: int
    oracle_success_rate: float
    noop_reward_mean: float
    random_reward_mean: float
    spam_reward_mean: float
    guess_reward_mean: float
    noisy_oracle_success_rate: float
    difficulty_monotonic: bool
    deterministic: bool
    tool_coverage: float
    plan_shapes_per_1k: int
    instructions_distinct_per_1k: int
    exploits: dict[str, ExploitStats] = Field(
        default_factory=dict, description="per exploit policy: mean and max reward, episodes"
    )
    voided_by_agent: int = Field(0, description="exploit episodes agent input voided")
    passed: bool
    problems: list[str] = Field(default_factory=list)
    curves: dict[str, dict[int, float]] = Field(
        default_factory=dict, description="success rate by difficulty, per policy"
    )
    plan_steps: dict[int, float] = Field(default_factory=dict)
    plan_lengths: list[int] = Field(default_factory=list, description="at the top difficulty")
    tool_uses: dict[str, int] = Field(default_factory=dict)


def _policies(env: Environment, seed: int) -> dict[str, list[Policy]]:
    """Each policy the audit runs on every task. The noisy oracle runs NOISY_RUNS times
    (independent slips): its success by difficulty is a graded curve, and with one run per
    task 60 tasks a level leave a sampling error close to the 0.1 rise the check allows."""
    return {
        "oracle": [Oracle()],
        "noisy_oracle": [env.noisy_oracle(0.8, seed + k) for k in range(NOISY_RUNS)],
        "noop": [NoOp()],
        "random": [env.random_policy(seed)],
        "spam": [SpamWrites(seed=seed, writes=write_tools(env.tools("mcp")))],
        "guess": [Guess()],
    }


def _normalise(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


def _monotonic(
    steps: list[float], success: list[float], tries: list[int]
) -> tuple[bool, list[str]]:
    """Plans lengthen (each level at least 95% of the one below, the top longer than the
    bottom) and the noisy oracle succeeds less: the top below the bottom, and no level above
    the one below by more than its sampling error allows (two standard errors of the
    difference of the two levels' ``tries``, and at least 0.1), so a small audit's noise is
    not read as an ungraded knob. A single level (a fixed task list such as tau2's) has
    nothing to grade."""
    problems: list[str] = []
    if len(steps) < 2:
        return True, problems
    if not (steps[-1] > steps[0] and all(b >= 0.95 * a for a, b in pairwise(steps))):
        problems.append(f"plan length by difficulty does not rise: {steps}")
    levels = list(zip(success, tries, strict=True))
    rises = [b - a > _tolerance(a, m, b, n) for (a, m), (b, n) in pairwise(levels)]
    if not success[-1] < success[0] or any(rises):
        problems.append(f"noisy-oracle success does not fall with difficulty: {success}")
    return not problems, problems


def _tolerance(a: float, m: int, b: float, n: int) -> float:
    """How far success ``b`` (of ``n`` tries) may rise above ``a`` (of ``m``) by chance."""
    error = math.sqrt(a * (1 - a) / max(1, m) + b * (1 - b) / max(1, n))
    return max(MAX_RISE, 2 * error)


def _deterministic(
    env: Environment, cells: Sequence[tuple[Split, int, int]]
) -> tuple[bool, list[str]]:
    """The same tasks from a freshly built environment, and the same final state from two
    oracle runs."""
    fresh = build(env.id)
    problems = []
    for split, d, i in cells:
        a, b = env.task(split, d, i), fresh.task(split, d, i)
        if a.public != b.public or a.hidden != b.hidden or a.initial_hash != b.initial_hash:
            problems.append(f"{a.task_id} differs when rebuilt")
    for split, d, i in cells[:5]:
        task = env.task(split, d, i)
        hashes = set()
        for _ in range(2):
            ep = env.episode()
            run_episode(env, task, Oracle(), ep)
            hashes.add(ep.state_hash())
            ep.close()
        if len(hashes) != 1:
            problems.append(f"{task.task_id}: two oracle runs end in different states")
    fresh_close = getattr(fresh, "close", None)
    if callable(fresh_close):
        fresh_close()
    return not problems, problems


def audit(
    env: Environment,
    n: int = 300,
    seed: int = 0,
    progress: Progress | None = None,
    diversity: int = 1000,
    exploit_n: int | None = None,
) -> AuditReport:
    """Audit one environment over ``n`` tasks (and 1,000 more for diversity).

    The exploit policies attack ``exploit_n`` of those tasks (default ``n // 5``, at least
    10), spread over the sample; the train-plan replay attacks as many of its test tasks.

    ``diversity`` < 1,000 samples only the first ``diversity`` of those tasks, for speed at
    scale: plan shapes are then counted in that prefix (a lower bound on the count per 1,000,
    so the threshold stays sound) and distinct instructions are scaled to a rate per 1,000.
    An environment's ``audit_diversity`` attribute caps it the same way.
    """
    # A world whose tasks are costly to draw (each verified by real test runs) may cap its
    # diversity sample (``audit_diversity``); other worlds keep the 1,000 asked for.
    k = max(1, min(1000, diversity, getattr(env, "audit_diversity", 1000)))
    policies = _policies(env, seed)
    rewards: dict[str, list[float]] = defaultdict(list)
    success: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    steps: dict[int, list[int]] = defaultdict(list)
    tool_uses: Counter[str] = Counter()
    problems: list[str] = []
    cells = sample_cells(env, n)
    tasks: list[Task] = []
    for split, d, i in cells:
        try:
            task = env.task(split, d, i)
        except SynthesisError as exc:
            problems.append(str(exc))
            continue
        tasks.append(task)
        steps[d].append(len(task.hidden.gold_plan))
        tool_uses.update(env.plan_tools(task))
        episode = env.episode()
        for name, runs in policies.items():
            for policy in runs:
                reward = run_episode(env, task, policy, episode).reward or 0.0
                rewards[name].append(reward)
                success[name][d].append(1.0 if reward >= 1.0 else 0.0)
        episode.close()
        if progress:
            progress(1)
    found = _attack(env, tasks, exploit_n if exploit_n is not None else max(10, n // 5))
    difficulties = env.difficulties
    top = difficulties[-1]
    room = {d: _room(env, d, k) for d in difficulties}
    top_tasks = [env.task("train", top, i) for i in range(room[top])]
    cycle = [(i, difficulties[i % len(difficulties)]) for i in range(k)]
    spread = [env.task("train", d, i) for i, d in cycle if i < room[d]]
    for t in top_tasks:
        tool_uses.update(env.plan_tools(t))
    if progress:
        progress(1)
    curves = {
        name: {d: round(fmean(v[d]), 4) for d in difficulties if v[d]}
        for name, v in success.items()
    }
    step_means = {d: round(fmean(steps[d]), 3) for d in difficulties if steps[d]}
    monotonic, why = _monotonic(
        [step_means[d] for d in difficulties],
        [curves["noisy_oracle"][d] for d in difficulties],
        [len(success["noisy_oracle"][d]) for d in difficulties],
    )
    problems += why
    deterministic, why = _deterministic(env, cells[:: max(1, len(cells) // 20)])
    problems += why
    names = env.coverage_tools()
    coverage = sum(1 for t in names if tool_uses[t]) / len(names) if names else 0.0
    report = AuditReport(
        env=env.id,
        kind=env.kind,
        tasks=len(tasks),
        oracle_success_rate=_mean([1.0 if r >= 1.0 else 0.0 for r in rewards["oracle"]]),
        noop_reward_mean=_mean(rewards["noop"]),
        random_reward_mean=_mean(rewards["random"]),
        spam_reward_mean=_mean(rewards["spam"]),
        guess_reward_mean=_mean(rewards["guess"]),
        noisy_oracle_success_rate=_mean(
            [1.0 if r >= 1.0 else 0.0 for r in rewards["noisy_oracle"]]
        ),
        difficulty_monotonic=monotonic,
        deterministic=deterministic,
        tool_coverage=round(coverage, 4),
        plan_shapes_per_1k=_per_1k(
            len({env.plan_shape(t) for t in top_tasks}), len(top_tasks), k, env.finite
        ),
        instructions_distinct_per_1k=round(
            len({_normalise(t.public.instruction) for t in spread}) * 1000 / max(1, len(spread))
        ),
        passed=False,
        curves=curves,
        plan_steps=step_means,
        plan_lengths=[len(t.hidden.gold_plan) for t in top_tasks],
        tool_uses={t: tool_uses[t] for t in names},
        exploits=found.exploits,
        voided_by_agent=found.voided_by_agent,
    )
    report.problems = problems + _shortfalls(report) + shortfalls(found)
    report.passed = not report.problems
    return report


def _attack(env: Environment, tasks: list[Task], k: int) -> Attack:
    """The exploits over ``k`` of ``tasks`` spread evenly, the replay over ``k`` test tasks."""
    sample = tasks[:: max(1, len(tasks) // k)][:k] if k > 0 else []
    held_out = [t for t in tasks if t.public.split == "test"][:k]
    return attack(env, sample, held_out)


def _room(env: Environment, difficulty: int, k: int) -> int:
    """How many train tasks of ``difficulty`` the diversity sample may take: ``k``, or all
    a finite environment has when it has fewer."""
    size = env.capacity("train", difficulty) if env.finite else None
    return k if size is None else min(k, size)


def _per_1k(shapes: int, sampled: int, k: int, finite: bool) -> int:
    """Plan shapes per 1,000 tasks. A sample of a generator counts its shapes as they are (a
    lower bound when fewer than 1,000 were drawn); a finite environment with fewer than ``k``
    tasks was sampled whole, so its count is scaled to a rate."""
    return round(shapes * 1000 / sampled) if finite and 0 < sampled < k else shapes


def _shortfalls(r: AuditReport) -> list[str]:
    out = []
    if r.oracle_success_rate < 1.0:
        out.append(f"oracle success {r.oracle_success_rate} < 1.0")
    for name in ("noop", "random", "spam", "guess"):
        value = getattr(r, f"{name}_reward_mean")
        if value > BASELINE_MAX:
            out.append(f"{name} baseline earns {value} > {BASELINE_MAX}")
    if r.tool_coverage < COVERAGE_MIN:
        out.append(f"gold plans use {r.tool_coverage:.0%} of the tools < {COVERAGE_MIN:.0%}")
    if r.plan_shapes_per_1k < SHAPES_MIN:
        out.append(f"{r.plan_shapes_per_1k} plan shapes per 1k at the top < {SHAPES_MIN}")
    if r.instructions_distinct_per_1k < INSTRUCTIONS_MIN:
        out.append(
            f"{r.instructions_distinct_per_1k} distinct instructions per 1k < {INSTRUCTIONS_MIN}"
        )
    return out


def _mean(xs: list[float]) -> float:
    return round(fmean(xs), 6) if xs else 0.0
