"""Shared fixtures: real worlds, built once per test session."""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

import envfactory
from envfactory.world.environment import DatabaseEnvironment as Environment

# Property tests are derandomised by default, so a run of the suite (and CI) is reproducible;
# `HYPOTHESIS_PROFILE=hunt make pytest` explores thousands of fresh cases per property instead.
settings.register_profile("repeatable", derandomize=True)
settings.register_profile("hunt", max_examples=3000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))

DB_ENVS = [e for e in envfactory.list_envs() if envfactory.make(e).kind == "db"]


@pytest.fixture(scope="session")
def retail() -> Environment:
    return envfactory.make("retail")


@pytest.fixture(scope="session", params=DB_ENVS)
def db_env(request: pytest.FixtureRequest) -> Environment:
    return envfactory.make(request.param)
