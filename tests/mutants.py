"""Planted defects for the audit's searches: a built-in domain file with one thing changed."""

from __future__ import annotations

import re
from pathlib import Path

import envfactory
from envfactory.contract.environment import Environment
from envfactory.contract.tasks import Task

DOMAINS = Path(envfactory.__file__).parent / "domains"


def mutant(tmp_path: Path, domain: str, old: str, new: str, *more: tuple[str, str]) -> Environment:
    """``domain``'s world with the one occurrence of ``old`` in its file replaced by ``new``
    (and so for each further pair in ``more``)."""
    text = (DOMAINS / f"{domain}.yaml").read_text()
    for before, after in ((old, new), *more):
        assert text.count(before) == 1, f"{before!r} is not once in {domain}.yaml"
        text = text.replace(before, after)
    name = re.sub(r"[^a-z0-9_]", "_", f"{domain}_{tmp_path.name}".lower())  # ids are unique
    path = tmp_path / f"{name}.yaml"
    path.write_text(text.replace(f"id: {domain}\n", f"id: {name}\n", 1))
    return envfactory.make(path)


def tasks_of(env: Environment, goal: str, n: int = 8, difficulty: int = 1) -> list[Task]:
    """The first ``n`` test tasks of ``difficulty`` that pursue ``goal``."""
    out = [t for t in env.tasks("test", difficulty, 80) if goal in t.hidden.goals]
    assert len(out) >= 3, f"too few {goal} tasks"
    return out[:n]
