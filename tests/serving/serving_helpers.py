"""Helpers of the serving tests: an oracle that acts through any protocol, hidden-field checks."""

from __future__ import annotations

from collections.abc import Callable

from envfactory.contract.actions import Message, Observation, ToolCall
from envfactory.contract.tasks import Task
from envfactory.policies.scripted import Oracle

TRAINER_TOKEN = "the-trainers-own-token"  # the shared server's trainer routes
HIDDEN_KEYS = ("gold_plan", "fingerprint", "knobs", "target", "answers", "profile", "asks")


def play_oracle(
    task: Task, send: Callable[[ToolCall | Message], Observation], first: Observation
) -> tuple[Observation, int]:
    """Play the gold plan through ``send``; returns the last observation and the step count."""
    oracle = Oracle()
    oracle.start(task, [])
    obs, steps = first, 0
    while not obs.done:
        obs = send(oracle.act(obs))
        steps += 1
        assert steps < 100, "the oracle did not finish"
    return obs, steps


def assert_no_hidden(text: str, task: Task) -> None:
    """No hidden field name and no serialised hidden half in a response body."""
    for key in HIDDEN_KEYS:
        assert f'"{key}"' not in text, f"hidden field {key!r} in a response"
    assert task.hidden.model_dump_json() not in text
    assert task.hidden.fingerprint not in text
