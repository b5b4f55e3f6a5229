"""Shared fixtures: real worlds, built once per test session."""

from __future__ import annotations

import os

import properties  # noqa: F401  (loads the hypothesis profile for the whole suite)
import pytest

import envfactory
from envfactory.db.environment import DatabaseEnvironment as Environment
from envfactory.registry.sources import LIBRARY_ENV

DB_ENVS = [e for e in envfactory.list_envs() if envfactory.make(e).kind == "db"]


@pytest.fixture(scope="session")
def retail() -> Environment:
    return envfactory.make("retail")


@pytest.fixture(scope="session", params=DB_ENVS)
def db_env(request: pytest.FixtureRequest) -> Environment:
    return envfactory.make(request.param)


@pytest.fixture(autouse=True)
def _library_paths_stay_in_their_test(monkeypatch: pytest.MonkeyPatch) -> None:
    """A world path a test names is passed on to child processes through ENVFACTORY_LIBRARY
    (envfactory.registry.sources); it must not reach the next test's commands."""
    monkeypatch.setenv(LIBRARY_ENV, os.environ.get(LIBRARY_ENV, ""))
