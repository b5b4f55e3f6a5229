"""The agent's side of an episode: a policy chooses each action from the observation."""

from __future__ import annotations

from typing import Any, Protocol

from envfactory.contract.actions import Action, Observation
from envfactory.contract.tasks import Task


class Policy(Protocol):
    """Chooses actions: ``start`` once per episode, then ``act`` on each observation."""

    name: str

    def start(self, task: Task, tools: list[dict[str, Any]]) -> None: ...

    def act(self, observation: Observation) -> Action: ...
