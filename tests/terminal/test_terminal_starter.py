"""Difficulty 0 of the terminal worlds: one call, spelled out in the request, only that call's
tool shown. The gold call scores 1, doing nothing 0, and a call that gets there by breaking the
source file scores 0."""

from __future__ import annotations

import pytest

import envfactory
from envfactory.contract.actions import ToolCall
from envfactory.contract.tasks import SPLITS
from envfactory.terminal.builtin import FAMILIES
from envfactory.terminal.family import TerminalHidden

TERMINAL = [family.id for family in FAMILIES]


@pytest.mark.parametrize("env_id", TERMINAL)
def test_every_terminal_world_starts_at_a_one_call_level(env_id: str) -> None:
    env = envfactory.make(env_id)
    assert env.difficulties == [0, 1, 2, 3, 4, 5]
    for split in SPLITS:
        for task in env.tasks(split, 0, 4):
            (step,) = task.hidden.gold_plan
            assert task.public.tools == [step.tool]
            spelled = step.arguments.get("command") or step.arguments["content"].strip()
            assert spelled in task.public.instruction
            ep = env.episode()
            ep.reset(task)
            assert ep.evaluate().reward == 0.0
            assert ep.step(ToolCall(tool=step.tool, arguments=step.arguments)).kind == "tool_result"
            assert ep.evaluate().reward == 1.0
            ep.close()


def test_a_tool_the_task_does_not_show_is_refused() -> None:
    env = envfactory.make("term-csv-transform")
    task = next(t for t in env.tasks("train", 0, 20) if t.public.tools == ["run_command"])
    ep = env.episode()
    ep.reset(task)
    obs = ep.step(ToolCall(tool="write_file", arguments={"path": "x.txt", "content": "x"}))
    assert obs.error is not None and obs.error.code == "unknown_tool"
    assert "run_command" in obs.content and "write_file" not in obs.content.split("tools are:")[1]
    ep.close()


def test_moving_the_source_instead_of_copying_it_scores_zero() -> None:
    env = envfactory.make("term-config-edit")
    task = next(t for t in env.tasks("test", 0, 20) if t.public.tools == ["run_command"])
    hidden = task.hidden
    assert isinstance(hidden, TerminalHidden)
    command = hidden.gold_plan[0].arguments["command"]
    ep = env.episode()
    ep.reset(task)
    ep.step(ToolCall(tool="run_command", arguments={"command": command.replace("cp ", "mv ", 1)}))
    verdict = ep.evaluate()
    assert verdict.reward == 0.0
    assert any(i.name == "source_kept" and i.score == 0.0 for i in verdict.items)
    ep.close()
