"""What every research world shares: a corpus, a drafter of questions, cells of tasks, splits
by content keys, the hidden half of a task, and the four tools.

Tasks of a difficulty come from one sequence of candidate questions (a hashed permutation of
the things they start from, gone over a few times); the tasks of a (split, difficulty) cell are
the candidates that land in that split, in order, duplicates left out. So a cell never repeats a
question and every process makes the same tasks.
"""

from __future__ import annotations

import random
import threading
from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Protocol

from envfactory.contract.config import EpisodeConfig
from envfactory.contract.environment import EnvInfo, Environment
from envfactory.contract.errors import SynthesisError
from envfactory.contract.tasks import PlanStep, PublicTask, Split, Task
from envfactory.research import answers, tools
from envfactory.research.corpus import Library
from envfactory.research.episode import ResearchEpisode
from envfactory.research.hidden import ResearchHidden
from envfactory.research.plans import Draft, replayable
from envfactory.tasks.answer_balance import AnswerCap
from envfactory.tasks.seeds import TRAIN_SHARE, content_unit, stable_hash

DIFFICULTIES = [0, 1, 2, 3, 4, 5]
PASSES = 8  # times a difficulty's candidate sequence goes over its starting points


class Drafter(Protocol):
    def draft(self, difficulty: int, start: int, rng: random.Random) -> Draft | None: ...


ANSWER_SHARE = 0.05  # about the most one answer may answer of a template's tasks in a cell
PRESCAN = 600  # a difficulty's first candidates, whose answers tell how often each value comes


@dataclass
class _Cell:
    cap: AnswerCap
    slot: int = 0
    tasks: list[Task] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)
    spent: bool = False  # every candidate looked at


def held_out(env_id: str, keys: Sequence[tuple[str, str]]) -> bool | None:
    """Whether content keys ``(kind, key)`` all fall held-out (True) or all train (False);
    None when they disagree."""
    sides = {content_unit(env_id, kind, key) >= TRAIN_SHARE for kind, key in keys}
    return sides.pop() if len(sides) == 1 else None


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
        self._cells: dict[tuple[Split, int], _Cell] = {}
        self._orders: dict[int, list[int]] = {}
        self._prescans: dict[int, list[tuple[str, str]]] = {}  # difficulty -> (kind, answer)
        self._drafter: Drafter | None = None

    # -- what a world brings --------------------------------------------------------------

    @property
    @abstractmethod
    def corpus(self) -> Library:
        """The documents, built on first use and shared by every episode."""

    @abstractmethod
    def make_drafter(self) -> Drafter: ...

    @abstractmethod
    def starts(self) -> int:
        """How many starting points (entities, objects) questions are drawn from."""

    @abstractmethod
    def split_of(self, draft: Draft, wanted: Split | None = None) -> Split | None:
        """The split ``draft`` belongs to, or None when it belongs to none (or, with
        ``wanted``, not to that one)."""

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
    def drafter(self) -> Drafter:
        with self._lock:
            if self._drafter is None:
                self._drafter = self.make_drafter()
            return self._drafter

    @property
    def difficulties(self) -> list[int]:
        return list(DIFFICULTIES)

    def task(self, split: Split = "train", difficulty: int = 1, index: int = 0) -> Task:
        if difficulty not in DIFFICULTIES:
            raise SynthesisError(f"{self.id} has difficulties {DIFFICULTIES}, not {difficulty}")
        if self.max_tasks is not None and index >= self.max_tasks:
            raise SynthesisError(f"{self.id} has at most {self.max_tasks} tasks a cell")
        cell = self._filled(split, difficulty, index)
        if index >= len(cell.tasks):
            raise SynthesisError(f"{self.id} has no more {split} tasks at difficulty {difficulty}")
        return cell.tasks[index]

    def _filled(self, split: Split, difficulty: int, index: int) -> _Cell:
        """The cell, with tasks up to ``index`` made (fewer when its candidates run out)."""
        with self._lock:
            cell = self._cells.get((split, difficulty))
            if cell is None:
                cell = self._cells[split, difficulty] = _Cell(self._cap(difficulty))
            while len(cell.tasks) <= index and not cell.spent:
                self._advance(cell, split, difficulty)
            return cell

    def _order(self, difficulty: int) -> list[int]:
        order = self._orders.get(difficulty)
        if order is None:
            order = list(range(self.starts()))
            random.Random(stable_hash("order", self.id, self.seed, difficulty)).shuffle(order)
            self._orders[difficulty] = order
        return order

    def _draft(self, difficulty: int, slot: int) -> Draft | None:
        """The candidate at ``slot`` of a difficulty's sequence, if the world keeps it."""
        order = self._order(difficulty)
        rng = random.Random(stable_hash("draft", self.id, self.seed, difficulty, slot))
        draft = self.drafter.draft(difficulty, order[slot % len(order)], rng)
        return draft if draft is not None and self.keep(draft, difficulty) else None

    def _cap(self, difficulty: int) -> AnswerCap:
        """A cell's answer cap, told how often each answer comes among the difficulty's first
        ``PRESCAN`` candidates of every split (so a cell's first tasks are thinned too)."""
        offers = self._prescans.get(difficulty)
        if offers is None:
            slots = min(PRESCAN, self.passes(difficulty) * len(self._order(difficulty)))
            drafts = (self._draft(difficulty, slot) for slot in range(slots))
            offers = self._prescans[difficulty] = [(d.kind, d.answer) for d in drafts if d]
        cap = AnswerCap(ANSWER_SHARE)
        for kind, answer in offers:
            cap.offer(kind, answer)
        return cap

    def _advance(self, cell: _Cell, split: Split, difficulty: int) -> None:
        """Look at candidates until one more task of the cell is found."""
        while cell.slot < self.passes(difficulty) * len(self._order(difficulty)):
            slot = cell.slot
            cell.slot += 1
            draft = self._draft(difficulty, slot)
            if draft is None or self.split_of(draft, split) != split:
                continue
            fingerprint = f"{stable_hash(draft.instruction, draft.answer):016x}"
            if fingerprint in cell.seen:
                continue
            cell.seen.add(fingerprint)  # looked at once, taken or not
            draw = stable_hash("admit", self.id, self.seed, fingerprint) / 2**64
            if not cell.cap.admits(draft.kind, draft.answer, draw):
                continue
            plan = replayable(self.corpus, draft)
            if plan is None:
                continue
            cell.cap.add(draft.kind, draft.answer)
            index = len(cell.tasks)
            cell.tasks.append(self._task(draft, plan, split, difficulty, index, fingerprint))
            return
        cell.spent = True

    def _task(
        self, d: Draft, plan: list[PlanStep], split: Split, difficulty: int, index: int, fp: str
    ) -> Task:
        task_id = f"{self.id}/{split}/{difficulty}/{index}"
        public = PublicTask(
            task_id=task_id,
            env_id=self.id,
            split=split,
            difficulty=difficulty,
            instruction=d.instruction,
            persona=self.persona,
            rules=list(self.rules),
            tools=list(tools.TOOLS),
        )
        hidden = ResearchHidden(
            task_id=task_id,
            goals=[d.kind],
            gold_plan=plan,
            target=[],
            answers=[d.answer],
            answer_goals=[d.kind],
            knobs={"difficulty": difficulty, **d.knobs},
            needs=d.plan.needs,
            fingerprint=fp,
            kind=d.kind,
            answer_type=d.answer_type,
            accepted=answers.accepted(d.answer_type, d.answer, d.aliases),
            unreliable=d.unreliable,
            shape=d.shape,
        )
        return Task(public=public, hidden=hidden, initial_hash=self.initial_hash())

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
