"""The user in the loop: who answers when the agent talks instead of acting."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field

STOP = "###STOP###"


class UserConfig(BaseModel):
    """Which user simulator an episode uses. ``scripted`` is deterministic and the default;
    ``llm`` asks a model behind any OpenAI-compatible endpoint to play the user."""

    kind: Literal["scripted", "llm"] = "scripted"
    base_url: str = "http://127.0.0.1:8000/v1"
    model: str = "user-simulator"
    api_key_env: str = Field("OPENAI_API_KEY", description="environment variable with the key")
    timeout_s: float = 30.0
    max_unanswered: int = Field(3, description="questions it cannot answer before it gives up")


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

    def close(self) -> None: ...
