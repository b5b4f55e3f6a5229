"""``envfactory audit``: is an environment any good?

Scores each environment on what makes it worth training on: solvable (oracle success), honest
(no-op, random, spam and guess baselines near zero; no exploit policy earns more than a trace
and no agent input voids an episode), graded (gold plans lengthen and a noisy
oracle succeeds less as difficulty rises), deterministic, covering its tools, and diverse
(distinct plan shapes and instructions per 1,000 tasks).

A world with seats is audited by :func:`audit_world` through its own baselines instead: its
scripted seats of two strengths (the strong must beat the weak), every outcome confirmed by
the episode's own replay (a tampered outcome shows), and the same tasks when rebuilt.

The sampled checks (baselines, grading) are one-sided tests at a false-alarm rate of
``stats.ALPHA``: a world fails them on evidence, so a smaller ``-n`` does not fail a world a
larger one passes unless its sample shows the fault (docs/audit.md, "Statistics").
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from statistics import fmean

from pydantic import BaseModel, Field

from envfactory.contract.environment import Environment
from envfactory.contract.errors import SynthesisError
from envfactory.contract.policy import Policy
from envfactory.contract.tasks import Split, Task
from envfactory.episode.runner import run_episode
from envfactory.episode.seats import seated
from envfactory.policies.baselines import noisy_baseline, random_baseline
from envfactory.policies.scripted import Guess, NoOp, Oracle, SpamWrites, write_tools
from envfactory.quality.adversary import Attack, ExploitStats, attack, shortfalls
from envfactory.quality.cells import sample_cells
from envfactory.quality.seat_check import SeatCheckReport, seat_check
from envfactory.quality.stats import ALPHA, gain_power, p_above, p_gain, upper_bound
from envfactory.registry import build

Progress = Callable[[int], None]
BASELINE_MAX = 0.05
COVERAGE_MIN = 0.8
SHAPES_MIN = 50
INSTRUCTIONS_MIN = 500
NOISY_RUNS = 3
MAX_RISE = 0.1  # noisy-oracle success a level may gain over the one below
MIN_FALL = 0.1  # noisy-oracle success the top level must lose against the bottom
BASELINES = ("noop", "random", "spam", "guess")


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
    baseline_p: dict[str, float] = Field(
        default_factory=dict,
        description=f"per baseline: p-value of a mean reward above {BASELINE_MAX} (fails < ALPHA)",
    )
    baseline_bound: dict[str, float] = Field(
        default_factory=dict, description="per baseline: 95% upper bound on its mean reward"
    )
    noisy_oracle_rise_p: dict[int, float] = Field(
        default_factory=dict,
        description=f"per level above the lowest audited: p-value of a noisy-oracle gain of over "
        f"{MAX_RISE} on the level below",
    )
    noisy_oracle_fall_p: float | None = Field(
        None, description=f"p-value of the top level not {MIN_FALL} below the bottom"
    )
    noisy_oracle_fall_power: float | None = Field(
        None, description="chance the sample refuses a flat curve (top as good as the bottom)"
    )
    grading_alpha: float | None = Field(
        None, description="the level of each grading test (ALPHA shared by the levels' tests)"
    )
    empty_levels: list[int] = Field(
        default_factory=list, description="difficulties with no audited task"
    )
    curves: dict[str, dict[int, float]] = Field(
        default_factory=dict, description="success rate by difficulty, per policy"
    )
    plan_steps: dict[int, float] = Field(default_factory=dict)
    plan_lengths: list[int] = Field(default_factory=list, description="at the top difficulty")
    tool_uses: dict[str, int] = Field(default_factory=dict)


def _policies(env: Environment, seed: int) -> dict[str, list[Policy]]:
    """Each policy the audit runs on every task. The noisy oracle runs NOISY_RUNS times
    (independent slips): its success by difficulty is a graded curve, and each task's share
    of successful runs is finer evidence than one run (the grading test's unit is the task,
    since a task's runs are not independent)."""
    return {
        "oracle": [Oracle()],
        "noisy_oracle": [noisy_baseline(env, 0.8, seed + k) for k in range(NOISY_RUNS)],
        "noop": [NoOp()],
        "random": [random_baseline(env, seed)],
        "spam": [SpamWrites(seed=seed, writes=write_tools(env.tools("mcp")))],
        "guess": [Guess()],
    }


def _normalise(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


@dataclass(frozen=True)
class Grading:
    """The grading check's verdict and its evidence (the report's ``noisy_oracle_*`` keys)."""

    graded: bool = True
    problems: list[str] = field(default_factory=list)
    rise_p: dict[int, float] = field(default_factory=dict)
    fall_p: float | None = None
    fall_power: float | None = None
    alpha: float | None = None


def _graded(steps: dict[int, float], noisy: dict[int, list[float]]) -> Grading:
    """Plans lengthen (each level at least 95% of the one below, the top longer than the
    bottom) and the noisy oracle succeeds less as difficulty rises, over the levels with
    audited tasks. ``noisy`` holds, per level, each task's share of successful noisy runs
    (the runs of one task are not independent, so the task is the unit).

    Grading is refused on evidence: a level that gains over ``MAX_RISE`` on the level below,
    or a top level that is not ``MIN_FALL`` below the bottom, each at a level of ``ALPHA``
    shared by the tests (Bonferroni), so the check fails a graded world with probability at
    most about ``ALPHA`` (a z-test's approximation) whatever the sample's size. A small
    sample may lack the power to refuse a flat curve; ``fall_power`` says how much it had.
    A single level (a fixed task list such as tau2's) has nothing to grade."""
    levels = sorted(d for d, runs in noisy.items() if runs)
    if len(levels) < 2:
        return Grading()
    problems: list[str] = []
    lengths = [steps[d] for d in levels]
    if not (lengths[-1] > lengths[0] and all(b >= 0.95 * a for a, b in pairwise(lengths))):
        problems.append(f"plan length by difficulty does not rise: {lengths}")
    alpha = ALPHA / len(levels)  # the rises between adjacent levels and the fall
    rise_p = {b: round(p_gain(noisy[a], noisy[b], MAX_RISE), 6) for a, b in pairwise(levels)}
    bottom, top = noisy[levels[0]], noisy[levels[-1]]
    fall_p = round(p_gain(bottom, top, -MIN_FALL), 6)
    power = round(gain_power(fmean(bottom), len(bottom), len(top), -MIN_FALL, alpha), 4)
    why = [
        f"level {d} gains over {MAX_RISE} on the one below (p = {p:.2g})"
        for d, p in rise_p.items()
        if p < alpha
    ]
    if fall_p < alpha:
        why.append(f"the top is not {MIN_FALL} below the bottom (p = {fall_p:.2g})")
    if why:
        rates = [round(fmean(noisy[d]), 4) for d in levels]
        problems.append(
            f"noisy-oracle success does not fall with difficulty: {rates}: "
            f"{'; '.join(why)}; each test at {alpha:.2g}"
        )
    return Grading(not problems, problems, rise_p, fall_p, power, alpha)


def _rebuilt(env: Environment, cells: Sequence[tuple[Split, int, int]]) -> list[str]:
    """Tasks that differ when the environment is built afresh."""
    fresh = build(env.id)
    problems = []
    for split, d, i in cells:
        a, b = env.task(split, d, i), fresh.task(split, d, i)
        if a.public != b.public or a.hidden != b.hidden or a.initial_hash != b.initial_hash:
            problems.append(f"{a.task_id} differs when rebuilt")
    fresh_close = getattr(fresh, "close", None)
    if callable(fresh_close):
        fresh_close()
    return problems


def _deterministic(
    env: Environment, cells: Sequence[tuple[Split, int, int]]
) -> tuple[bool, list[str]]:
    """The same tasks from a freshly built environment, and the same final state from two
    oracle runs."""
    problems = _rebuilt(env, cells)
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
    return not problems, problems


def audit_world(
    env: Environment, n: int = 300, seed: int = 0, progress: Progress | None = None
) -> AuditReport | SeatCheckReport:
    """The audit of any world: :func:`audit`, or for a world with seats its seat check over
    ``n`` episodes and the same tasks when rebuilt (see the module docstring)."""
    world = seated(env)
    if world is None:
        return audit(env, n, seed, progress)
    report = seat_check(env, world, n, seed, progress)
    cells = sample_cells(env, max(1, n // 2))
    report.problems += _rebuilt(env, cells[:: max(1, len(cells) // 20)])
    report.passed = report.passed and not report.problems
    return report


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
    noisy: dict[int, list[float]] = defaultdict(list)  # per task: its noisy runs' success
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
        noisy[d].append(fmean(success["noisy_oracle"][d][-NOISY_RUNS:]))
        episode.close()
        if progress:
            progress(1)
    found = _attack(env, tasks, exploit_n if exploit_n is not None else max(10, n // 5))
    difficulties = env.difficulties
    top = difficulties[-1]
    room = {d: _room(env, d, k) for d in difficulties}
    top_tasks = _draw(env, ((top, i) for i in range(room[top])))
    cycle = [(i, difficulties[i % len(difficulties)]) for i in range(k)]
    spread = _draw(env, ((d, i) for i, d in cycle if i < room[d]))
    for t in top_tasks:
        tool_uses.update(env.plan_tools(t))
    if progress:
        progress(1)
    curves = {
        name: {d: round(fmean(v[d]), 4) for d in difficulties if v[d]}
        for name, v in success.items()
    }
    step_means = {d: round(fmean(steps[d]), 3) for d in difficulties if steps[d]}
    empty = [d for d in difficulties if not steps[d]]
    problems += [f"difficulty {d} has no tasks in any split" for d in _taskless(env, empty)]
    grading = _graded(step_means, noisy)
    problems += grading.problems
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
        difficulty_monotonic=grading.graded,
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
        baseline_p={b: round(p_above(rewards[b], BASELINE_MAX), 6) for b in BASELINES},
        baseline_bound={b: upper_bound(rewards[b]) for b in BASELINES},
        noisy_oracle_rise_p=grading.rise_p,
        noisy_oracle_fall_p=grading.fall_p,
        noisy_oracle_fall_power=grading.fall_power,
        grading_alpha=grading.alpha,
        empty_levels=empty,
    )
    report.problems = problems + _shortfalls(report) + shortfalls(found)
    report.passed = not report.problems
    return report


def _attack(env: Environment, tasks: list[Task], k: int) -> Attack:
    """The exploits over ``k`` of ``tasks`` spread evenly, the replay over ``k`` test tasks."""
    sample = tasks[:: max(1, len(tasks) // k)][:k] if k > 0 else []
    held_out = [t for t in tasks if t.public.split == "test"][:k]
    return attack(env, sample, held_out)


def _draw(env: Environment, cells: Iterable[tuple[int, int]]) -> list[Task]:
    """The train tasks at (difficulty, index) ``cells``, less those that cannot be made (the
    audited sample reports why)."""
    out = []
    for d, i in cells:
        try:
            out.append(env.task("train", d, i))
        except SynthesisError:
            continue
    return out


def _taskless(env: Environment, levels: Sequence[int]) -> list[int]:
    """Those of ``levels`` where no split has a task (an empty level: a defect); a level a
    small sample left out, or one whose tasks failed (reported as such), is not."""
    return [d for d in levels if all(env.capacity(s, d) == 0 for s in env.splits)]


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
    for name in BASELINES:
        value, p = getattr(r, f"{name}_reward_mean"), r.baseline_p.get(name, 1.0)
        if p < ALPHA:
            out.append(f"{name} baseline earns {value} > {BASELINE_MAX} (p = {p:.2g} < {ALPHA})")
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
