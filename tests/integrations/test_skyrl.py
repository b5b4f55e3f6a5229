"""SkyRL: the text environment made through skyrl_gym's registry, one episode per task."""

from __future__ import annotations

import pytest
import skyrl_gym
from skyrl_gym.envs.base_text_env import BaseTextEnv

from envfactory.harness.toolcalls import render_call
from envfactory.integrations.skyrl import EnvfactoryTextEnv, register_env, skyrl_rows
from envfactory.integrations.text import load_task
from envfactory.policies.scripted import answer_text

pytestmark = pytest.mark.integrations


@pytest.mark.parametrize("task_id", ["retail/train/1/0", "hotel/train/2/1"])
def test_gold_plan_episode_scores_one(task_id: str) -> None:
    register_env()
    register_env()  # idempotent
    (row,) = skyrl_rows([task_id])
    extras = {k: v for k, v in row.items() if k not in ("prompt", "env_class")}
    env = skyrl_gym.make(row["env_class"], env_config={"max_turns": 20}, extras=extras)
    assert isinstance(env, EnvfactoryTextEnv) and isinstance(env, BaseTextEnv)
    prompt, info = env.init(row["prompt"])
    assert prompt == row["prompt"] and info["task_id"] == task_id
    _, task = load_task(task_id)
    for step in task.hidden.gold_plan:
        out = env.step(render_call(step.tool, step.arguments))
        assert not out["done"] and out["reward"] == 0.0
        assert out["observations"][0]["role"] == "tool"
        assert not out["observations"][0]["content"].startswith("Error")
    out = env.step(answer_text(task.hidden.answers))
    assert out["done"] and out["reward"] == 1.0 and out["observations"] == []
    assert out["metadata"]["status"] == "completed"
    assert env.get_metrics()["reward"] == 1.0
    env.close()


def test_broken_calls_turn_limit_and_bad_extras() -> None:
    env = EnvfactoryTextEnv({"max_turns": 2}, {"extra_info": {"task_id": "retail/train/1/0"}})
    env.init([])
    out = env.step('<tool_call>{"name": "find_customer_by_email", "arguments": {</tool_call>')
    assert not out["done"] and out["observations"][0]["content"].startswith("Error")
    out = env.step("I am not sure what to do.")
    assert out["done"] and out["reward"] == 0.0  # turn limit: truncated, judged, nothing done
    with pytest.raises(ValueError, match="task_id"):
        EnvfactoryTextEnv({}, {})
