"""The environment contract: tasks by (split, difficulty, index), episodes, tools, info.

Every kind of world (database, terminal, multi-agent, imported) is an :class:`Environment`;
the registry, the CLI, rollouts and servers use nothing else.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Literal

from pydantic import BaseModel

from envfactory.contract.config import EpisodeConfig
from envfactory.contract.episode import Episode
from envfactory.contract.policy import Policy
from envfactory.contract.tasks import SPLITS, Split, Task


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
    agents: int = 1


class Environment(ABC):
    """A kind of world with a task supply. Read-only after construction; many episodes of one
    environment run side by side."""

    id: str
    kind: str = "db"
    splits: tuple[Split, ...] = SPLITS
    finite: bool = False  # a fixed task list (capacity() is its size) rather than a generator
    #: whether a step may block (a sandbox, a browser, a network call); False for worlds whose
    #: steps run in memory, which the rollout engine then runs on its loop in time slices
    blocking: bool = True
    #: the world whose tasks this one serves again through another door (a web world serves
    #: its database world's tasks in a browser); None for a world with tasks of its own
    same_tasks_as: str | None = None

    @property
    @abstractmethod
    def difficulties(self) -> list[int]:
        """The difficulty levels, lowest first."""

    @abstractmethod
    def task(self, split: Split = "train", difficulty: int = 1, index: int = 0) -> Task:
        """The task at (split, difficulty, index); the same in every process."""

    def tasks(
        self, split: Split = "train", difficulty: int = 1, n: int = 10, start: int = 0
    ) -> list[Task]:
        return [self.task(split, difficulty, i) for i in range(start, start + n)]

    @property
    def seats(self) -> tuple[str, ...]:
        """The seats of a world several agents play at once (each action names its seat as its
        ``actor``), in turn order; empty for a world of one agent. A world with seats also
        plays them as :class:`envfactory.episode.seats.SeatedWorld` says."""
        return ()

    def available(self) -> str | None:
        """Why this world's episodes cannot run on this machine (no browser, no sandbox), or
        None when they can."""
        return None

    @abstractmethod
    def episode(self, config: EpisodeConfig | None = None) -> Episode:
        """A new live episode; ``reset(task)`` it to start."""

    @abstractmethod
    def tools(self, fmt: Literal["openai", "mcp"] = "openai") -> list[dict[str, Any]]:
        """Tool schemas in OpenAI function format or MCP ``inputSchema`` form."""

    @abstractmethod
    def info(self) -> EnvInfo: ...

    def plan_shape(self, task: Task) -> tuple[str, ...]:
        """The structure of a task's gold plan, for diversity counts: its tool sequence."""
        return tuple(step.tool for step in task.hidden.gold_plan)

    def plan_tools(self, task: Task) -> list[str]:
        """The actions of a task's gold plan that the audit's tool coverage counts."""
        return [step.tool for step in task.hidden.gold_plan]

    def random_policy(self, seed: int = 0) -> Policy | None:
        """This world's own random baseline for ``check`` and ``audit`` (a web world: random
        clicks on the page's elements), or None for the generic one: random schema-valid tool
        calls (``envfactory.policies.baselines``)."""
        return None

    def noisy_oracle(self, skill: float = 0.8, seed: int = 0) -> Policy | None:
        """This world's own graded baseline (a web world: the oracle slipping on each tool
        call's browser actions), or None for the generic one: the oracle slipping on each tool
        call with probability 1 - skill."""
        return None

    def coverage_tools(self) -> list[str]:
        """The actions tool coverage is measured over: the tools (a web world: its forms)."""
        return [str(t["name"]) for t in self.tools("mcp")]

    def capacity(self, split: Split, difficulty: int) -> int | None:
        """How many distinct tasks a (split, difficulty) cell holds, when finite and known."""
        return None

    def tasks_up_to(self, split: Split, difficulty: int, wanted: int) -> int:
        """How many of the cell's first ``wanted`` tasks exist: ``wanted``, or fewer where the
        cell holds fewer (a finite world may tell without counting the whole cell)."""
        size = self.capacity(split, difficulty)
        return max(0, wanted if size is None else min(wanted, size))
