"""Retries with exponential backoff and jitter; a server's Retry-After is honoured."""

from __future__ import annotations

import random

from pydantic import BaseModel, ConfigDict, Field


class RetryConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    attempts: int = Field(4, ge=1, description="tries per model call, the first included")
    base_s: float = Field(0.5, ge=0, description="the first backoff")
    max_s: float = Field(30.0, ge=0, description="the longest wait, Retry-After included")
    jitter: float = Field(0.5, ge=0, le=1, description="fraction of each backoff made random")


def backoff(
    config: RetryConfig, attempt: int, retry_after: float | None, rng: random.Random
) -> float:
    """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
    if retry_after is not None:
        return min(retry_after, config.max_s)
    delay: float = min(config.max_s, config.base_s * 2.0 ** (attempt - 1))
    return delay * (1.0 - config.jitter * rng.random())
