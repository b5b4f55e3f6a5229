"""The in-process API: registry, episodes, tool schemas."""

from __future__ import annotations

import json

import pytest

import envfactory
from envfactory.contract.actions import Message, ToolCall
from envfactory.contract.config import EpisodeConfig
from envfactory.contract.errors import EpisodeError, UnknownEnvironment
from envfactory.db.environment import DatabaseEnvironment as Environment


def test_registry_lists_and_makes() -> None:
    ids = envfactory.list_envs()
    assert "retail" in ids
    assert envfactory.make("retail") is envfactory.make("retail")
    with pytest.raises(UnknownEnvironment):
        envfactory.make("atlantis")


def test_world_size_is_configurable() -> None:
    small = envfactory.make("retail", scale=0.5)
    assert 300 < small.world.row_count < envfactory.make("retail").world.row_count
    other = envfactory.make("retail", seed=7)
    assert other.world.base.hash != envfactory.make("retail").world.base.hash


def test_episode_lifecycle(retail: Environment) -> None:
    ep = retail.episode()
    with pytest.raises(EpisodeError):
        ep.step(Message(content="hi"))
    task = retail.task("train", 1, 0)
    obs = ep.reset(task)
    assert obs.kind == "task" and obs.content == task.public.instruction and not obs.done
    step = task.hidden.gold_plan[0]
    obs = ep.step(ToolCall(tool=step.tool, arguments=json.dumps(step.arguments)))
    assert obs.kind == "tool_result" and json.loads(obs.content) == obs.data
    obs = ep.step(Message(content="Which colour do you prefer?", final=False))
    assert obs.kind == "user" and not obs.done
    obs = ep.step({"type": "message", "content": "Bye"})
    assert obs.done and obs.kind == "end"
    after = ep.step(ToolCall(tool="get_order", arguments={}))
    assert after.done and after.error is not None and after.error.code == "episode_over"
    verdict = ep.evaluate()
    assert verdict.status == "completed"
    assert {i.name for i in verdict.items} >= {"state", "answer", "no_collateral", "rules"}


def test_turn_limit_truncates(retail: Environment) -> None:
    ep = retail.episode(EpisodeConfig(max_steps=3))
    ep.reset(retail.task("train", 3, 0))
    obs = None
    for _ in range(3):
        obs = ep.step(ToolCall(tool="get_product", arguments={"product_id": "PRD-00001"}))
    assert obs is not None and obs.done
    assert ep.evaluate().status == "truncated"


def test_reset_reuses_an_episode(retail: Environment) -> None:
    ep = retail.episode()
    for i in range(5):
        task = retail.task("validation", 2, i)
        ep.reset(task)
        assert ep.state_hash() == task.initial_hash
        for s in task.hidden.gold_plan:
            ep.step(ToolCall(tool=s.tool, arguments=s.arguments))
        changed = ep.state_hash() != task.initial_hash
        assert changed == bool(task.hidden.target)


def test_tool_schemas_in_both_forms(db_env: Environment) -> None:
    openai = db_env.tools("openai")
    mcp = db_env.tools("mcp")
    assert len(openai) == len(mcp) == db_env.info().tools
    for o, m in zip(openai, mcp, strict=True):
        assert o["type"] == "function"
        fn = o["function"]
        assert fn["name"] == m["name"] and fn["description"] == m["description"]
        schema = fn["parameters"]
        assert schema == m["inputSchema"]
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        assert set(schema["required"]) <= set(schema["properties"])
        for prop in schema["properties"].values():
            assert prop["type"] in ("string", "integer", "number", "boolean", "array")
            assert prop["description"]
