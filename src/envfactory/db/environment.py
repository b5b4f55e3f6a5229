"""A database world as an environment: compiled world, task factory, verifier rules."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any, Literal

from envfactory.contract.config import EpisodeConfig
from envfactory.contract.environment import EnvInfo, Environment
from envfactory.contract.tasks import Split, Task
from envfactory.db.criteria import domain_rubric
from envfactory.db.episode import DatabaseEpisode
from envfactory.db.tasks import TaskFactory
from envfactory.db.verifier import RuleChecker
from envfactory.domain.loader import load_domain
from envfactory.domain.spec import DomainSpec
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
        return EnvInfo(
            id=self.id,
            kind=self.kind,
            name=self.spec.name,
            description=self.spec.description,
            tools=len(self.world.tools),
            tool_names=list(self.world.tools),
            difficulties=self.difficulties,
            tables=len(self.world.tables),
            rows=self.world.row_count,
            rules=len(self.spec.rules),
            goal_templates=len(self.spec.goals),
        )


def from_domain_file(path: str, *, seed: int = 0, scale: float = 1.0) -> DatabaseEnvironment:
    """The database world of a domain file."""
    return DatabaseEnvironment(load_domain(path), seed=seed, scale=scale)
