"""An environment: a compiled world, its task factory and verifier, behind a small API."""

from __future__ import annotations

import threading
from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel

from envfactory.domain.spec import DomainSpec
from envfactory.episode.episode import Episode, EpisodeConfig
from envfactory.tasks.synth import TaskFactory
from envfactory.tasks.types import Split, Task
from envfactory.verify.verifier import RuleChecker
from envfactory.world.world import World


class EnvInfo(BaseModel):
    """What ``envfactory envs`` lists about an environment."""

    id: str
    kind: str
    name: str
    description: str
    tools: int
    tool_names: list[str]
    difficulties: list[int]
    tables: int
    rows: int
    rules: int
    goal_templates: int


class Environment:
    """A database world: ``env.task(split, difficulty, index)`` and ``env.episode()``."""

    kind = "db"

    def __init__(self, spec: DomainSpec, *, seed: int = 0, scale: float = 1.0) -> None:
        self.id = spec.id
        self.spec = spec
        self.world = World(spec, seed=seed, scale=scale)
        self.factory = TaskFactory(self.world, self.id)
        self.rules = RuleChecker(spec.rules)
        self._lock = threading.Lock()
        self._make = lru_cache(maxsize=4096)(self.factory.make)

    @property
    def difficulties(self) -> list[int]:
        return self.factory.difficulties

    def task(self, split: Split = "train", difficulty: int = 1, index: int = 0) -> Task:
        """The task at (split, difficulty, index); the same in every process."""
        with self._lock:
            return self._make(split, difficulty, index)

    def tasks(
        self, split: Split = "train", difficulty: int = 1, n: int = 10, start: int = 0
    ) -> list[Task]:
        return [self.task(split, difficulty, i) for i in range(start, start + n)]

    def episode(self, config: EpisodeConfig | None = None) -> Episode:
        """A new live episode; ``reset(task)`` it to start."""
        return Episode(self, config)

    def tools(self, fmt: Literal["openai", "mcp"] = "openai") -> list[dict[str, Any]]:
        """Tool schemas in OpenAI function format or MCP ``inputSchema`` form."""
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
