"""The task supply: task addresses, cells, seeded order, split by content, dedupe and capacity,
the same for every kind of world that uses it.

A kind brings a :class:`Drafter`: it drafts a candidate from a seeded random generator, names
the content that decides the candidate's split (what it asks, its solution, its target),
fingerprints it, and turns a kept draft into a :class:`~envfactory.contract.tasks.Task`.
:class:`TaskSupply` does the rest:

- **the address**: ``task(split, difficulty, index)`` refuses an unknown split or difficulty or
  a negative index with :class:`SynthesisError`; the task's id is ``{env}/{split}/{difficulty}/
  {index}`` and its public view says the same (:meth:`Address.public`);
- **the seeded order**: candidate ``slot`` of a difficulty is drafted from
  ``stable_hash("draft", env, seed, difficulty, slot)``, the same in every process; the cells of
  every split read the same sequence and each keeps the candidates of its own split;
- **split by content** (:func:`split_by_content`): each content key hashes to train or held-out;
  a candidate whose keys disagree belongs to no split and is never used, so no held-out task
  asks, solves or targets anything a train task does. Held-out candidates divide into
  validation and test by their fingerprint;
- **dedupe**: a cell keeps a fingerprint once;
- **cells** fill lazily up to the index asked for. A cell is *spent* after ``patience``
  candidates in a row give it nothing new, or when a finite candidate space (``slots``) runs
  out; a spent cell's size is its :meth:`capacity`, and indices beyond it are refused.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

from envfactory.contract.errors import SynthesisError
from envfactory.contract.tasks import SPLITS, PublicTask, Split, Task
from envfactory.tasks.seeds import TRAIN_SHARE, content_unit, stable_hash

D = TypeVar("D")


@dataclass(frozen=True, slots=True)
class Address:
    """Where a task sits: (env, split, difficulty, index)."""

    env_id: str
    split: Split
    difficulty: int
    index: int

    @property
    def task_id(self) -> str:
        return f"{self.env_id}/{self.split}/{self.difficulty}/{self.index}"

    def public(
        self, *, instruction: str, persona: str, rules: Sequence[str], tools: Sequence[str]
    ) -> PublicTask:
        """The task's public view at this address."""
        return PublicTask(
            task_id=self.task_id,
            env_id=self.env_id,
            split=self.split,
            difficulty=self.difficulty,
            instruction=instruction,
            persona=persona,
            rules=list(rules),
            tools=list(tools),
        )


class Drafter(Protocol[D]):
    """A kind's part of the task supply."""

    def draft(self, difficulty: int, rng: random.Random) -> D | None:
        """One candidate at ``difficulty`` (None: this draw gives none)."""

    def split_keys(self, draft: D) -> Sequence[tuple[str, str]]:
        """What decides the candidate's split: ``(kind, content)`` pairs such as
        ``("instruction", text)``, ``("solution", plan)``, ``("target", state)``."""

    def fingerprint(self, draft: D) -> str:
        """What the task asks for, as text: equal fingerprints are one task."""

    def task(self, draft: D, address: Address) -> Task:
        """The task of a kept candidate at ``address`` (public view from
        :meth:`Address.public`, hidden half with the fingerprint)."""


def split_by_content(
    env_id: str, keys: Sequence[tuple[str, str]], fingerprint: str
) -> Split | None:
    """The split content keys put a candidate in, or None when they disagree."""
    sides = {content_unit(env_id, kind, key) >= TRAIN_SHARE for kind, key in keys}
    if len(sides) != 1:
        return None
    if not sides.pop():
        return "train"
    return "validation" if content_unit(env_id, "held-out", fingerprint) < 0.5 else "test"


@dataclass
class _Cell:
    tasks: list[Task] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)
    slot: int = 0
    spent: bool = False


class TaskSupply(Generic[D]):
    """The tasks of one world, by address, from its drafter. Thread-safe; tasks are made once
    and kept."""

    def __init__(
        self,
        env_id: str,
        drafter: Drafter[D],
        difficulties: Sequence[int],
        *,
        seed: int = 0,
        patience: int = 500,
        slots: int | None = None,
    ) -> None:
        """``patience``: candidates in a row without a new task before a cell is spent;
        ``slots``: the size of a finite candidate space (every cell is then counted to the
        end by :meth:`capacity`)."""
        self.env_id = env_id
        self.drafter = drafter
        self.difficulties = list(difficulties)
        self.seed = seed
        self.patience = patience
        self.slots = slots
        self._cells: dict[tuple[Split, int], _Cell] = {}
        self._lock = threading.RLock()

    def task(self, split: Split, difficulty: int, index: int) -> Task:
        """The task at (split, difficulty, index): the same in every process."""
        cell = self._filled(split, difficulty, index)
        if index >= len(cell.tasks):
            raise SynthesisError(
                f"{self.env_id} has {len(cell.tasks)} {split} tasks at difficulty {difficulty}"
            )
        return cell.tasks[index]

    def capacity(self, split: Split, difficulty: int) -> int | None:
        """How many tasks the cell holds: known for a finite candidate space, else None."""
        if self.slots is None:
            return None
        cell = self._filled(split, difficulty, self.slots)
        return len(cell.tasks)

    def _filled(self, split: Split, difficulty: int, index: int) -> _Cell:
        if split not in SPLITS:
            raise SynthesisError(f"{self.env_id} has the splits {', '.join(SPLITS)}, not {split!r}")
        if difficulty not in self.difficulties:
            raise SynthesisError(
                f"{self.env_id} has difficulties {self.difficulties}, not {difficulty}"
            )
        if index < 0:
            raise SynthesisError(f"task indices start at 0, not {index}")
        with self._lock:
            cell = self._cells.setdefault((split, difficulty), _Cell())
            while len(cell.tasks) <= index and not cell.spent:
                self._advance(cell, split, difficulty)
            return cell

    def _advance(self, cell: _Cell, split: Split, difficulty: int) -> None:
        """Look at candidates until the cell gains one task or is spent."""
        for _ in range(self.patience):
            if self.slots is not None and cell.slot >= self.slots:
                break
            rng = random.Random(stable_hash("draft", self.env_id, self.seed, difficulty, cell.slot))
            cell.slot += 1
            draft = self.drafter.draft(difficulty, rng)
            if draft is None:
                continue
            fingerprint = self.drafter.fingerprint(draft)
            keys = self.drafter.split_keys(draft)
            if (
                fingerprint in cell.seen
                or split_by_content(self.env_id, keys, fingerprint) != split
            ):
                continue
            cell.seen.add(fingerprint)
            address = Address(self.env_id, split, difficulty, len(cell.tasks))
            task = self.drafter.task(draft, address)
            if task.task_id != address.task_id or task.public.split != split:
                raise SynthesisError(
                    f"{self.env_id}: drafted task {task.task_id} is not at {address}"
                )
            cell.tasks.append(task)
            return
        cell.spent = True
