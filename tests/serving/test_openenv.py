"""OpenEnv's own client (``openenv-core``) over our WebSocket channel."""

from __future__ import annotations

from typing import Any

from openenv.core.generic_client import GenericEnvClient
from openenv.core.mcp_client import MCPToolClient
from serving_helpers import assert_no_hidden, play_oracle

from envfactory.contract.actions import Message, Observation, ToolCall
from envfactory.db.environment import DatabaseEnvironment
from envfactory.serving.server import Running


def test_the_oracle_solves_a_task_through_openenvs_client(
    server: Running, world: DatabaseEnvironment
) -> None:
    task = world.task("train", 2, 3)
    with GenericEnvClient(base_url=f"{server.url}/openenv/retail").sync() as env:
        first = env.reset(task_id=task.task_id, episode_id="ep-1")
        assert first.observation["kind"] == "task" and not first.done
        assert first.observation["content"] == task.public.instruction
        seen: list[dict[str, Any]] = [first.observation]

        def send(action: ToolCall | Message) -> Observation:
            result = env.step(action.model_dump())
            seen.append(result.observation)
            obs = Observation.model_validate(result.observation)
            return obs.model_copy(update={"done": result.done, "reward": result.reward})

        last, steps = play_oracle(task, send, Observation.model_validate(first.observation))
        assert last.reward == 1.0
        state = env.state()
        assert state["episode_id"] == "ep-1" and state["step_count"] == steps
        assert state["done"] is True and state["status"] == "completed"
        for obs in seen:
            assert_no_hidden(str(obs), task)
        # a new reset on the same connection starts a fresh episode
        again = env.reset(task_id=task.task_id)
        assert not again.done and env.state()["step_count"] == 0


def test_seeded_resets_repeat_and_default_route_serves_first_env(server: Running) -> None:
    with GenericEnvClient(base_url=server.url).sync() as env:  # /ws: the first hosted env
        a = env.reset(seed=11).observation["content"]
        b = env.reset(seed=11).observation["content"]
        c = env.reset(seed=12).observation["content"]
        assert a == b and a != c


def test_openenv_mcp_actions(server: Running, world: DatabaseEnvironment) -> None:
    task = world.task("train", 1, 2)
    step = task.hidden.gold_plan[0]
    with MCPToolClient(base_url=f"{server.url}/openenv/retail").sync() as env:
        env.reset(task_id=task.task_id)
        names = {t.name for t in env.list_tools()}
        assert step.tool in names and {"finish", "message_user"} <= names
        result = env.call_tool(step.tool, **step.arguments)
        assert result is not None
