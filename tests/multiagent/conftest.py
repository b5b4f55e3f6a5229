"""Fixtures of the multi-agent tests: every registered multi-agent world."""

from __future__ import annotations

import pytest
from multiagent_helpers import MULTI, world

from envfactory.multiagent.environment import MultiAgentEnvironment


@pytest.fixture(params=MULTI)
def multi(request: pytest.FixtureRequest) -> MultiAgentEnvironment:
    return world(request.param)
