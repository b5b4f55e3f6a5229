"""A database world as an environment: compiled world, task factory, verifier rules."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from functools import cache, lru_cache
from typing import Any, Literal

from envfactory.contract.config import EpisodeConfig
from envfactory.contract.environment import EnvInfo, Environment
from envfactory.contract.tasks import Split, Task
from envfactory.db.criteria import domain_rubric
from envfactory.db.episode import DatabaseEpisode
from envfactory.db.tasks import TaskFactory, levels
from envfactory.db.verifier import RuleChecker
from envfactory.domain.loader import load_domain
from envfactory.domain.spec import DomainSpec
from envfactory.world.seed import row_counts
from envfactory.world.tables import Row
from envfactory.world.world import World


class DatabaseEnvironment(Environment):
    """A world compiled from a domain: ``env.task(...)``, ``env.episode()``. ``rows`` gives the
    initial data instead of generating it (an imported world)."""

    kind = "db"
    blocking = False  # SQLite in memory: a step takes microseconds

    def __init__(
        self,
        spec: DomainSpec,
        *,
        seed: int = 0,
        scale: float = 1.0,
        rows: Mapping[str, Iterable[Row]] | None = None,
    ) -> None:
        self.id = spec.id
        self.spec = spec
        self.world = World(spec, seed=seed, scale=scale, rows=rows)
        self.factory = TaskFactory(self.world, self.id)
        self.rules = RuleChecker(spec.rules)
        self.rubric = domain_rubric(spec)
        self._lock = threading.Lock()
        self._make = lru_cache(maxsize=4096)(self.factory.make)

    @property
    def difficulties(self) -> list[int]:
        return self.factory.difficulties

    def task(self, split: Split = "train", difficulty: int = 1, index: int = 0) -> Task:
        with self._lock:
            return self._make(split, difficulty, index)

    def capacity(self, split: Split, difficulty: int) -> int | None:
        with self._lock:
            return self.factory.capacity(split, difficulty)

    def episode(self, config: EpisodeConfig | None = None) -> DatabaseEpisode:
        return DatabaseEpisode(self, config)

    def tools(self, fmt: Literal["openai", "mcp"] = "openai") -> list[dict[str, Any]]:
        return self.world.tool_schemas(fmt)

    def info(self) -> EnvInfo:
        world = self.world
        return domain_info(
            self.spec, self.kind, list(world.tools), len(world.tables), world.row_count,
            self.difficulties,
        )  # fmt: skip


def domain_info(
    spec: DomainSpec,
    kind: str,
    tool_names: list[str],
    tables: int,
    rows: int,
    difficulties: list[int],
) -> EnvInfo:
    """A database world's :class:`EnvInfo`: its spec's words and counts, and these."""
    return EnvInfo(
        id=spec.id,
        kind=kind,
        name=spec.name,
        description=spec.description,
        tools=len(tool_names),
        tool_names=tool_names,
        difficulties=difficulties,
        tables=tables,
        rows=rows,
        rules=len(spec.rules),
        goal_templates=len(spec.goals),
    )


def unbuilt_info(
    spec: DomainSpec,
    *,
    kind: str = DatabaseEnvironment.kind,
    seed: int = 0,
    scale: float = 1.0,
    rows: Mapping[str, list[Row]] | None = None,
    difficulties: list[int] | None = None,
) -> EnvInfo:
    """What ``DatabaseEnvironment(spec, seed=seed, scale=scale, rows=rows).info()`` gives (a
    subclass's kind and difficulties passed in), read from the spec without building the
    world: the rows it would generate counted, not made; the tools named, not compiled."""
    counts = row_counts(spec, seed, scale) if rows is None else {n: len(r) for n, r in rows.items()}
    return domain_info(
        spec,
        kind,
        list(dict.fromkeys(a.name for a in spec.actions)),  # as World.tools keys them
        len(spec.entities),  # World.tables: one per entity
        sum(counts.get(name, 0) for name in spec.entities),
        list(levels(spec)) if difficulties is None else difficulties,
    )


def from_domain_file(path: str, *, seed: int = 0, scale: float = 1.0) -> DatabaseEnvironment:
    """The database world of a domain file."""
    return DatabaseEnvironment(load_domain(path), seed=seed, scale=scale)


@cache
def domain_file_info(path: str, *, seed: int = 0, scale: float = 1.0) -> EnvInfo:
    """What ``from_domain_file(path, ...).info()`` gives, without building the world (read
    once per process, as ``make`` builds a world once: its web twin lists it again)."""
    return unbuilt_info(load_domain(path), seed=seed, scale=scale)
