"""Fixtures of the multi-agent tests: every registered multi-agent world."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from multiagent_helpers import MULTI, world

from envfactory.multiagent.environment import MultiAgentEnvironment

# The rollout tests' chat-completions helpers (tokenizer, template) serve the seat brain too.
sys.path.append(str(Path(__file__).resolve().parent.parent / "rollout"))


@pytest.fixture(params=MULTI)
def multi(request: pytest.FixtureRequest) -> MultiAgentEnvironment:
    return world(request.param)
