"""Registers the built-in research worlds (imported by the registry)."""

from __future__ import annotations

from envfactory.registry import register
from envfactory.research.environment import ResearchEnvironment
from envfactory.research.pydocs.world import PyDocsEnvironment


def _wiki(seed: int = 0, scale: float = 1.0) -> ResearchEnvironment:
    return ResearchEnvironment("research-wiki", seed=seed, scale=scale)


register("research-wiki", _wiki, overwrite=True)


def _pydocs(seed: int = 0, scale: float = 1.0) -> PyDocsEnvironment:
    return PyDocsEnvironment("research-pydocs", seed=seed)


register("research-pydocs", _pydocs, overwrite=True)
