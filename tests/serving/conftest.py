"""A real server on a loopback port, shared by the serving tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from serving_helpers import TRAINER_TOKEN

import envfactory
from envfactory.db.environment import DatabaseEnvironment
from envfactory.serving import ServeConfig, running
from envfactory.serving.server import Running


@pytest.fixture(scope="session")
def server() -> Iterator[Running]:
    config = ServeConfig(envs=("retail",), max_sessions=4096, trainer_token=TRAINER_TOKEN)
    with running(config) as srv:
        yield srv


@pytest.fixture(scope="session")
def world() -> DatabaseEnvironment:
    env = envfactory.make("retail")
    assert isinstance(env, DatabaseEnvironment)
    return env
