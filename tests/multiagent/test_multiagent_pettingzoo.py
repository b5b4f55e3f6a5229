"""Every multi-agent world passes PettingZoo's own API test, and plays through the AEC API."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from multiagent_helpers import MULTI, seats, world
from pettingzoo.test import api_test

from envfactory.integrations.pettingzoo import EnvfactoryAEC, aec_env, decode, encode


@pytest.mark.parametrize("env_id", MULTI)
def test_pettingzoo_api_test(env_id: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # advice about Box/Discrete spaces: ours carry text
        api_test(aec_env(env_id), num_cycles=1000)


@pytest.mark.parametrize("env_id", MULTI)
def test_scripted_seats_play_through_the_aec_api(env_id: str) -> None:
    env = world(env_id)
    aec = EnvfactoryAEC(env_id, difficulty=env.difficulties[-1])
    aec.reset(seed=3, options={"split": "validation", "index": 4})
    assert (
        aec.task is not None and aec.task.task_id == f"{env_id}/validation/{env.difficulties[-1]}/4"
    )
    players = seats(env, 3)
    for seat, p in players.items():
        p.start(aec.task, seat)
    assert aec.episode is not None
    ep = aec.episode
    turns = 0
    for agent in aec.agent_iter(10_000):
        obs, reward, terminated, truncated, info = aec.last()
        assert isinstance(obs, np.ndarray) and obs.dtype == np.uint8
        assert decode(obs) == ep.observe(agent).content[: len(decode(obs))]
        if terminated or truncated:
            assert info["scored"] and reward == ep.evaluate().rewards[agent]
            aec.step(None)
            continue
        action = players[agent].act(ep.observe(agent)).model_dump(exclude_none=True)
        aec.step(json.dumps(action))
        turns += 1
    assert not aec.agents and turns > 0 and ep.done and ep.audit() == []


def test_a_seat_is_told_its_mistake() -> None:
    aec = aec_env("connect_four")
    aec.reset(options={"index": 0})
    first = aec.agent_selection
    aec.step('{"type": "tool_call", "tool": "drop", "arguments": {"column": 9}}')
    assert aec.agent_selection == first and aec.infos[first]["error"]["code"] == "invalid_arguments"
    aec.step({"type": "tool_call", "tool": "drop", "arguments": {"column": 3}})
    assert aec.agent_selection != first and "error" not in aec.infos[first]
    assert "column 3" in aec.text(aec.agent_selection)


def test_observation_bytes_round_trip() -> None:
    text = "héllo ✓ " * 10
    assert decode(encode(text)) == text
    long = "x" * 100_000
    cut = decode(encode(long, size=1000))
    assert len(cut.encode()) <= 1000 and cut.endswith("[...]")
