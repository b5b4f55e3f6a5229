"""The Gymnasium wrapper passes Gymnasium's own checker and pays the oracle 1."""

from __future__ import annotations

import json

import gymnasium as gym
from gymnasium.utils.env_checker import check_env

from envfactory.contract.actions import Observation
from envfactory.integrations.gymnasium import TextWorld, env_name
from envfactory.policies.scripted import Oracle


def test_gymnasiums_checker_passes() -> None:
    env = gym.make(env_name("retail"))
    check_env(env.unwrapped, skip_render_check=False)
    env.close()


def test_reset_options_choose_the_task_and_the_oracle_scores_one() -> None:
    env = gym.make("envfactory.integrations.gymnasium:envfactory/retail-v0")
    world = env.unwrapped
    assert isinstance(world, TextWorld)
    obs, info = env.reset(seed=0, options={"task_id": "retail/validation/3/1"})
    assert info["task_id"] == "retail/validation/3/1" and obs == info["task"]["instruction"]
    assert world.task is not None
    oracle = Oracle()
    oracle.start(world.task, info["tools"])
    terminated = truncated = False
    reward = 0.0
    observation = Observation(kind="task", content=obs)
    while not (terminated or truncated):
        action = oracle.act(observation)
        text, r, terminated, truncated, info = env.step(action.model_dump_json())
        reward = float(r)
        observation = observation.model_copy(update={"kind": info["kind"], "content": text})
    assert terminated and reward == 1.0 and info["scored"] is True
    env.close()


def test_malformed_actions_are_observations_not_crashes() -> None:
    env = gym.make(env_name("retail"), max_steps=3)
    env.reset(seed=1)
    obs, reward, terminated, truncated, info = env.step("this is not json")
    assert "malformed_action" in obs and reward == 0.0 and not (terminated or truncated)
    env.step(json.dumps({"type": "tool_call", "tool": "no_such_tool", "arguments": {}}))
    _, reward, terminated, truncated, info = env.step("{}")
    assert truncated and not terminated and info["status"] == "truncated"
    env.close()
