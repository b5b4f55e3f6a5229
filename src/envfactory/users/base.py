"""The user in the loop: who answers when the agent talks instead of acting."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

STOP = "###STOP###"


@dataclass(frozen=True, slots=True)
class UserReply:
    """What the user says back; ``stop`` ends the episode (the agent reported, or the user gave
    up), and the message it answered is the reply graded."""

    text: str
    facts: dict[str, Any] = field(default_factory=dict)
    stop: bool = False


@dataclass(frozen=True, slots=True)
class Situation:
    """What the user can see when it answers: its own request and the facts only it knows.
    Nothing else: not the target, the expected answers or the episode's changes, so nothing
    the user says can tell the agent whether its work or its answer is right."""

    instruction: str
    profile: dict[str, Any]


class UserSimulator(Protocol):
    def reply(self, message: str, situation: Situation) -> UserReply: ...

    def fork(self) -> UserSimulator:
        """An independent copy holding the conversation so far (an episode's fork)."""
        ...

    def close(self) -> None: ...
