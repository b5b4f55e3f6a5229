"""The factories of the built-in research worlds (named by :mod:`.register`)."""

from __future__ import annotations

from envfactory.research.environment import ResearchEnvironment
from envfactory.research.pydocs.world import PyDocsEnvironment


def wiki(seed: int = 0, scale: float = 1.0) -> ResearchEnvironment:
    return ResearchEnvironment("research-wiki", seed=seed, scale=scale)


def pydocs(seed: int = 0, scale: float = 1.0) -> PyDocsEnvironment:
    return PyDocsEnvironment("research-pydocs", seed=seed)
