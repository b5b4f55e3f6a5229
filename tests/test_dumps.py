"""Dumps after the work earn nothing (issue 42): the gold plan's look-ups, then every value
seen, in one final reply or spread over several messages to the user, is no committed answer.

Before the fix, ``dump_after_work`` earned 1.0 on conference's question tasks (a word answer
whose other columns' names were not counted) and 0.6 on hr's (a fractional answer beside whole
numbers), and ``dump_spread`` 0.6 on conference (only the final message was read).
"""

from __future__ import annotations

import pytest

import envfactory
from envfactory.contract.actions import Message, ToolCall
from envfactory.contract.tasks import Task
from envfactory.db.environment import DatabaseEnvironment
from envfactory.episode.runner import run_episode
from envfactory.policies.dumps import MODES, DumpAfterWork, dump_policies
from envfactory.policies.scripted import Oracle, write_tools
from envfactory.quality.adversary import attack, exploit_policies


def _questions(env: DatabaseEnvironment, per_difficulty: int = 4) -> list[Task]:
    """Answer-only tasks of difficulties 1 to 3."""
    out: list[Task] = []
    for d in (1, 2, 3):
        found = (t for i in range(80) if (t := env.task("test", d, i)).hidden.answers)
        out += [t for t in found if not t.hidden.target][:per_difficulty]
    return out


@pytest.mark.parametrize("world", ["conference", "hr", "library", "logistics"])
@pytest.mark.parametrize("mode", MODES)
def test_dumps_after_the_work_earn_nothing(world: str, mode: str) -> None:
    env = envfactory.make(world)
    assert isinstance(env, DatabaseEnvironment)
    writes = write_tools(env.tools("mcp"))
    tasks = _questions(env)
    assert tasks
    for task in tasks:
        assert run_episode(env, task, Oracle()).reward == 1.0, task.task_id
        verdict = run_episode(env, task, DumpAfterWork(mode, writes))  # type: ignore[arg-type]
        assert verdict.reward == 0.0, (task.task_id, mode)


def test_the_spread_keeps_the_user_talking_and_says_every_value() -> None:
    """The spread's messages ask to go ahead (the user answers, never stops), so the final
    reply is the last of several messages, each with a few values."""
    env = envfactory.make("conference")
    task = _questions(env, 1)[-1]
    episode = env.episode()
    run_episode(env, task, DumpAfterWork("dump_spread"), episode)
    assert len(episode.to_user) > 2
    assert all(m.startswith("Shall I go ahead with") for m in episode.to_user[:-1])


def test_candidates_spread_over_messages_are_counted_together() -> None:
    """The right answer alone in the final reply, after a message naming another value of its
    kind: no committed answer. Repeating the answer across messages is one value."""
    env = envfactory.make("helpdesk")
    task = next(t for t in _questions(env) if isinstance(t.hidden.answers[0], float))
    answer = f"{task.hidden.answers[0]:.2f}"
    for first, reward in ((f"Shall I say {float(answer) + 1:.2f}?", 0.0), (answer, 1.0)):
        episode = env.episode()
        episode.reset(task)
        for step in task.hidden.gold_plan:
            episode.step(ToolCall(tool=step.tool, arguments=dict(step.arguments)))
        episode.step(Message(content=f"Shall I go ahead with {first}?", final=False))
        episode.step(Message(content=f"The answer: {answer}."))
        assert episode.evaluate().reward == reward, first


def test_the_audit_runs_the_dumps_and_never_excuses_them() -> None:
    env = envfactory.make("hr")
    assert {"dump_after_work", "dump_spread"} <= {p.name for p in exploit_policies(env)}
    assert all(p.never_excused for p in dump_policies(set()))
    result = attack(env, _questions(env, 2), [])
    for mode in MODES:
        assert result.exploits[mode].did_the_work == 0
        assert result.exploits[mode].mean == 0.0


def test_a_call_that_passes_the_answer_is_no_look_up() -> None:
    """A research world commits its answer with a tool call in the gold plan: the dump skips
    it (that call is the commitment), so it earns nothing there either."""
    env = envfactory.make("research-wiki")
    task = next(t for i in range(10) if (t := env.task("test", 1, i)).hidden.answers)
    for mode in MODES:
        assert run_episode(env, task, DumpAfterWork(mode)).reward == 0.0  # type: ignore[arg-type]
