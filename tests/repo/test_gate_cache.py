"""The gate's analyses are kept: a verdict never parses a pristine file twice."""

from __future__ import annotations

import pytest

from envfactory.repo import projects
from envfactory.repo.gate import analyse

WHY = projects.cache_reason()
pytestmark = pytest.mark.skipif(WHY is not None, reason=WHY or "")


def test_the_gate_keeps_every_pristine_file_of_the_largest_project() -> None:
    """An episode that deleted every source file changes them all: its verdict analyses
    each pristine file once for both gates (and the next verdict not at all)."""
    most = max(len(projects.source_files(p)) for p in projects.PROJECTS)
    assert (analyse.cache_info().maxsize or 0) > most
