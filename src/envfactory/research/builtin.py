"""Registers the built-in research worlds (imported by the registry)."""

from __future__ import annotations

from envfactory.registry import register
from envfactory.research.environment import ResearchEnvironment


def _wiki(seed: int = 0, scale: float = 1.0) -> ResearchEnvironment:
    return ResearchEnvironment("research-wiki", seed=seed, scale=scale)


register("research-wiki", _wiki, overwrite=True)
