"""Multi-seat episodes through the rollout engine: one trajectory per seat, linked by episode;
over-sampling and resume; self-play through an OpenAI-compatible server; per-agent per-turn
advantages by hand; ``envfactory rollout --seat`` and its old name ``match``."""

from __future__ import annotations

import asyncio
import json
import math
import subprocess
import sys
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from statistics import fmean, pstdev
from typing import Any

import pytest
from multiagent_helpers import world
from seat_brain import SeatBrain

from envfactory.credit import CreditConfig, assign
from envfactory.policies.base import RolloutPolicy
from envfactory.policies.openai import OpenAIPolicy
from envfactory.rollout import EngineConfig, RetryConfig, RolloutEngine, RunSummary, TaskRef
from envfactory.rollout.run import run_and_close
from envfactory.rollout.seating import ScriptedSeatPolicy, Seating
from envfactory.trajectory import EpisodeRecord, TrajectoryStore

FAST = EngineConfig(
    group_size=2,
    concurrency=8,
    call_timeout_s=20,
    retry=RetryConfig(attempts=3, base_s=0.01, max_s=0.5),
)


def run_seats(
    refs: list[TaskRef],
    learner: RolloutPolicy,
    seats: Mapping[str, str] | None = None,
    **options: Any,
) -> tuple[RunSummary, list[EpisodeRecord]]:
    engine = RolloutEngine(learner, seats=seats, **options)
    return asyncio.run(run_and_close(engine, refs))


def by_episode(records: list[EpisodeRecord]) -> dict[str, list[EpisodeRecord]]:
    out: dict[str, list[EpisodeRecord]] = defaultdict(list)
    for r in records:
        assert r.episode is not None
        out[r.episode].append(r)
    return out


@pytest.mark.parametrize("env_id", ["connect_four", "negotiation", "blotto", "proposer_solver"])
def test_one_trajectory_per_seat_linked_by_episode(env_id: str, tmp_path: Path) -> None:
    env = world(env_id)
    refs = [TaskRef(env_id, "train", d, i) for d in env.difficulties[:2] for i in range(2)]
    learner = ScriptedSeatPolicy(env, 3)
    store = TrajectoryStore(tmp_path)
    summary, records = run_seats(refs, learner, config=FAST, store=store)
    store.close()
    assert summary.groups["complete"] == len(refs) and not summary.errors
    episodes = by_episode(records)
    assert len(episodes) == len(refs) * FAST.group_size
    for eid, recs in episodes.items():
        assert sorted(r.actor or "" for r in recs) == sorted(env.agents)
        for r in recs:
            assert r.episode_id == f"{eid}@{r.actor}" and r.group_id == eid.rsplit("#", 1)[0]
            assert r.status == "completed" and r.reward is not None
            assert r.metrics[f"reward/{r.actor}"] == r.reward
            assert all(c.actor == r.actor for c in r.calls)
            assert all(s.actor == r.actor for s in r.steps)
            assert r.tools == env.seat_schemas(r.actor or "")
        if env.symmetric:  # a zero-sum game or a negotiation: a seat learns from its own reward
            assert len({r.model.name for r in recs}) == 2  # the learner and a scripted opponent
    again = TrajectoryStore(tmp_path)
    assert len(again) == len(records)
    summary, more = run_seats(refs, learner, config=FAST, store=again)
    again.close()
    assert summary.groups["skipped"] == len(refs) and more == []


def test_oversampled_groups_keep_whole_episodes(tmp_path: Path) -> None:
    """A group of G episodes started G + oversample: it keeps G whole episodes (every seat's
    trajectory of each) and the rest are discarded; a resumed run adds none."""
    env = world("kuhn_poker")
    refs = [TaskRef("kuhn_poker", "train", d, 0) for d in env.difficulties[:3]]
    config = FAST.model_copy(update={"group_size": 2, "oversample": 3})
    seats = {"player_1": "scripted:1"}
    learner = ScriptedSeatPolicy(env, 2)
    store = TrajectoryStore(tmp_path)
    summary, records = run_seats(refs, learner, seats, config=config, store=store)
    store.close()
    assert summary.groups["complete"] == len(refs) and summary.discarded == 3 * len(refs)
    episodes = by_episode(records)
    assert len(episodes) == 2 * len(refs) and len(records) == 2 * len(episodes)
    for recs in episodes.values():
        assert {r.actor for r in recs} == set(env.agents)
        assert {r.model.name for r in recs if r.actor == "player_1"} == {"kuhn_poker:scripted:1"}
    again = TrajectoryStore(tmp_path)
    summary, more = run_seats(refs, learner, seats, config=config, store=again)
    again.close()
    assert summary.groups["skipped"] == len(refs) and more == []


def test_seating() -> None:
    c4 = world("connect_four")
    learner = ScriptedSeatPolicy(c4, 1)
    seating = Seating(learner, {"player_1": "scripted:2"})
    even, odd = c4.task("train", 3, 0), c4.task("train", 3, 1)
    assert seating.resolve(c4, even)["player_0"] is learner
    assert Seating(learner).resolve(c4, odd)["player_1"] is learner
    default = Seating(learner).resolve(c4, even)["player_1"]
    assert isinstance(default, ScriptedSeatPolicy) and default.strength == c4.opponent(3)
    both = Seating(learner, {"player_1": "same:player_0"}).resolve(c4, even)
    assert both["player_0"] is both["player_1"] is learner
    with pytest.raises(ValueError, match="not learner, scripted"):
        Seating(learner, {"player_1": "robot"})
    with pytest.raises(ValueError, match="no seat"):
        Seating(learner, {"front": "learner"}).resolve(c4, even)
    loop = {"player_0": "same:player_1", "player_1": "same:player_0"}
    with pytest.raises(ValueError, match="in a loop: player_0 -> player_1 -> player_0"):
        Seating(learner, loop).resolve(c4, even)
    coop = world("cooperation")
    task = coop.task("train", 1, 0)
    assert set(Seating(learner).resolve(coop, task).values()) == {learner}  # partners: self-play


def hand_atgrpo(records: list[EpisodeRecord]) -> dict[tuple[str, int], float]:
    """Per-agent per-turn advantages, computed from scratch: within a task's group, a seat's
    k-th call is compared with the k-th calls of that seat in the group's other episodes, on
    that seat's reward: (reward - mean) / (population std + 1e-6); alone in its cell, 0."""
    cells: dict[tuple[str, str, int], list[EpisodeRecord]] = defaultdict(list)
    for r in records:
        for k in range(len(r.calls)):
            cells[(r.group_id, r.actor or "", k)].append(r)
    out: dict[tuple[str, int], float] = {}
    for (_, _, k), members in cells.items():
        values = [m.reward or 0.0 for m in members]
        mean, sd = fmean(values), pstdev(values)
        for m, v in zip(members, values, strict=True):
            out[(m.episode_id, k)] = (v - mean) / (sd + 1e-6) if len(members) > 1 else 0.0
    return out


def test_self_play_cooperation_through_an_openai_server() -> None:
    refs = [TaskRef("cooperation", "train", d, i) for d, i in ((2, 0), (3, 1), (5, 2))]
    config = FAST.model_copy(update={"group_size": 3})
    with SeatBrain() as brain:
        policy = OpenAIPolicy(brain.base_url, "seat-brain", api_key="test-key")
        summary, records = run_seats(refs, policy, config=config)
        sessions = set(brain.sessions)
    assert not summary.errors and summary.groups["complete"] == len(refs)
    assert len(records) == len(refs) * 3 * 2  # one trajectory per seat of every episode
    assert any(s.endswith("@front") for s in sessions) and any(
        s.endswith("@back") for s in sessions
    )
    for eid, recs in by_episode(records).items():
        front = next(r for r in recs if r.actor == "front")
        back = next(r for r in recs if r.actor == "back")
        assert front.model.provider == back.model.provider == "openai"  # one policy, two seats
        assert front.reward == back.reward and front.status == back.status
        assert front.status == "completed" or (front.reward or 0.0) < 1.0  # failing teams run out
        for r in (front, back):
            assert r.calls and all(c.prompt_ids and c.output_ids for c in r.calls)
            assert all(len(c.output_logprobs or []) == len(c.output_ids or []) for c in r.calls)
        request = world("cooperation").task(*_address(front.task_id)).hidden.game["task"]
        db_request = __import__("envfactory").make("retail").task(*_address(request)).public
        said = " ".join(str(m.get("content")) for m in back.messages if m["role"] != "user")
        assert db_request.instruction not in said  # the back hears it only as a message
        assert "send_message" in str(back.messages) and eid in back.episode_id
    rewards = [r.reward for r in records if r.actor == "front"]
    assert 1.0 in rewards and min(r or 0.0 for r in rewards) < 1.0  # the slips show
    assert sum(r.status == "completed" for r in records) > len(records) / 2
    credited = assign(records, CreditConfig(method="atgrpo")).records
    expected = hand_atgrpo(records)
    assert any(abs(a) > 0.5 for a in expected.values())
    for r in credited:
        for c in r.calls:
            assert c.advantage is not None
            assert math.isclose(c.advantage, expected[(r.episode_id, c.index)], abs_tol=1e-9)
        own = [expected[(r.episode_id, k)] for k in range(len(r.calls))]
        assert r.advantage is not None and math.isclose(r.advantage, fmean(own), abs_tol=1e-9)


def _address(task_id: str) -> tuple[str, int, int]:
    _, split, difficulty, index = task_id.rsplit("/", 3)
    return split, int(difficulty), int(index)


def envfactory(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "envfactory", *args], capture_output=True, text=True, timeout=600
    )


def test_match_command(tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = ["match", "negotiation", "--n-tasks", "2", "--group-size", "2", "--out", str(out)]
    done = envfactory(*args, "--credit", "atgrpo", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["trajectories"] == 2 * 2 * 2 and set(result["reward_by_seat"]) == {
        "player_0",
        "player_1",
    }
    lines = (out / "credited.jsonl").read_text().splitlines()
    assert len(lines) == 8 and all(json.loads(x)["actor"] for x in lines)
    refused = envfactory("rollout", "--envs", "negotiation")
    assert refused.returncode == 2 and "scripted:N" in refused.stderr  # oracle plays no seat
    one_agent = envfactory("match", "retail")
    assert one_agent.returncode == 2 and "one agent" in one_agent.stderr


def test_rollout_plays_seats(tmp_path: Path) -> None:
    """``envfactory rollout ENV --seat ...``: a run of a world with seats, resumable."""
    out = tmp_path / "run"
    args = ["rollout", "blotto", "--seat", "player_0=scripted:3", "--seat", "player_1=scripted:0",
            "--policy", "scripted:2", "--n-tasks", "3", "--group-size", "2", "--oversample", "1",
            "--out", str(out), "--json"]  # fmt: skip
    done = envfactory(*args)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["episodes"] == 3 * 2 * 2 and summary["groups"]["complete"] == 3
    records = [json.loads(x) for x in (out / "episodes.jsonl").read_text().splitlines()]
    assert len(records) == 12 and all(r["status"] == "completed" for r in records)
    players = {r["actor"]: r["model"]["name"] for r in records}
    assert players == {"player_0": "blotto:scripted:3", "player_1": "blotto:scripted:0"}
    strong = [r["reward"] for r in records if r["actor"] == "player_0"]
    assert fmean(strong) > 0.5  # the strong seat wins most
    again = json.loads(envfactory(*args, "--resume").stdout)
    assert again["episodes"] == 12 and again["groups"]["skipped"] == 3
    assert len((out / "episodes.jsonl").read_text().splitlines()) == 12
    bad = envfactory("rollout", "blotto", "--policy", "scripted:2", "--seat", "dealer=learner",
                     "--out", str(tmp_path / "bad"))  # fmt: skip
    assert bad.returncode == 2 and "no seat 'dealer'" in bad.stderr
