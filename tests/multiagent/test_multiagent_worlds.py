"""The multi-agent episode contract, on every multi-agent world."""

from __future__ import annotations

import json

import pytest
from multiagent_helpers import MULTI, seats, world

from envfactory.contract.actions import Message, ToolCall
from envfactory.contract.errors import EpisodeError
from envfactory.episode.seats import MultiVerdict, play_seats
from envfactory.multiagent.environment import MultiAgentEnvironment
from envfactory.multiagent.episode import MAX_ERRORS


def test_at_least_four_worlds_listed_with_theirseats() -> None:
    assert len(MULTI) >= 4
    for env_id in MULTI:
        info = world(env_id).info()
        assert info.kind == "multiagent" and info.agents == len(world(env_id).agents) >= 2
        assert info.tools >= 1 and info.difficulties


def test_episode_contract(multi: MultiAgentEnvironment) -> None:
    task = multi.task("train", multi.difficulties[0], 0)
    ep = multi.episode()
    with pytest.raises(EpisodeError):
        ep.step(Message(content="hi"))
    first = ep.reset(task)
    actor = ep.current_actors()[0]
    assert first.actor == actor and first.kind == "task" and first.data["briefing"]
    assert first.data["your_turn"] and not first.done
    assert set(ep.current_actors()) <= set(multi.agents)
    for seat in multi.agents:
        seen = ep.observe(seat)
        assert seen.actor == seat and seen.data["seat"] == seat
        assert seen.data["your_turn"] == (seat in ep.current_actors())
    verdict, _ = play_seats(multi, task, seats(multi, 3), ep)
    assert isinstance(verdict, MultiVerdict) and ep.done and ep.current_actors() == []
    assert set(verdict.rewards) == set(multi.agents)
    assert all(r is not None and 0.0 <= r <= 1.0 for r in verdict.rewards.values())
    assert verdict.reward == verdict.rewards[multi.agents[0]]
    assert verdict.status == "completed" and ep.audit() == []
    after = ep.step(ToolCall(tool="anything", actor=actor))
    assert after.done and after.error is not None and after.error.code == "episode_over"
    ep.close()


def test_bad_actions_are_observations(multi: MultiAgentEnvironment) -> None:
    ep = multi.episode()
    ep.reset(multi.task("validation", multi.difficulties[-1], 1))
    actor = ep.current_actors()[0]
    waiting = [s for s in multi.agents if s not in ep.current_actors()]
    cases = [
        ("{not json", "malformed_action"),
        (json.dumps({"type": "tool_call", "tool": "no_such_tool", "actor": actor}), None),
        ({"type": "tool_call", "tool": "x", "arguments": "[1]", "actor": actor}, None),
        ({"type": "message", "content": "hello", "actor": "nobody"}, "malformed_action"),
    ]
    if waiting:
        cases.append(({"type": "message", "content": "me!", "actor": waiting[0]}, None))
    for raw, code in cases:
        obs = ep.step(raw)
        assert obs.kind == "tool_error" and obs.error is not None, raw
        assert code is None or obs.error.code == code
    assert not ep.done and ep.steps == len(cases)
    ep.close()


def test_invalid_actions_forfeit(multi: MultiAgentEnvironment) -> None:
    ep = multi.episode()
    ep.reset(multi.task("train", multi.difficulties[0], 2))
    seat = ep.current_actors()[0]
    for _ in range(MAX_ERRORS):
        ep.step({"type": "tool_call", "tool": "no_such_tool"}, seat=seat)
        if ep.done:
            break
    assert ep.done and ep.status == "completed"
    verdict = ep.evaluate()
    assert verdict.rewards[seat] == min(v for v in verdict.rewards.values() if v is not None)
    assert ep.audit() == []


def test_step_for_a_seat_overrides_the_named_actor(multi: MultiAgentEnvironment) -> None:
    ep = multi.episode()
    ep.reset(multi.task("train", multi.difficulties[0], 3))
    seat = ep.current_actors()[0]
    other = next(s for s in multi.agents if s != seat)
    obs = ep.step({"type": "tool_call", "tool": "no_such_tool", "actor": other}, seat=seat)
    assert obs.actor == seat and ep.played[-1]["seat"] == seat


def test_tasks_are_pure_and_splits_disjoint(multi: MultiAgentEnvironment) -> None:
    from envfactory.registry import build

    fresh = build(multi.id)
    prints: dict[str, set[str]] = {}
    for split in multi.splits:
        for d in multi.difficulties:
            cell = [multi.task(split, d, i) for i in range(12)]
            assert len({t.hidden.fingerprint for t in cell}) == len(cell), "a cell repeats a task"
            for t in cell[:3]:
                again = fresh.task(split, d, int(t.task_id.rsplit("/", 1)[1]))
                assert again.public == t.public and again.hidden == t.hidden
                assert t.public.env_id == multi.id and t.task_id.startswith(f"{multi.id}/{split}/")
            prints[split] = prints.get(split, set()) | {t.hidden.fingerprint for t in cell}
    splits = list(prints.values())
    assert all(not (a & b) for i, a in enumerate(splits) for b in splits[i + 1 :])


def test_the_audit_catches_a_tampered_outcome() -> None:
    """The verifier can disagree: a result changed after play is caught."""
    c4 = world("connect_four")
    verdict, ep = play_seats(c4, c4.task("train", 1, 5), seats(c4, 3))
    assert ep.audit() == []
    ep.winner = "player_1" if ep.winner == "player_0" else "player_0"  # type: ignore[attr-defined]
    assert any("winner" in p for p in ep.audit())
    neg = world("negotiation")
    verdict, ep = play_seats(neg, neg.task("train", 2, 5), seats(neg, 3))
    assert verdict.outcome["deal"] is not None and ep.audit() == []
    ep.final = {s: 1.0 for s in neg.agents}
    assert ep.audit()


def test_cooperation_uses_the_database_verifier() -> None:
    coop = world("cooperation")
    task = coop.task("train", 3, 4)
    verdict, _ = play_seats(coop, task, seats(coop, 3))
    assert verdict.rewards == {"front": 1.0, "back": 1.0}
    names = {i.name for i in verdict.items}
    assert {"state", "no_collateral", "rules"} <= names  # the database world's rubric
    verdict, _ = play_seats(coop, task, seats(coop, 0))
    assert verdict.rewards == {"front": 0.0, "back": 0.0}


def test_proposals_are_executed_and_checked() -> None:
    ps = world("proposer_solver")
    ep = ps.episode()
    ep.reset(ps.task("train", 2, 1))
    read = {"type": "tool_call", "tool": "propose", "arguments": {"instruction": "x", "plan": []}}
    obs = ep.step(read, seat="proposer")
    assert obs.error is not None and "at least 2 steps" in obs.error.message
    nothing = [{"tool": "get_product", "arguments": {"product_id": "PRD-00001"}}] * 2
    obs = ep.step({**read, "arguments": {"instruction": "look", "plan": nothing}}, seat="proposer")
    assert obs.error is not None and "changes nothing" in obs.error.message
    obs = ep.step({**read, "arguments": {"instruction": "look", "plan": nothing}}, seat="proposer")
    assert ep.done and ep.evaluate().rewards == {"proposer": 0.0, "solver": 0.0}
