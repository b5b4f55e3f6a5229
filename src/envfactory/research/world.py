"""What every research world shares: a corpus, a drafter of questions, the content keys that
split them, the hidden half of a task, and the four tools.

Tasks come from the shared task supply (:mod:`envfactory.tasks.supply`) through a
:class:`~envfactory.research.tasks.ResearchDrafter`: tasks of a difficulty come from one
sequence of candidate questions (a hashed permutation of the things they start from, gone over
a few times); the tasks of a (split, difficulty) cell are the candidates that land in that
split, in order, duplicates left out. So a cell never repeats a question and every process
makes the same tasks.
"""

from __future__ import annotations

import threading
from abc import abstractmethod
from collections.abc import Iterable
from typing import Any, ClassVar, Literal

from envfactory.contract.config import EpisodeConfig
from envfactory.contract.environment import EnvInfo, Environment
from envfactory.contract.tasks import Split, Task
from envfactory.research import tools
from envfactory.research.corpus import Library
from envfactory.research.episode import ResearchEpisode
from envfactory.research.hidden import ResearchHidden
from envfactory.research.plans import Draft
from envfactory.research.tasks import Questions, ResearchDrafter
from envfactory.tasks.supply import SharedSequence, TaskSupply

DIFFICULTIES = [0, 1, 2, 3, 4, 5]
PASSES = 8  # times a difficulty's candidate sequence goes over its starting points


class ResearchWorld(Environment):
    """A research world: questions answered by searching and reading one corpus."""

    kind = "research"
    persona = "You are a careful research assistant."
    rules: ClassVar[list[str]] = []
    library_noun = "encyclopedia"  # what the search tool says it searches
    max_tasks: int | None = None  # the most tasks a cell holds (None: no bound)

    def __init__(self, env_id: str, name: str, seed: int = 0) -> None:
        self.id = env_id
        self.name = name
        self.seed = seed
        self._lock = threading.RLock()
        self._drafter: Questions | None = None
        self._supply: TaskSupply[Draft] | None = None

    # -- what a world brings --------------------------------------------------------------

    @property
    @abstractmethod
    def corpus(self) -> Library:
        """The documents, built on first use and shared by every episode."""

    @abstractmethod
    def make_drafter(self) -> Questions: ...

    @abstractmethod
    def starts(self) -> int:
        """How many starting points (entities, objects) questions are drawn from."""

    @abstractmethod
    def split_keys(self, draft: Draft) -> Iterable[tuple[str, str]]:
        """What decides the split ``draft`` belongs to: ``(kind, content)`` keys, cheapest
        first, that must all hash to train or all to held-out
        (:func:`~envfactory.tasks.supply.split_by_content`)."""

    @abstractmethod
    def divider(self, draft: Draft) -> str | None:
        """What divides a held-out draft between validation and test (None: each of its keys,
        which must then agree)."""

    @abstractmethod
    def describe(self) -> str:
        """One sentence for ``envfactory envs``."""

    def passes(self, difficulty: int) -> int:
        return PASSES

    def keep(self, draft: Draft, difficulty: int) -> bool:
        """Whether a draft may become a task of ``difficulty`` (a world's extra demands)."""
        return True

    levels: ClassVar[dict[int, list[tuple[str, int]]]] = {}  # level -> (question kind, hops)

    def goal_templates(self) -> int:
        """The lead question and each other kind of question."""
        return 1 + len({k for level in self.levels.values() for k, _ in level})

    def documents(self) -> int:
        """How many documents the corpus holds (for ``envfactory envs``)."""
        return len(self.corpus.docs)

    def initial_hash(self) -> str:
        """The start state every task shares: the corpus, which no tool writes."""
        return f"{self.id}/{self.seed}"

    # -- tasks ----------------------------------------------------------------------------

    @property
    def drafter(self) -> Questions:
        with self._lock:
            if self._drafter is None:
                self._drafter = self.make_drafter()
            return self._drafter

    @property
    def difficulties(self) -> list[int]:
        return list(DIFFICULTIES)

    @property
    def supply(self) -> TaskSupply[Draft]:
        """The world's tasks by address: every difficulty's candidates gone over ``passes``
        times, each cell read to the end, at most ``max_tasks`` a cell."""
        with self._lock:
            if self._supply is None:
                drafter = ResearchDrafter(self)
                order = SharedSequence(slots=drafter.slots, patience=None)
                self._supply = TaskSupply(
                    self.id, drafter, DIFFICULTIES, seed=self.seed, order=order,
                    limit=self.max_tasks,
                )  # fmt: skip
            return self._supply

    def task(self, split: Split = "train", difficulty: int = 1, index: int = 0) -> Task:
        return self.supply.task(split, difficulty, index)

    # -- the rest of the contract ---------------------------------------------------------

    def episode(self, config: EpisodeConfig | None = None) -> ResearchEpisode:
        return ResearchEpisode(self, config)

    def tools(self, fmt: Literal["openai", "mcp"] = "openai") -> list[dict[str, Any]]:
        return tools.schemas(fmt, self.library_noun)

    def info(self) -> EnvInfo:
        return EnvInfo(
            id=self.id,
            kind=self.kind,
            name=self.name,
            description=self.describe(),
            tools=len(tools.TOOLS),
            tool_names=list(tools.TOOLS),
            difficulties=self.difficulties,
            tables=0,
            rows=self.documents(),
            rules=len(self.rules),
            goal_templates=self.goal_templates(),
        )

    def plan_shape(self, task: Task) -> tuple[str, ...]:
        """The kind of question, what it follows and the fact it reads, then the gold plan's
        tools (the four tools alone say little)."""
        hidden = task.hidden
        head = [hidden.kind, *hidden.shape] if isinstance(hidden, ResearchHidden) else []
        return (*head, *(s.tool for s in hidden.gold_plan))
