"""Multi-seat episodes through the rollout engine: one trajectory per seat, linked by episode;
self-play through an OpenAI-compatible server; per-agent per-turn advantages by hand."""

from __future__ import annotations

import asyncio
import json
import math
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from statistics import fmean, pstdev

import pytest
from multiagent_helpers import world
from seat_brain import SeatBrain

from envfactory.credit import CreditConfig, assign
from envfactory.multiagent.rollout import run_seats
from envfactory.multiagent.seats import ScriptedSeatPolicy, Seating
from envfactory.policies.openai import OpenAIPolicy
from envfactory.rollout import EngineConfig, RetryConfig, TaskRef
from envfactory.trajectory import EpisodeRecord, TrajectoryStore

FAST = EngineConfig(
    group_size=2,
    concurrency=8,
    call_timeout_s=20,
    retry=RetryConfig(attempts=3, base_s=0.01, max_s=0.5),
)


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
    seating = Seating(ScriptedSeatPolicy(env, 3))
    store = TrajectoryStore(tmp_path)
    summary, records = asyncio.run(run_seats(refs, seating, config=FAST, store=store))
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
    summary, more = asyncio.run(run_seats(refs, seating, config=FAST, store=again))
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
        summary, records = asyncio.run(run_seats(refs, Seating(policy), config=config))
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


def test_match_command(tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = ["match", "negotiation", "--n-tasks", "2", "--group-size", "2", "--out", str(out)]
    done = subprocess.run(
        [sys.executable, "-m", "envfactory", *args, "--credit", "atgrpo", "--json"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["trajectories"] == 2 * 2 * 2 and set(result["reward_by_seat"]) == {
        "player_0",
        "player_1",
    }
    lines = (out / "credited.jsonl").read_text().splitlines()
    assert len(lines) == 8 and all(json.loads(x)["actor"] for x in lines)
    refused = subprocess.run(
        [sys.executable, "-m", "envfactory", "rollout", "--envs", "negotiation"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert refused.returncode == 2 and "envfactory match" in refused.stderr
