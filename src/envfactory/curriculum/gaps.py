"""Where an agent fails, by skill, and tasks aimed at those gaps.

A task exercises **skills**: its goal templates (``goal:hotel/book_room``), the write tools
of its gold plan (``tool:hotel/cancel_reservation``), the rules those tools enforce
(``rule:hotel/no_double_booking``), the shape of its plan (``steps:4-6``) and the difficulty
knobs it turns (``indirection:2``, ``distractors:1``, ``held_back``: the user keeps a
reference's facts to itself). :func:`find_gaps` reads scored episodes (a trajectory store),
regenerates each task from its id, and gives every skill its success rate with a 95% Wilson
interval; the weakest skills inside the **learnable band** (some episode of them succeeded, not
all) are the gaps. A skill no episode has ever passed is out of reach at the levels played,
and is left to the curriculum's frontier rather than chased.

:class:`GapTargeter` steers the curriculum's sampler toward the gaps: where the curriculum
picks a world and a level, it draws a few candidate tasks of that cell and takes one with
probability proportional to ``1 + strength * (sum of the weakness of its gap skills)``, over
the ``focus`` weakest gaps, so plain tasks still come up, and tasks exercising the weakest
skills come up more.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path

from pydantic import BaseModel, Field

from envfactory.contract.environment import Environment
from envfactory.contract.tasks import Split, Task
from envfactory.quality.stats import wilson
from envfactory.registry import make
from envfactory.rollout.types import TaskRef
from envfactory.tasks.seeds import stable_hash
from envfactory.trajectory.record import EpisodeRecord
from envfactory.trajectory.store import EPISODES, read_records

KINDS = ("goal", "tool", "rule", "steps", "indirection", "distractors", "held_back")


def _steps(n: int) -> str:
    return "steps:1" if n <= 1 else "steps:2-3" if n <= 3 else "steps:4-6" if n <= 6 else "steps:7+"


def task_skills(env: Environment, task: Task) -> set[str]:
    """The skills ``task`` exercises."""
    hidden, world = task.hidden, env.id
    spec = getattr(env, "spec", None)
    writes = {a.name for a in spec.actions if a.kind == "write"} if spec is not None else None
    skills = {f"goal:{world}/{g}" for g in hidden.goals}
    skills.add(_steps(len(hidden.gold_plan)))
    for step in hidden.gold_plan:
        if writes is None or step.tool in writes:
            skills.add(f"tool:{world}/{step.tool}")
    if spec is not None:
        used = {s.tool for s in hidden.gold_plan}
        for action in spec.actions:
            if action.name in used:
                skills.update(f"rule:{world}/{c.rule}" for c in action.require if c.rule)
        for rule in spec.rules:
            if rule.prior_call is not None and rule.prior_call.tool in used:
                skills.add(f"rule:{world}/{rule.id}")
    for knob in ("indirection", "distractors"):
        if hidden.knobs.get(knob):
            skills.add(f"{knob}:{hidden.knobs[knob]}")
    if hidden.profile:
        skills.add("held_back")
    return skills


class SkillStat(BaseModel):
    """One skill's record over the episodes that exercised it."""

    skill: str
    kind: str
    episodes: int
    successes: int
    success: float
    ci95: tuple[float, float]
    weakness: float = Field(description="1 - smoothed success (Laplace), 0 outside the band")
    in_band: bool = Field(description="learnable: some episodes succeeded, not all")


def store_records(stores: Sequence[str | Path]) -> Iterable[EpisodeRecord]:
    """Every episode of ``stores``: folders holding ``episodes.jsonl`` (a rollout's ``--out``,
    or a curriculum run's round folders below it) or such files."""
    for store in stores:
        path = Path(store)
        files = [path] if path.is_file() else sorted(path.rglob(EPISODES))
        for file in files:
            yield from read_records(file)


def find_gaps(
    records: Iterable[EpisodeRecord], success: float = 1.0, min_episodes: int = 5
) -> list[SkillStat]:
    """Each skill with at least ``min_episodes`` scored episodes, weakest gap first (then the
    skills outside the band). An episode succeeds when its reward reaches ``success``."""
    tally: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    tasks: dict[str, set[str]] = {}
    for rec in records:
        if not rec.scored or rec.reward is None:
            continue  # an infrastructure fault says nothing about the agent
        skills = tasks.get(rec.task_id)
        if skills is None:
            ref = TaskRef.parse(rec.task_id)
            env = make(ref.env_id)
            skills = tasks[rec.task_id] = task_skills(
                env, env.task(ref.split, ref.difficulty, ref.index)
            )
        for s in skills:
            tally[s][0] += 1
            tally[s][1] += rec.reward >= success
    stats = []
    for skill, (n, wins) in tally.items():
        if n < min_episodes:
            continue
        band = 0 < wins < n
        stats.append(
            SkillStat(
                skill=skill,
                kind=skill.split(":")[0],
                episodes=n,
                successes=wins,
                success=round(wins / n, 4),
                ci95=wilson(wins, n),
                weakness=round(1 - (wins + 1) / (n + 2), 4) if band else 0.0,
                in_band=band,
            )
        )
    return sorted(stats, key=lambda s: (not s.in_band, -s.weakness, s.skill))


class GapTargeter:
    """Chooses among candidate tasks of a cell, favouring those that exercise the gaps."""

    def __init__(
        self,
        gaps: Sequence[SkillStat],
        focus: int = 5,
        strength: float = 4.0,
        candidates: int = 8,
    ):
        band = [g for g in gaps if g.in_band]  # weakest first
        self.weakness = {g.skill: g.weakness for g in band[:focus]}
        self.strength = strength
        self.candidates = candidates

    def weight(self, env: Environment, task: Task) -> float:
        gap = sum(self.weakness.get(s, 0.0) for s in task_skills(env, task))
        return 1.0 + self.strength * gap

    def choose(self, env_id: str, split: Split, difficulty: int, indices: Sequence[int]) -> int:
        """One of ``indices`` (task indices of the cell), drawn by weight; the draw is a
        function of its inputs, so a resumed run draws the same."""
        env = make(env_id)
        weights = [self.weight(env, env.task(split, difficulty, i)) for i in indices]
        rng = random.Random(stable_hash("gaps", env_id, split, difficulty, *indices))
        return rng.choices(list(indices), weights=weights)[0]


def targeting_share(
    targeter: GapTargeter,
    cells: Sequence[tuple[str, int]],
    weakest: Sequence[str],
    draws: int = 200,
    split: Split = "train",
) -> dict[str, float]:
    """The share of sampled tasks that exercise one of the ``weakest`` skills, drawing
    ``draws`` tasks over ``cells`` (world, level) plainly (the next fresh index) and through
    the targeter (the best of its candidates), from the same fresh indices."""
    weak = set(weakest)
    hits = {"plain": 0, "targeted": 0}
    for k in range(draws):
        env_id, d = cells[k % len(cells)]
        env = make(env_id)
        first = (k // len(cells)) * targeter.candidates
        indices = list(range(first, first + targeter.candidates))
        plain = indices[0]
        chosen = targeter.choose(env_id, split, d, indices)
        for name, index in (("plain", plain), ("targeted", chosen)):
            hits[name] += bool(weak & task_skills(env, env.task(split, d, index)))
    return {f"{name}_share": round(n / draws, 4) for name, n in hits.items()} | {"draws": draws}


def plot_gaps(stats: Sequence[SkillStat], path: str, top: int = 25) -> str:
    """Success of the ``top`` weakest skills in the band, with their 95% intervals."""
    from matplotlib.figure import Figure

    shown = [s for s in stats if s.in_band][:top] or list(stats[:top])
    fig = Figure(figsize=(8, 0.3 * len(shown) + 1.5), dpi=110)
    ax = fig.subplots()
    y = list(range(len(shown)))[::-1]
    ax.errorbar(
        [s.success for s in shown],
        y,
        xerr=[
            [s.success - s.ci95[0] for s in shown],
            [s.ci95[1] - s.success for s in shown],
        ],
        fmt="o",
        capsize=3,
    )
    ax.set_yticks(y, [f"{s.skill} ({s.episodes})" for s in shown], fontsize=7)
    ax.set_xlim(0, 1)
    ax.set_xlabel("success (95% CI)")
    ax.set_title("the weakest skills in the learnable band")
    fig.tight_layout()
    fig.savefig(path)
    return path
