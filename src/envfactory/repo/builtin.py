"""Registers the built-in repository worlds (imported by the registry)."""

from __future__ import annotations

from envfactory.registry import register, register_unavailable
from envfactory.repo.environment import RepoEnvironment
from envfactory.repo.projects import cache_reason

ENV_ID = "repo-python"


def _make(seed: int = 0, scale: float = 1.0) -> RepoEnvironment:
    return RepoEnvironment(ENV_ID, seed=seed, scale=scale)


_why = cache_reason()
if _why is None:
    register(ENV_ID, _make, overwrite=True)
else:
    register_unavailable(ENV_ID, _why)
