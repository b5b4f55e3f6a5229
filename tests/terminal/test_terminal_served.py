"""A terminal world through the same HTTP server and client as the database worlds."""

from __future__ import annotations

import envfactory
from envfactory.contract.actions import Message, ToolCall
from envfactory.serving import ServeConfig, running
from envfactory.serving.client import connect


def test_terminal_world_over_http() -> None:
    env_id = "term-permissions"
    local = envfactory.make(env_id)
    task = local.task("test", 3, 4)
    with (
        running(ServeConfig(envs=(env_id,), max_sessions=8)) as server,
        connect(server.url, env_id) as remote,
    ):
        assert remote.info().kind == "terminal"
        assert remote.task("test", 3, 4) == task.public
        episode = remote.episode()
        obs = episode.reset(remote.task("test", 3, 4))
        assert obs.kind == "task"
        for step in task.hidden.gold_plan:
            obs = episode.step(ToolCall(tool=step.tool, arguments=step.arguments))
            assert obs.kind == "tool_result", obs.content
        episode.step(Message(content="Done."))
        verdict = episode.evaluate()
        assert verdict.reward == 1.0 and verdict.status == "completed"
        episode.close()
        lazy = remote.episode()
        lazy.reset(remote.task("test", 3, 4))
        lazy.step(Message(content="Done."))
        assert lazy.evaluate().reward == 0.0
        lazy.close()
