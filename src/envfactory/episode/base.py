"""The episode contract every kind of world implements (database, terminal, multi-agent).

reset(task) -> observation; step(action) -> observation (``done`` when it ends);
evaluate() -> verdict. Rollouts, servers and adapters depend on this class only.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

from envfactory.episode.noise import NoiseConfig
from envfactory.episode.types import EpisodeStatus, Observation
from envfactory.tasks.types import Task
from envfactory.users.base import UserConfig
from envfactory.verify.verdict import Verdict


@dataclass(frozen=True)
class EpisodeConfig:
    """Per-episode settings: the turn limit, the user simulator, injected tool faults."""

    max_steps: int = 60
    user: UserConfig = field(default_factory=UserConfig)
    noise: NoiseConfig = field(default_factory=NoiseConfig)


class Episode(ABC):
    """One live episode. Not thread-safe: one actor loop drives it."""

    task: Task | None = None
    done: bool = False
    status: EpisodeStatus = "truncated"
    steps: int = 0

    @abstractmethod
    def reset(self, task: Task) -> Observation:
        """Start ``task`` from its initial state; the first observation is the request."""

    @abstractmethod
    def step(self, action: Any) -> Observation:
        """Apply one action (an object, a dict or JSON text); malformed ones come back as
        ``tool_error`` observations, never as exceptions."""

    @abstractmethod
    def evaluate(self) -> Verdict:
        """The verdict on the episode so far."""

    @abstractmethod
    def state_hash(self) -> str:
        """The canonical hash of the current state (equal states, equal hashes)."""

    @abstractmethod
    def close(self) -> None:
        """Release what the episode holds (connections, sandboxes)."""
