"""Per-episode settings: the turn limit, the user simulator and injected tool faults."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, Field

NoiseKind = Literal["transient", "rate_limit", "timeout", "malformed"]
NOISE_KINDS: tuple[NoiseKind, ...] = ("transient", "rate_limit", "timeout", "malformed")


class NoiseConfig(BaseModel):
    """How often tool calls fail as a flaky production system's would, and how."""

    rate: float = Field(0.0, ge=0.0, le=1.0, description="chance that a tool call is faulted")
    kinds: tuple[NoiseKind, ...] = NOISE_KINDS
    seed: int = 0


class UserConfig(BaseModel):
    """Which user simulator an episode uses. ``scripted`` is deterministic and the default;
    ``llm`` asks a model behind any OpenAI-compatible endpoint to play the user."""

    kind: Literal["scripted", "llm"] = "scripted"
    base_url: str = "http://127.0.0.1:8000/v1"
    model: str = "user-simulator"
    api_key_env: str = Field("OPENAI_API_KEY", description="environment variable with the key")
    timeout_s: float = 30.0
    max_unanswered: int = Field(3, description="questions it cannot answer before it gives up")


@dataclass(frozen=True)
class EpisodeConfig:
    """Per-episode settings: the turn limit, the user simulator, injected tool faults."""

    max_steps: int = 60
    user: UserConfig = field(default_factory=UserConfig)
    noise: NoiseConfig = field(default_factory=NoiseConfig)
