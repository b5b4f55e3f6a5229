"""Campaign worlds: K requests over one evolving state, on a clock with events."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import envfactory
from envfactory.campaign.environment import CampaignEnvironment, campaign
from envfactory.campaign.episode import CampaignEpisode
from envfactory.campaign.tool import CLOSE
from envfactory.contract.actions import Message, ToolCall
from envfactory.contract.errors import SynthesisError
from envfactory.domain.loader import builtin_domain_files, parse_domain
from envfactory.episode.runner import run_episode
from envfactory.openapi.compile import compile_document
from envfactory.openapi.document import read_document
from envfactory.openapi.environment import OpenAPIEnvironment
from envfactory.policies.scripted import NoOp, Oracle, answer_text

SHOP = Path(__file__).parent.parent / "openapi" / "specs" / "shop-swagger2.json"


@pytest.fixture(scope="module")
def retail() -> CampaignEnvironment:
    env = envfactory.make("campaign-retail")
    assert isinstance(env, CampaignEnvironment)
    return env


def _oracle_steps(ep: CampaignEpisode) -> None:
    """Play the open request's gold plan (no reply)."""
    request = ep.current
    assert request is not None
    for step in request.task.hidden.gold_plan:
        ep.step(ToolCall(tool=step.tool, arguments=step.arguments))


def test_every_builtin_database_domain_has_a_campaign() -> None:
    ids = set(envfactory.list_envs())
    assert {f"campaign-{p.stem}" for p in builtin_domain_files()} <= ids


def test_oracle_solves_and_doing_nothing_earns_nothing(retail: CampaignEnvironment) -> None:
    task = retail.task("train", 1, 0)
    verdict = run_episode(retail, task, Oracle())
    assert verdict.reward == 1.0
    assert [i.name for i in verdict.items] == ["request_1", "request_2", "no_damage"]
    assert CLOSE in [s.tool for s in task.hidden.gold_plan]
    assert run_episode(retail, task, NoOp()).reward == 0.0


def test_a_skipped_request_costs_itself_only(retail: CampaignEnvironment) -> None:
    ep = retail.episode()
    ep.reset(retail.task("train", 1, 0))
    obs = ep.step(ToolCall(tool=CLOSE, arguments={"reply": "Done."}))  # request 1 skipped
    assert obs.kind == "tool_result" and "Request 2 of 2" in obs.content
    request = ep.current
    assert request is not None and request.number == 2
    _oracle_steps(ep)  # request 2 was made from the state request 1 left: still solvable
    ep.step(Message(content=answer_text(request.task.hidden.answers)))
    verdict = ep.evaluate()
    assert ep.done and verdict.item("request_1").score == 0.0
    assert verdict.item("request_2").score == 1.0 and verdict.reward == 0.5


def test_a_late_close_earns_nothing(retail: CampaignEnvironment) -> None:
    ep = retail.episode()
    ep.reset(retail.task("train", 2, 0))
    request = ep.current
    assert request is not None and request.due is not None
    while ep.clock <= request.due:  # dawdle past the deadline: each action takes a minute
        ep.step(ToolCall(tool="no_such_tool", arguments={}))
    _oracle_steps(ep)
    ep.step(ToolCall(tool=CLOSE, arguments={"reply": answer_text(request.task.hidden.answers)}))
    verdict = ep.evaluate()
    assert request.late() and verdict.item("request_1").score == 0.0
    assert "late" in verdict.item("request_1").reason


def test_events_fire_on_the_clock_and_change_the_state(retail: CampaignEnvironment) -> None:
    task = retail.task("train", 3, 0)
    ep = retail.episode()
    assert run_episode(retail, task, Oracle(), ep).reward == 1.0
    assert ep.fired and all(minute <= ep.clock for minute, _ in ep.fired)
    assert task.hidden.knobs["events"] == len(ep.fired)
    shown = [e for r in ep.requests for e in r.events]
    assert len(shown) == len(ep.fired)


def test_bad_actions_are_errors_not_crashes(retail: CampaignEnvironment) -> None:
    ep = retail.episode()
    ep.reset(retail.task("train", 1, 1))
    for bad in ({"tool": CLOSE, "arguments": {}}, {"tool": CLOSE, "arguments": {"reply": 3}}):
        obs = ep.step(ToolCall(**bad))  # type: ignore[arg-type]
        assert obs.kind == "tool_error" and not obs.done
    assert ep.step("{not json").kind == "tool_error"
    assert ep.current is not None and ep.current.number == 1


def test_held_out_campaigns_draw_held_out_tasks(retail: CampaignEnvironment) -> None:
    def requests(split: str, index: int) -> list[str]:
        ep = retail.episode()
        run_episode(retail, retail.task(split, 1, index), Oracle(), ep)  # type: ignore[arg-type]
        return [r.task.task_id for r in ep.requests]

    test = [t for i in range(3) for t in requests("test", i)]
    assert test and all("/test/" in t for t in test)
    train = {retail.task("train", 1, i).hidden.fingerprint for i in range(3)}
    assert not train & {retail.task("test", 1, i).hidden.fingerprint for i in range(3)}


def test_any_database_world_is_wrappable() -> None:
    doc = compile_document(read_document(SHOP), SHOP.name)
    env = campaign(OpenAPIEnvironment(parse_domain(doc, SHOP.name), scale=0.3))
    assert env.id.startswith("campaign-")
    assert run_episode(env, env.task("train", 1, 0), Oracle()).reward == 1.0
    with pytest.raises(SynthesisError):
        campaign(envfactory.make("negotiation"))


SCRIPT = """
import json, envfactory
env = envfactory.make("campaign-retail")
out = [[t.public.model_dump_json(), t.initial_hash, t.hidden.fingerprint]
       for t in (env.task("train", 1, 0), env.task("test", 2, 1))]
print(json.dumps(out))
"""


def test_campaign_tasks_are_the_same_in_every_process() -> None:
    def run(seed: str) -> object:
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run(
            [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, check=True
        )
        return json.loads(out.stdout)

    assert run("1") == run("4242")


def test_a_fork_is_an_independent_live_copy(retail: CampaignEnvironment) -> None:
    task = retail.task("train", 2, 0)
    parent = retail.episode()
    parent.reset(task)
    parent.step(ToolCall(tool=CLOSE, arguments={"reply": "Done."}))  # into request 2
    child, untouched = parent.fork(), parent.fork()
    start = untouched.state_hash()
    assert child.state_hash() == parent.state_hash() == start
    request = parent.current
    assert request is not None and request.task.hidden.target
    for ep in (parent, child):  # the same actions: the same state and verdict
        _oracle_steps(ep)
    assert child.state_hash() == parent.state_hash() != start
    assert child.evaluate() == parent.evaluate()
    assert untouched.state_hash() == start  # saw neither's writes
    assert untouched.evaluate().item("request_2").score == 0.0
    reply = {"reply": answer_text(request.task.hidden.answers)}
    parent.step(ToolCall(tool=CLOSE, arguments=reply))  # the parent moves on to request 3
    assert parent.current is not None and parent.current.number == 3
    assert child.current is not None and child.current.number == 2
    for ep in (untouched, child, parent):
        ep.close()
