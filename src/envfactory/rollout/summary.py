"""What a run did: statuses, rewards by environment and difficulty, groups, tokens, latency."""

from __future__ import annotations

from collections import Counter, defaultdict
from statistics import fmean, pstdev
from typing import Any

from pydantic import BaseModel, Field

from envfactory.contract.actions import STATUSES
from envfactory.trajectory.record import EpisodeRecord


class GroupStats(BaseModel):
    """A group's rewards over its scored episodes only: faults never enter a baseline."""

    group_id: str
    episodes: int
    scored: int
    reward_mean: float | None
    reward_std: float | None


def group_stats(records: list[EpisodeRecord]) -> dict[str, GroupStats]:
    """Per-group reward mean and standard deviation, faults left out."""
    by_group: dict[str, list[EpisodeRecord]] = defaultdict(list)
    for r in records:
        by_group[r.group_id].append(r)
    out = {}
    for gid, recs in by_group.items():
        rewards = [r.reward for r in recs if r.scored and r.reward is not None]
        out[gid] = GroupStats(
            group_id=gid,
            episodes=len(recs),
            scored=len(rewards),
            reward_mean=fmean(rewards) if rewards else None,
            reward_std=pstdev(rewards) if rewards else None,
        )
    return out


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q / 100 * (len(s) - 1))))]


class Cell(BaseModel):
    env: str
    difficulty: int
    episodes: int = 0
    scored: int = 0
    reward_mean: float | None = None
    success_rate: float | None = None


class RunSummary(BaseModel):
    episodes: int = Field(description="episodes recorded by this run")
    status_counts: dict[str, int]
    reward_mean: float | None = Field(description="over scored episodes (faults excluded)")
    success_rate: float | None
    by_env_difficulty: list[Cell]
    groups: dict[str, int] = Field(description="complete, incomplete, skipped, learnable")
    tokens: dict[str, int]
    latency_s: dict[str, float | None] = Field(description="model call and episode percentiles")
    steps: int
    steps_per_s: float
    retries: int
    discarded: int = Field(description="over-sampled episodes cancelled once a group was full")
    paused: int = Field(description="in-flight episodes checkpointed by a stop")
    peak_live: int
    loop_lag_ms_p99: float | None
    wall_s: float
    out: str | None = Field(None, description="the JSONL store")
    files: list[str] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list, description="groups that could not run")


class RolloutStats:
    """Accumulates a run's numbers episode by episode (no records kept)."""

    def __init__(self) -> None:
        self.status: Counter[str] = Counter()
        self.cells: dict[tuple[str, int], list[float]] = defaultdict(list)
        self.cell_episodes: Counter[tuple[str, int]] = Counter()
        self.group_rewards: dict[str, list[float]] = defaultdict(list)
        self.call_latency: list[float] = []
        self.episode_wall: list[float] = []
        self.prompt_tokens = self.completion_tokens = 0
        self.steps = self.retries = self.discarded = self.paused = 0
        self.groups = Counter[str]()
        self.errors: list[str] = []

    def add(self, rec: EpisodeRecord) -> None:
        self.status[rec.status] += 1
        key = (rec.env_id, rec.difficulty)
        self.cell_episodes[key] += 1
        if rec.scored and rec.reward is not None:
            self.cells[key].append(rec.reward)
            self.group_rewards[rec.group_id].append(rec.reward)
        self.steps += len(rec.steps)
        self.retries += int(rec.metrics.get("retries", 0))
        self.episode_wall.append(rec.timing.wall_s)
        for c in rec.calls:
            self.call_latency.append(c.latency_s)
            self.prompt_tokens += c.prompt_tokens or 0
            self.completion_tokens += c.completion_tokens or 0

    def summary(self, wall_s: float, **extra: Any) -> RunSummary:
        rewards = [r for rs in self.cells.values() for r in rs]
        cells = []
        for (env, d), n in sorted(self.cell_episodes.items()):
            rs = self.cells.get((env, d), [])
            cells.append(
                Cell(
                    env=env,
                    difficulty=d,
                    episodes=n,
                    scored=len(rs),
                    reward_mean=round(fmean(rs), 4) if rs else None,
                    success_rate=round(sum(r >= 1.0 - 1e-9 for r in rs) / len(rs), 4)
                    if rs
                    else None,
                )
            )
        learnable = sum(len(rs) > 1 and pstdev(rs) > 0 for rs in self.group_rewards.values())
        lat = self.call_latency
        wall = self.episode_wall
        return RunSummary(
            episodes=sum(self.status.values()),
            status_counts={s: self.status.get(s, 0) for s in STATUSES},
            reward_mean=round(fmean(rewards), 4) if rewards else None,
            success_rate=round(sum(r >= 1.0 - 1e-9 for r in rewards) / len(rewards), 4)
            if rewards
            else None,
            by_env_difficulty=cells,
            groups={
                **{k: self.groups.get(k, 0) for k in ("complete", "incomplete", "skipped")},
                "learnable": learnable,
            },
            tokens={"prompt": self.prompt_tokens, "completion": self.completion_tokens},
            latency_s={
                "call_p50": percentile(lat, 50),
                "call_p90": percentile(lat, 90),
                "call_p99": percentile(lat, 99),
                "episode_p50": percentile(wall, 50),
                "episode_p90": percentile(wall, 90),
                "episode_p99": percentile(wall, 99),
            },
            steps=self.steps,
            steps_per_s=round(self.steps / wall_s, 1) if wall_s > 0 else 0.0,
            retries=self.retries,
            discarded=self.discarded,
            paused=self.paused,
            wall_s=round(wall_s, 3),
            errors=self.errors,
            **extra,
        )
