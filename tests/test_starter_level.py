"""Difficulty 0, the starter rung below the ladder: one sub-goal, one call, ids given, and
only that call's tool shown. The gold plan still scores 1 and doing nothing 0."""

from __future__ import annotations

import pytest

from envfactory.contract.actions import Message, ToolCall
from envfactory.contract.errors import SynthesisError
from envfactory.contract.tasks import SPLITS
from envfactory.db.tasks import TaskFactory
from envfactory.domain.loader import builtin_domain_files, load_domain
from envfactory.policies.scripted import answer_text
from envfactory.registry import make
from envfactory.world.world import World

DATABASE_WORLDS = [
    "airline", "banking", "clinic", "conference", "helpdesk", "hotel", "hr", "library",
    "logistics", "restaurant", "retail", "university",
]  # fmt: skip


@pytest.mark.parametrize("env_id", DATABASE_WORLDS)
def test_every_database_world_starts_at_a_one_call_level(env_id: str) -> None:
    env = make(env_id)
    assert env.difficulties[0] == 0 and env.difficulties[1:] == [1, 2, 3, 4, 5]
    all_tools = {t["function"]["name"] for t in env.tools()}
    for split in SPLITS:
        assert (env.capacity(split, 0) or 0) > 0
        for task in env.tasks(split, 0, 3):
            plan = task.hidden.gold_plan
            assert len(plan) == 1 and task.hidden.knobs["width"] == 1
            assert task.public.tools == [plan[0].tool] and plan[0].tool in all_tools
            for value in plan[0].arguments.values():  # ids given: every id is in the request
                if isinstance(value, str) and "-" in value and value[:3].isupper():
                    assert value in task.public.instruction


@pytest.mark.parametrize("env_id", ["hotel", "banking", "library"])
def test_the_gold_call_scores_one_and_doing_nothing_zero(env_id: str) -> None:
    env = make(env_id)
    for task in env.tasks("test", 0, 4):
        ep = env.episode()
        ep.reset(task)
        assert ep.evaluate().reward == 0.0
        ep = env.episode()
        ep.reset(task)
        step = task.hidden.gold_plan[0]
        obs = ep.step(ToolCall(tool=step.tool, arguments=step.arguments))
        assert obs.kind == "tool_result"
        ep.step(Message(content=answer_text(task.hidden.answers) or "Done.", final=True))
        assert ep.evaluate().reward == 1.0


def test_a_tool_outside_the_task_is_refused() -> None:
    env = make("hotel")
    task = env.task("train", 0, 0)
    names = [t["function"]["name"] for t in env.tools()]
    other = next(n for n in names if n not in task.public.tools)
    ep = env.episode()
    ep.reset(task)
    obs = ep.step(ToolCall(tool=other, arguments={}))
    assert obs.kind == "tool_error" and obs.error is not None
    assert obs.error.code == "unknown_tool" and other not in obs.content.split("tools are:")[1]


def test_a_domain_can_go_without_a_starter() -> None:
    hotel = next(p for p in builtin_domain_files() if p.stem == "hotel")
    spec = load_domain(hotel).model_copy(update={"starter": None})
    factory = TaskFactory(World(spec), "hotel")
    assert factory.difficulties == [1, 2, 3, 4, 5]
    with pytest.raises(SynthesisError, match=r"hotel has difficulties \[1, 2, 3, 4, 5\], not 0"):
        factory.make("train", 0, 0)
