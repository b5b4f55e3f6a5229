"""A research world as an environment: questions over a generated encyclopedia.

Tasks of a difficulty come from one sequence of candidate questions (a hashed permutation of
the entities they start from); the tasks of a (split, difficulty) cell are the candidates that
land in that split, in order, duplicates left out. So a cell never repeats a question and every
process makes the same tasks.
"""

from __future__ import annotations

import json
import random
import threading
from dataclasses import dataclass, field
from typing import Any, Literal

from envfactory.env import EnvInfo, Environment
from envfactory.episode.base import EpisodeConfig
from envfactory.errors import SynthesisError
from envfactory.research import answers, tools
from envfactory.research.corpus import DEFAULT_SIZE, Corpus, corpus
from envfactory.research.episode import ResearchEpisode
from envfactory.research.hidden import ResearchHidden
from envfactory.research.questions import LEVELS, Builder, Draft
from envfactory.tasks.seeds import TRAIN_SHARE, content_unit, stable_hash
from envfactory.tasks.types import PublicTask, Split, Task

DIFFICULTIES = [0, 1, 2, 3, 4, 5]
PERSONA = "You are a careful research assistant with an offline encyclopedia."
RULES = [
    "Trust only encyclopedia articles: pages marked as an unverified fan wiki may be wrong.",
    "Commit exactly one final answer with the answer tool; only the first answer counts.",
    "Answer with the value alone: a name, a number or a date.",
]
PASSES = 8  # times a difficulty's candidate sequence goes over its entities
MIN_DISTRACTORS = {4: 1, 5: 1}  # the top levels go through a near-duplicate or a fan page


@dataclass
class _Cell:
    slot: int = 0
    tasks: list[Task] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)


class ResearchEnvironment(Environment):
    """Multi-hop questions answered by searching and reading a generated encyclopedia."""

    kind = "research"

    def __init__(
        self,
        env_id: str = "research-wiki",
        *,
        seed: int = 0,
        scale: float = 1.0,
        size: int = DEFAULT_SIZE,
        name: str = "Research wiki",
    ) -> None:
        """``size`` documents (times ``scale``); the corpus is built on first use."""
        self.id = env_id
        self.name = name
        self.seed = seed
        self.size = max(300, round(size * scale))
        self._lock = threading.RLock()
        self._cells: dict[tuple[Split, int], _Cell] = {}
        self._orders: dict[int, list[int]] = {}
        self._builder: Builder | None = None

    @property
    def corpus(self) -> Corpus:
        return corpus(self.seed, self.size)

    @property
    def builder(self) -> Builder:
        with self._lock:
            if self._builder is None:
                self._builder = Builder(self.corpus)
            return self._builder

    @property
    def difficulties(self) -> list[int]:
        return list(DIFFICULTIES)

    def task(self, split: Split = "train", difficulty: int = 1, index: int = 0) -> Task:
        if difficulty not in DIFFICULTIES:
            raise SynthesisError(f"{self.id} has difficulties {DIFFICULTIES}, not {difficulty}")
        with self._lock:
            cell = self._cells.setdefault((split, difficulty), _Cell())
            while len(cell.tasks) <= index:
                self._advance(cell, split, difficulty)
            return cell.tasks[index]

    def _order(self, difficulty: int) -> list[int]:
        order = self._orders.get(difficulty)
        if order is None:
            order = list(range(len(self.corpus.graph.entities)))
            random.Random(stable_hash("order", self.id, self.seed, difficulty)).shuffle(order)
            self._orders[difficulty] = order
        return order

    def _advance(self, cell: _Cell, split: Split, difficulty: int) -> None:
        """Look at candidates until one more task of the cell is found."""
        order = self._order(difficulty)
        passes = 1 if difficulty == 0 else PASSES  # a lead question depends on its entity only
        while cell.slot < passes * len(order):
            slot = cell.slot
            cell.slot += 1
            rng = random.Random(stable_hash("draft", self.id, self.seed, difficulty, slot))
            draft = self.builder.draft(difficulty, order[slot % len(order)], rng)
            if draft is None or draft.knobs["distractors"] < MIN_DISTRACTORS.get(difficulty, 0):
                continue
            if self.split_of(draft, split) != split:
                continue
            fingerprint = f"{stable_hash(draft.instruction, draft.answer):016x}"
            if fingerprint in cell.seen:
                continue
            plan = self.builder.replayable(draft)
            if plan is None:
                continue
            cell.seen.add(fingerprint)
            index = len(cell.tasks)
            cell.tasks.append(self._task(draft, plan, split, difficulty, index, fingerprint))
            return
        raise SynthesisError(f"{self.id} has no more {split} tasks at difficulty {difficulty}")

    def split_of(self, draft: Draft, wanted: Split | None = None) -> Split | None:
        """The split ``draft`` belongs to, or None when it belongs to none: its question, its
        gold plan and its answer each hash to train or held-out, and a task is train when all
        three do, held-out when all three do (as terminal worlds split). So no held-out
        question, solution or answer is ever a train one. Held-out tasks divide into
        validation and test by their plan's hash."""
        held = content_unit(self.id, "question", draft.instruction) >= TRAIN_SHARE
        if wanted is not None and held != (wanted != "train"):
            return None
        plan = json.dumps([s.model_dump() for s in draft.plan], sort_keys=True)
        if (content_unit(self.id, "solution", plan) >= TRAIN_SHARE) != held:
            return None
        target = f"{draft.answer_type}:{answers.normalise(draft.answer)}"
        if (content_unit(self.id, "target", target) >= TRAIN_SHARE) != held:
            return None
        if not held:
            return "train"
        return "validation" if content_unit(self.id, "held-out", plan) < 0.5 else "test"

    def _task(
        self, d: Draft, plan: list[Any], split: Split, difficulty: int, index: int, fp: str
    ) -> Task:
        task_id = f"{self.id}/{split}/{difficulty}/{index}"
        public = PublicTask(
            task_id=task_id,
            env_id=self.id,
            split=split,
            difficulty=difficulty,
            instruction=d.instruction,
            persona=PERSONA,
            rules=RULES,
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
            fingerprint=fp,
            kind=d.kind,
            answer_type=d.answer_type,
            accepted=answers.accepted(d.answer_type, d.answer, d.aliases),
            unreliable=d.unreliable,
            shape=d.shape,
        )
        return Task(public=public, hidden=hidden, initial_hash=f"{self.seed}/{self.size}")

    def episode(self, config: EpisodeConfig | None = None) -> ResearchEpisode:
        return ResearchEpisode(self, config)

    def tools(self, fmt: Literal["openai", "mcp"] = "openai") -> list[dict[str, Any]]:
        return tools.schemas(fmt)

    def info(self) -> EnvInfo:
        return EnvInfo(
            id=self.id,
            kind=self.kind,
            name=self.name,
            description=(
                f"Multi-hop questions over a generated encyclopedia of {self.size:,} documents "
                "(search, open, find, answer)."
            ),
            tools=len(tools.TOOLS),
            tool_names=list(tools.TOOLS),
            difficulties=self.difficulties,
            tables=0,
            rows=self.size,
            rules=len(RULES),
            goal_templates=1 + len({k for level in LEVELS.values() for k, _ in level}),
        )

    def plan_shape(self, task: Task) -> tuple[str, ...]:
        """The kind of question, the relations it follows and the fact it reads, then the gold
        plan's tools (the four tools alone say little)."""
        hidden = task.hidden
        head = [hidden.kind, *hidden.shape] if isinstance(hidden, ResearchHidden) else []
        return (*head, *(s.tool for s in hidden.gold_plan))
