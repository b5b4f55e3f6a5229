"""The numbers the dashboard shows, from a run's rows.

They follow the rollout summary (``envfactory.rollout.summary``): the reward mean and the
success rate are over scored episodes only (completed or truncated, with a reward), faults are
counted but never scored, and success is a reward of 1.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from statistics import fmean
from typing import Any

from envfactory.contract.actions import STATUSES
from envfactory.dashboard.reader import Row


def status_counts(rows: Sequence[Row]) -> dict[str, int]:
    """Episodes per status: every status of the episode API (zero when absent), then any other
    status the records name."""
    seen: Counter[str] = Counter(r.status for r in rows)
    out: dict[str, int] = {s: seen.pop(s, 0) for s in STATUSES}
    out.update(sorted(seen.items()))
    return out


def _rates(rows: Sequence[Row]) -> dict[str, Any]:
    rewards = [r.reward for r in rows if r.scored and r.reward is not None]
    return {
        "episodes": len(rows),
        "scored": len(rewards),
        "reward_mean": fmean(rewards) if rewards else None,
        "success_rate": sum(r >= 1.0 - 1e-9 for r in rewards) / len(rewards) if rewards else None,
    }


def totals(rows: Sequence[Row]) -> dict[str, Any]:
    """The run's episodes, scored episodes, reward mean, success rate and status counts."""
    return {**_rates(rows), "status_counts": status_counts(rows)}


def cells(rows: Sequence[Row]) -> list[dict[str, Any]]:
    """One cell per (world, difficulty), sorted: episodes, scored, reward mean, success rate
    and status counts."""
    by: dict[tuple[str, int], list[Row]] = defaultdict(list)
    for r in rows:
        by[(r.env_id, r.difficulty)].append(r)
    return [
        {"env": env, "difficulty": d, **_rates(rs), "status_counts": status_counts(rs)}
        for (env, d), rs in sorted(by.items())
    ]


def curves(rows: Sequence[Row], window: int = 20, points: int = 300) -> dict[str, Any]:
    """Reward and success over the run, scored episodes in the order they ended: the mean of
    the latest ``window`` at each episode, at most ``points`` of them (evenly spread, the last
    always kept). ``t`` is seconds since the run's first episode started (None when the
    records carry no timing); ``n`` the scored episode's number."""
    window = max(1, window)
    scored = sorted(
        (r for r in rows if r.scored and r.reward is not None),
        key=lambda r: (r.ended or float("inf"), r.started),
    )
    starts = [r.started for r in rows if r.started > 0]
    t0 = min(starts) if starts else None
    rewards = [float(r.reward or 0.0) for r in scored]
    hits = [1.0 if (r.reward or 0.0) >= 1.0 - 1e-9 else 0.0 for r in scored]
    n = len(scored)
    keep = (
        range(n)
        if n <= points
        else sorted({round(k * (n - 1) / (points - 1)) for k in range(points)})
    )
    out = []
    sum_r = sum_s = 0.0
    prefix_r = [0.0]
    prefix_s = [0.0]
    for i in range(n):
        sum_r += rewards[i]
        sum_s += hits[i]
        prefix_r.append(sum_r)
        prefix_s.append(sum_s)
    for i in keep:
        lo = max(0, i + 1 - window)
        k = i + 1 - lo
        r = scored[i]
        out.append(
            {
                "n": i + 1,
                "t": None if t0 is None or not r.ended else round(r.ended - t0, 3),
                "reward": (prefix_r[i + 1] - prefix_r[lo]) / k,
                "success": (prefix_s[i + 1] - prefix_s[lo]) / k,
            }
        )
    return {"window": window, "scored": n, "points": out}


def rounds(rows: Sequence[Row]) -> list[dict[str, Any]]:
    """For a curriculum run: per round and world, the levels drawn and how they went (the
    frontier as the run's own records show it)."""
    by: dict[tuple[int, str], list[Row]] = defaultdict(list)
    for r in rows:
        if r.round is not None:
            by[(r.round, r.env_id)].append(r)
    return [
        {
            "round": rnd,
            "env": env,
            "levels": sorted({r.difficulty for r in rs}),
            "max_level": max(r.difficulty for r in rs),
            **_rates(rs),
        }
        for (rnd, env), rs in sorted(by.items())
    ]


def episodes(
    rows: Sequence[Row],
    env: str | None = None,
    difficulty: int | None = None,
    status: str | None = None,
    limit: int = 50,
    offset: int = 0,
) -> dict[str, Any]:
    """The run's episodes, newest first, optionally of one world, difficulty or status."""
    chosen = [
        r
        for r in rows
        if (env is None or r.env_id == env)
        and (difficulty is None or r.difficulty == difficulty)
        and (status is None or r.status == status)
    ]
    chosen.reverse()
    return {
        "total": len(chosen),
        "episodes": [r.public() for r in chosen[offset : offset + max(0, limit)]],
    }
