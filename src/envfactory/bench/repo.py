"""What repository worlds cost, and how many verified tasks they hold.

``bench_repo`` measures, on tasks of one repository world (verified beforehand, so their
verdicts are cached and not timed): the reset (a project tree laid out by hard links, the
bugged source copied), one step (``ls`` in the sandbox) and the verdict after the gold fix
(a real run of the pristine tests against the agent's source), as medians. With
``sample`` > 0 it also verifies that many candidate mutations drawn at random from every
split (fresh verdicts are runs; cached ones are reused) and reports the supply as candidates
times the kept share, with a 95% Wilson interval.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from statistics import median

from pydantic import BaseModel

from envfactory.contract.actions import ToolCall
from envfactory.contract.errors import WrongKind
from envfactory.quality.stats import wilson
from envfactory.registry import make
from envfactory.repo.environment import RepoEnvironment
from envfactory.repo.tasks import RepoHidden


class LevelSupply(BaseModel):
    """One level's verified supply: candidates times the share a random sample keeps."""

    difficulty: int
    sampled: int
    kept: int
    kept_share: float
    kept_share_ci95: tuple[float, float]
    tasks_estimate: int
    tasks_ci95: tuple[int, int]


class RepoBench(BaseModel):
    env: str
    tasks: int
    reset_ms_p50: float
    step_ms_p50: float
    verdict_ms_p50: float
    candidates: int
    sampled: int
    kept: int
    kept_share: float
    kept_share_ci95: tuple[float, float]
    verified_supply_estimate: int
    verified_supply_ci95: tuple[int, int]
    verify_ms_per_candidate: float
    levels: dict[int, LevelSupply] = {}
    distinct_bug_sets_estimate: int = 0


def bench_repo(
    env_id: str = "repo-python",
    tasks: int = 10,
    sample: int = 0,
    seed: int = 0,
    level_sample: int = 0,
    on_level: Callable[[LevelSupply], None] | None = None,
) -> RepoBench:
    """Reset, step and verdict medians over ``tasks`` difficulty-1 train tasks; the verified
    supply from ``sample`` random candidates (0: not measured); with ``level_sample`` > 0,
    each level's supply from that many random candidates judged as the level judges them
    (``on_level`` sees each level as it is measured)."""
    env = make(env_id)
    if not isinstance(env, RepoEnvironment):
        raise WrongKind(f"{env_id} is a {env.kind} world, not a repository world")
    drawn = [env.task("train", 1, i) for i in range(tasks)]
    resets, steps, verdicts = [], [], []
    episode = env.episode()
    for task in drawn:
        assert isinstance(task.hidden, RepoHidden)
        t = time.perf_counter()
        episode.reset(task)
        resets.append(time.perf_counter() - t)
        t = time.perf_counter()
        episode.step(ToolCall(tool="run_command", arguments={"command": "ls"}))
        steps.append(time.perf_counter() - t)
        for b in task.hidden.bugs:
            edit = {"path": b.file, "old": b.old, "new": b.new + "\n"}  # not the pristine text
            episode.step(ToolCall(tool="edit_file", arguments=edit))
        env.run_cache.clear()
        t = time.perf_counter()
        episode.evaluate()
        verdicts.append(time.perf_counter() - t)
    episode.close()
    candidates = sum(env.supply().values())
    kept = n = 0
    t = time.perf_counter()
    for _, verdict in env.sample_verdicts(sample, seed=seed):
        n += 1
        kept += bool(verdict.get("ok"))
    per = (time.perf_counter() - t) / n if n else 0.0
    lo, hi = wilson(kept, n)
    levels = {}
    for d in env.difficulties if level_sample else []:
        drawn_n, kept_n, _ = env.sample_level(d, level_sample, seed=seed)
        d_lo, d_hi = wilson(kept_n, drawn_n)
        levels[d] = LevelSupply(
            difficulty=d,
            sampled=drawn_n,
            kept=kept_n,
            kept_share=round(kept_n / drawn_n, 4) if drawn_n else 0.0,
            kept_share_ci95=(d_lo, d_hi),
            tasks_estimate=round(candidates * kept_n / drawn_n) if drawn_n else 0,
            tasks_ci95=(round(candidates * d_lo), round(candidates * d_hi)),
        )
        if on_level:
            on_level(levels[d])
    # Distinct bug sets: every kept single (levels 0 to 3 pose the same singles) and the
    # pairs and triples of levels 4 and 5.
    singles = round(candidates * kept / n) if n else 0
    multi = sum(levels[d].tasks_estimate for d in (4, 5) if d in levels)
    return RepoBench(
        env=env_id,
        tasks=len(drawn),
        reset_ms_p50=round(median(resets) * 1000, 2),
        step_ms_p50=round(median(steps) * 1000, 2),
        verdict_ms_p50=round(median(verdicts) * 1000, 2),
        candidates=candidates,
        sampled=n,
        kept=kept,
        kept_share=round(kept / n, 4) if n else 0.0,
        kept_share_ci95=(lo, hi),
        verified_supply_estimate=round(candidates * kept / n) if n else 0,
        verified_supply_ci95=(round(candidates * lo), round(candidates * hi)),
        verify_ms_per_candidate=round(per * 1000, 1),
        levels=levels,
        distinct_bug_sets_estimate=singles + multi,
    )
