"""Terminal-world tests need bubblewrap; without it they skip, saying why."""

from __future__ import annotations

import pytest

from envfactory.terminal.sandbox import unavailable_reason


@pytest.fixture(autouse=True)
def _needs_sandbox() -> None:
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
