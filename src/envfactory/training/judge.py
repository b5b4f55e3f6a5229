"""Held-out success of a model in training: greedy, on the **test** tasks of each evaluation
world, per world and pooled, with 95% Wilson intervals."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from envfactory.bench.calibration import CalibrationCell, calibrate
from envfactory.contract.errors import EnvFactoryError
from envfactory.harness.config import HarnessConfig
from envfactory.quality.stats import wilson
from envfactory.registry import make


class NotJudgeable(EnvFactoryError):
    """An evaluation world has no test tasks at the level judged."""


class Held(BaseModel):
    """Success on held-out tasks, as the contract names it."""

    split: str
    difficulty: int | None = None  # the level (a world's own; None when pooled over worlds)
    tasks: int
    success: float
    ci95: tuple[float, float]
    mean_reward: float
    tool_call_valid_rate: float | None


class Judged(BaseModel):
    """One evaluation: pooled over the worlds, and each world's own."""

    pooled: Held
    per_world: dict[str, Held]


def held(cell: CalibrationCell, split: str = "test") -> Held:
    return Held(split=split, **cell.model_dump(include=set(Held.model_fields) - {"split"}))


def pooled(cells: Sequence[CalibrationCell], split: str = "test") -> Held:
    """The cells as one sample: successes and tasks summed, the interval of the sum; the valid
    call rate weighted by the calls each world's episodes attempted."""
    attempted = sum(c.calls_attempted for c in cells if c.tool_call_valid_rate is not None)
    valid = sum(c.calls_attempted * (c.tool_call_valid_rate or 0.0) for c in cells)
    return _summed(cells, split, round(valid / attempted, 4) if attempted else None)


def repooled(held: Sequence[Held], split: str = "test") -> Held:
    """Worlds' figures pooled again (over a subset of a run's worlds), as :func:`pooled` pools
    them, but the valid call rate is None: a :class:`Held` does not keep the calls each world
    attempted, its weights."""
    return _summed(held, split, None)


def _summed(parts: Sequence[CalibrationCell | Held], split: str, valid: float | None) -> Held:
    tasks = sum(p.tasks for p in parts)
    wins = sum(round(p.success * p.tasks) for p in parts)
    return Held(
        split=split,
        tasks=tasks,
        success=round(wins / tasks, 4) if tasks else 0.0,
        ci95=wilson(wins, tasks),
        mean_reward=round(sum(p.mean_reward * p.tasks for p in parts) / tasks, 4) if tasks else 0,
        tool_call_valid_rate=valid,
    )


def judged_level(world: str, difficulty: int) -> int:
    """The level ``world`` is judged at: ``difficulty``, or its lowest level above it where it
    has no such level (tau2-retail starts at 1); :class:`NotJudgeable` where it has none."""
    above = [d for d in make(world).difficulties if d >= difficulty]
    if not above:
        raise NotJudgeable(f"{world} has no level {difficulty} or above to judge")
    return min(above)


def judge(
    policy: Any, worlds: Sequence[str], tasks: int, difficulty: int, harness: HarnessConfig
) -> Judged:
    """Greedy success of ``policy`` (a rollout policy) on the first ``tasks`` test tasks of
    each world at its :func:`judged_level` (fewer where a world has fewer), under ``harness``."""
    from rich.console import Console
    from rich.progress import Progress

    levels = {w: judged_level(w, difficulty) for w in worlds}
    cells: list[CalibrationCell] = []
    with Progress(console=Console(stderr=True), transient=True) as bar:
        job = bar.add_task("test tasks", total=tasks * len(worlds))
        for world, level in levels.items():
            cells += calibrate(
                policy,
                [world],
                tasks,
                [level],
                split="test",
                harness=harness,
                on_episode=lambda _: bar.advance(job),
                fit_plan=False,  # judged under the harness it trains under
            )
    return Judged(pooled=pooled(cells), per_world={c.env: held(c) for c in cells})
