"""``envfactory check`` for a world with seats: does the stronger scripted policy win, and can
every outcome be confirmed?

Episodes come in pairs on the same task. In a world of rivals (games, negotiation) the strong
and the weak policy meet twice, once in each seat, so the luck of the seat and of the deal
cancels ("duplicate" play). In a world of partners (cooperation, proposer and solver) the
strong policy plays the measured seat (every seat, or the world's ``check_seat``) in one
episode and the weak one in the other, the rest of the seats fixed. Each pair gives the
strong side's reward minus the weak side's; ``strong_beats_weak`` holds when the strong side
wins significantly more pairs than it loses (a one-sided sign test, p < 0.01). Every episode's
outcome is audited by the episode itself (replayed and checked independently: a tampered
outcome shows); ``invalid_outcomes`` counts those it could not confirm, and must be 0.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from collections.abc import Callable
from statistics import fmean
from typing import ClassVar

from pydantic import BaseModel

from envfactory.contract.environment import Environment
from envfactory.episode.seats import SeatedEpisode, SeatedWorld, SeatPolicy, play_seats
from envfactory.quality.cells import sample_cells
from envfactory.quality.stats import ALPHA, binomial_tail
from envfactory.tasks.seeds import SPLIT_SHARES

Progress = Callable[[int], None]


class LevelStats(BaseModel):
    pairs: int
    strong_reward_mean: float
    weak_reward_mean: float


class SeatCheckReport(BaseModel):
    SHOWN: ClassVar[tuple[str, ...]] = (
        "episodes",
        "weak",
        "strong",
        "strong_reward_mean",
        "weak_reward_mean",
        "pairs_won",
        "pairs_lost",
        "pairs_tied",
        "p_value",
        "strong_beats_weak",
        "invalid_outcomes",
        "duplicate_tasks",
        "split_overlap",
        "seconds",
    )

    env: str
    kind: str
    agents: int
    episodes: int
    tasks: int
    weak: int
    strong: int
    measured_seats: list[str]
    strong_reward_mean: float
    weak_reward_mean: float
    pairs_won: int
    pairs_lost: int
    pairs_tied: int
    p_value: float
    strong_beats_weak: bool
    invalid_outcomes: int
    problems: list[str]
    duplicate_tasks: int
    split_overlap: int
    by_difficulty: dict[int, LevelStats]
    capacity: dict[str, list[int | None]]
    seconds: float
    passed: bool


def seat_check(
    env: Environment,
    world: SeatedWorld,
    n: int = 500,
    seed: int = 0,
    progress: Progress | None = None,
) -> SeatCheckReport:
    """Play about ``n`` episodes (``n // 2`` pairs) of ``world``'s scripted seats (``env``
    as a :class:`~envfactory.episode.seats.SeatedWorld`); see the module docstring."""
    started = time.perf_counter()
    weak, strong = world.check_pair
    measured = [world.check_seat] if world.check_seat else list(world.seats)
    episode = world.episode()
    diffs: list[float] = []
    sides: dict[str, list[float]] = defaultdict(list)
    levels: dict[int, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    cells: Counter[tuple[int, str]] = Counter()
    splits_of: dict[str, set[str]] = defaultdict(set)
    problems: list[str] = []
    invalid = episodes = 0
    for i, (split, difficulty, index) in enumerate(sample_cells(env, max(1, n // 2))):
        task = env.task(split, difficulty, index)
        cells[(difficulty, task.hidden.fingerprint)] += 1
        splits_of[task.hidden.fingerprint].add(split)
        scores = {"strong": 0.0, "weak": 0.0}
        for lineup in _lineups(world, measured, weak, strong, i):
            verdict, ep = play_seats(world, task, _seats(world, lineup, seed), episode)
            episodes += 1
            found = ep.audit() if verdict.status != "env_error" else ["the world failed"]
            if found:
                invalid += 1
                problems += [f"{task.task_id}: {p}" for p in found[:2]]
            for seat, side in lineup.items():
                if side in scores and seat in measured:
                    scores[side] += _reward(ep, seat)
        diffs.append(scores["strong"] - scores["weak"])
        for side, total in scores.items():
            sides[side].append(total)
            levels[difficulty][side].append(total)
        if progress:
            progress(2)
    episode.close()
    won, lost = sum(d > 1e-9 for d in diffs), sum(d < -1e-9 for d in diffs)
    p = binomial_tail(won, won + lost, 0.5)  # the sign test: wins of fair coin flips
    beats = won > lost and p < ALPHA
    per = len(measured)
    report = SeatCheckReport(
        env=env.id,
        kind=env.kind,
        agents=len(world.seats),
        episodes=episodes,
        tasks=len(diffs),
        weak=weak,
        strong=strong,
        measured_seats=measured,
        strong_reward_mean=_mean([x / per for x in sides["strong"]]),
        weak_reward_mean=_mean([x / per for x in sides["weak"]]),
        pairs_won=won,
        pairs_lost=lost,
        pairs_tied=len(diffs) - won - lost,
        p_value=p,
        strong_beats_weak=beats,
        invalid_outcomes=invalid,
        problems=problems[:20],
        duplicate_tasks=sum(c - 1 for c in cells.values()),
        split_overlap=sum(1 for s in splits_of.values() if len(s) > 1),
        by_difficulty={
            d: LevelStats(
                pairs=len(v["strong"]),
                strong_reward_mean=_mean([x / per for x in v["strong"]]),
                weak_reward_mean=_mean([x / per for x in v["weak"]]),
            )
            for d, v in sorted(levels.items())
        },
        capacity={s: [env.capacity(s, d) for d in env.difficulties] for s, _ in SPLIT_SHARES},
        seconds=round(time.perf_counter() - started, 3),
        passed=False,
    )
    report.passed = (
        beats and invalid == 0 and report.duplicate_tasks == 0 and report.split_overlap == 0
    )
    return report


def _lineups(
    world: SeatedWorld, measured: list[str], weak: int, strong: int, i: int
) -> list[dict[str, str]]:
    """The two episodes of pair ``i``: seat -> "strong", "weak" or "fixed"."""
    if not world.symmetric:
        fixed = {s: "fixed" for s in world.seats if s not in measured}
        return [
            {**fixed, **dict.fromkeys(measured, "strong")},
            {**fixed, **dict.fromkeys(measured, "weak")},
        ]
    a, b = world.seats[i % 2], world.seats[1 - i % 2]
    return [{a: "strong", b: "weak"}, {a: "weak", b: "strong"}]


def _seats(world: SeatedWorld, lineup: dict[str, str], seed: int) -> dict[str, SeatPolicy]:
    weak, strong = world.check_pair
    level = {"strong": strong, "weak": weak, "fixed": world.check_fixed}
    return {s: world.scripted(s, level[side], seed) for s, side in lineup.items()}


def _reward(ep: SeatedEpisode, seat: str) -> float:
    return float(ep.seat_rewards().get(seat) or 0.0)


def _mean(xs: list[float]) -> float:
    return round(fmean(xs), 6) if xs else 0.0
