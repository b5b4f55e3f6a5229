"""Fixtures for the tau2-bench import: the two environments, built once per session. Every
test here skips, saying why, when tau2-bench's retail data is not where envfactory looks."""

from __future__ import annotations

import pytest

import envfactory
from envfactory.db.environment import DatabaseEnvironment
from envfactory.peers.tau2.data import missing_reason
from envfactory.peers.tau2.environment import Tau2RetailEnvironment
from envfactory.peers.tau2.tasks import Imported

REASON = missing_reason()


@pytest.fixture(autouse=True)
def _needs_tau2_data(request: pytest.FixtureRequest) -> None:
    if REASON is not None and "without_the_data" not in request.node.name:
        pytest.skip(REASON)


def _skip_without_data() -> None:
    """Session fixtures are set up before the function-scoped skip above, so they skip too."""
    if REASON is not None:
        pytest.skip(REASON)


@pytest.fixture(scope="session")
def tau2() -> Tau2RetailEnvironment:
    _skip_without_data()
    env = envfactory.make("tau2-retail")
    assert isinstance(env, Tau2RetailEnvironment)
    return env


@pytest.fixture(scope="session")
def strict() -> Tau2RetailEnvironment:
    _skip_without_data()
    env = envfactory.make("tau2-retail-strict")
    assert isinstance(env, Tau2RetailEnvironment)
    return env


@pytest.fixture(scope="session")
def procedural() -> DatabaseEnvironment:
    _skip_without_data()
    env = envfactory.make("tau2-retail-procedural")
    assert isinstance(env, DatabaseEnvironment)
    return env


@pytest.fixture(scope="session")
def imported(tau2: Tau2RetailEnvironment) -> list[Imported]:
    """The 112 tasks served, as imported, train then test."""
    return [m for split in tau2.splits for m in tau2.cells[split]]
