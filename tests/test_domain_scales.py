"""Every hand-written domain builds at other scales of the world (``make(id, scale=...)``):
its catalogs (departments, rooms, a table grid) keep their rows, its block-laid tables scale by
whole blocks, and at every level the gold plan of a task drawn there still earns 1.0."""

from __future__ import annotations

import pytest

from envfactory.db.environment import DatabaseEnvironment
from envfactory.domain.loader import builtin_domain_files, load_domain
from envfactory.policies.scripted import Oracle
from envfactory.quality.play import play
from envfactory.world.seed import row_counts

DOMAINS = sorted(builtin_domain_files(), key=lambda p: p.stem)


@pytest.mark.parametrize("scale", [0.5, 1.6])
@pytest.mark.parametrize("path", DOMAINS, ids=[p.stem for p in DOMAINS])
def test_a_domain_builds_and_its_tasks_are_solved_at_another_scale(path, scale: float) -> None:  # type: ignore[no-untyped-def]
    spec = load_domain(path)
    large = DatabaseEnvironment(spec, seed=0, scale=scale)
    assert sum(row_counts(spec, 0, scale / 2).values()) < large.world.row_count, "no change"
    episode = large.episode()
    for level in large.difficulties:
        split = ("train", "test")[level % 2]  # each split at every other level
        task = large.task(split, level, 1)
        assert play(large, task, Oracle(), episode) == 1.0, (split, level, task.task_id)
