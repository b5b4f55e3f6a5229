"""Curriculum vs fixed difficulty vs uniform sampling, with simulated learners.

Each seed draws one learner (see :mod:`envfactory.curriculum.learners`) and gives three copies
of it the same episode budget over the same simulated environments (levels 1..``levels``):

- ``curriculum``: environments by learnability, levels from each one's frontier window (the
  real :class:`~envfactory.curriculum.controller.Curriculum`, on an in-memory store);
- ``fixed``: environments uniformly, always one level: every level is tried and the one with
  the best mean final skill over the seeds is reported (a static difficulty tuned in
  hindsight, the strongest fixed baseline);
- ``uniform``: environments and levels uniformly.

Reported: each arm's final skill (mean over environments, in level units), and for the
curriculum the fraction of episodes whose environment's frontier the learner solved with a
true chance inside [``band_low``, ``band_high``].
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field

from pydantic import BaseModel, Field

from envfactory.curriculum.controller import Curriculum, CurriculumConfig
from envfactory.curriculum.learners import LearnerSpec, SimulatedLearner
from envfactory.tasks.seeds import stable_hash

ARMS = ("curriculum", "fixed", "uniform")


@dataclass(frozen=True)
class SimulationSettings:
    seeds: int = 20
    episodes: int = 4000
    envs: int = 4
    levels: int = 20
    band_low: float = 0.2
    band_high: float = 0.9
    trace_every: int = 50
    curriculum: CurriculumConfig = field(default_factory=CurriculumConfig)
    learner: LearnerSpec = field(default_factory=LearnerSpec)


class Spread(BaseModel):
    mean: float
    std: float
    min: float
    max: float

    @classmethod
    def of(cls, xs: list[float]) -> Spread:
        return cls(
            mean=round(statistics.fmean(xs), 4),
            std=round(statistics.pstdev(xs), 4),
            min=round(min(xs), 4),
            max=round(max(xs), 4),
        )


class SeedResult(BaseModel):
    seed: int
    final_skill: dict[str, float]
    frontier_in_band_fraction: float
    final_frontier: float = Field(description="mean frontier level over environments")
    skill_trace: dict[str, list[float]] = Field(description="mean skill every trace_every")
    frontier_trace: list[float] = Field(description="curriculum: mean frontier level")


class SimulationResult(BaseModel):
    """What ``envfactory curriculum simulate --json`` prints."""

    seeds: int
    episodes: int
    envs: int
    levels: int
    band: tuple[float, float]
    frontier_in_band_fraction: float
    final_skill_curriculum: float
    final_skill_fixed: float
    final_skill_uniform: float
    fixed_level: int = Field(description="the fixed arm's level: the best one in hindsight")
    spread: dict[str, Spread]
    curriculum_beats_fixed: int = Field(description="seeds where curriculum > fixed")
    curriculum_beats_uniform: int = Field(description="seeds where curriculum > uniform")
    config: dict[str, float | int | None]
    per_seed: list[SeedResult]


def _run_arm(
    arm: str, seed: int, s: SimulationSettings, fixed: int = 1
) -> tuple[SimulatedLearner, list[float], list[float], float]:
    """(learner at the end, skill trace, frontier trace, in-band fraction)."""
    envs = [f"sim{i}" for i in range(s.envs)]
    learner = SimulatedLearner(envs, random.Random(stable_hash("learner", seed)), s.learner)
    rng = random.Random(stable_hash(arm, seed))
    levels = list(range(1, s.levels + 1))
    cur = Curriculum(":memory:", s.curriculum, seed=seed) if arm == "curriculum" else None
    if cur is not None:
        for e in envs:
            cur.add(e, levels)
    pick: Callable[[], tuple[str, int]]
    if cur is not None:

        def pick() -> tuple[str, int]:
            d = cur.draw()
            return d.env_id, d.difficulty

    elif arm == "fixed":

        def pick() -> tuple[str, int]:
            return rng.choice(envs), fixed

    else:

        def pick() -> tuple[str, int]:
            return rng.choice(envs), rng.choice(levels)

    skills, frontiers, in_band = [], [], 0
    for i in range(s.episodes):
        env, level = pick()
        if cur is not None:
            p = learner.p(env, cur.frontier(env))
            in_band += s.band_low <= p <= s.band_high
        success = learner.attempt(env, level)
        if cur is not None:
            cur.record(f"{seed}:{i}", env, level, float(success))
        if i % s.trace_every == s.trace_every - 1:
            skills.append(round(learner.mean_skill(), 4))
            if cur is not None:
                frontiers.append(sum(cur.frontier(e) for e in envs) / len(envs))
    if cur is not None:
        cur.close()
    return learner, skills, frontiers, in_band / s.episodes


def simulate_seed(seed: int, s: SimulationSettings) -> SeedResult:
    """Every arm for one seed; ``final_skill["fixed@<level>"]`` for every fixed level."""
    final, traces, frontier, band = {}, {}, [0.0], 0.0
    for arm in ("curriculum", "uniform"):
        learner, skills, fr, b = _run_arm(arm, seed, s)
        final[arm] = round(learner.mean_skill(), 4)
        traces[arm] = skills
        if arm == "curriculum":
            frontier, band = fr, b
    for level in range(1, s.levels + 1):
        learner, skills, _, _ = _run_arm("fixed", seed, s, level)
        final[f"fixed@{level}"] = round(learner.mean_skill(), 4)
        traces[f"fixed@{level}"] = skills
    return SeedResult(
        seed=seed,
        final_skill=final,
        frontier_in_band_fraction=round(band, 4),
        final_frontier=frontier[-1],
        skill_trace=traces,
        frontier_trace=frontier,
    )


def _pick_fixed(results: list[SeedResult], levels: int) -> int:
    """The fixed level with the best mean final skill over the seeds."""
    return max(
        range(1, levels + 1),
        key=lambda lv: statistics.fmean(r.final_skill[f"fixed@{lv}"] for r in results),
    )


def simulate(
    settings: SimulationSettings | None = None, on_seed: Callable[[SeedResult], None] | None = None
) -> SimulationResult:
    """Run every seed; ``on_seed`` hears of each as it finishes (a progress bar)."""
    s = settings or SimulationSettings()
    results = []
    for seed in range(s.seeds):
        r = simulate_seed(seed, s)
        results.append(r)
        if on_seed is not None:
            on_seed(r)
    fixed = _pick_fixed(results, s.levels)
    for r in results:
        r.final_skill["fixed"] = r.final_skill[f"fixed@{fixed}"]
        r.skill_trace = {arm: r.skill_trace[arm] for arm in ("curriculum", "uniform")} | {
            "fixed": r.skill_trace[f"fixed@{fixed}"]
        }
    finals = {arm: [r.final_skill[arm] for r in results] for arm in ARMS}
    cur = finals["curriculum"]
    return SimulationResult(
        seeds=s.seeds,
        episodes=s.episodes,
        envs=s.envs,
        levels=s.levels,
        band=(s.band_low, s.band_high),
        fixed_level=fixed,
        frontier_in_band_fraction=round(
            statistics.fmean(r.frontier_in_band_fraction for r in results), 4
        ),
        final_skill_curriculum=round(statistics.fmean(cur), 4),
        final_skill_fixed=round(statistics.fmean(finals["fixed"]), 4),
        final_skill_uniform=round(statistics.fmean(finals["uniform"]), 4),
        spread={arm: Spread.of(xs) for arm, xs in finals.items()}
        | {"frontier_in_band_fraction": Spread.of([r.frontier_in_band_fraction for r in results])},
        curriculum_beats_fixed=sum(c > f for c, f in zip(cur, finals["fixed"], strict=True)),
        curriculum_beats_uniform=sum(c > u for c, u in zip(cur, finals["uniform"], strict=True)),
        config={
            k: v for k, v in vars(s.curriculum).items() if isinstance(v, (int, float)) or v is None
        },
        per_seed=results,
    )
