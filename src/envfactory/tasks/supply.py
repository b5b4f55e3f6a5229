"""The task supply: task addresses, cells, candidate orders, split by content, dedupe and
capacity, the same for every kind of world that uses it.

A kind brings a drafter: it drafts candidates, names the content that decides a candidate's
split (what it asks, its solution, its target) and what divides held-out candidates into
validation and test, fingerprints a candidate, and turns a kept one into a
:class:`~envfactory.contract.tasks.Task` (or refuses it: None). :class:`TaskSupply` does the
rest:

- **the address**: ``task(split, difficulty, index)`` refuses an unknown split or difficulty, a
  negative index or one beyond the cell with :class:`SynthesisError`; the task's id is
  ``{env}/{split}/{difficulty}/{index}`` and its public view says the same
  (:meth:`Address.public`); a drafted task at another address is refused;
- **the split guard** (:func:`split_by_content`): each content key hashes to train or held-out;
  a candidate whose keys disagree belongs to no split and is never used, so no held-out task
  asks, solves or targets anything a train task does. Every candidate of every order passes
  it, however the kind drew it;
- **the order** a cell's candidates come in, one of three:

  - :class:`SharedSequence` (the default): candidate ``slot`` of a difficulty is drafted from
    :func:`draft_rng`, the same in every process; the cells of every split read the same
    sequence and each keeps the candidates of its own split, each fingerprint once;
  - :class:`PerAddress`: each address draws its own candidates (from
    :func:`address_rng`) until one lands in its split, so a task does not depend on the
    tasks before it (there is no dedupe within a cell: the draws are independent);
  - :class:`CellStream`: the drafter yields a cell's candidates in an order of its own (a
    finite catalogue verified in batches), each fingerprint once;

- **cells** fill lazily up to the index asked for. A cell is *spent* after ``patience``
  candidates in a row give it nothing new, or when its candidates run out; a spent cell's size
  is its :meth:`~TaskSupply.capacity`, and indices beyond it are refused.
"""

from __future__ import annotations

import itertools
import random
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Generic, Literal, Protocol, TypeVar

from envfactory.contract.errors import SynthesisError
from envfactory.contract.tasks import SPLITS, PublicTask, Split, Task
from envfactory.tasks.seeds import TRAIN_SHARE, content_unit, stable_hash, task_seed

DRAWN_KEPT = 4096  # per-address tasks kept (they are drawn again, the same, when needed)
D = TypeVar("D")
D_contra = TypeVar("D_contra", contravariant=True)


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


class Drafter(Protocol[D_contra]):
    """A kind's part of the task supply: what decides a candidate's split, and its task."""

    def split_keys(self, draft: D_contra) -> Iterable[tuple[str, str]]:
        """What decides the candidate's split: ``(kind, content)`` pairs such as
        ``("instruction", text)``, ``("solution", plan)``, ``("target", state)``. Read
        lazily, cheapest first: the guard stops at the first key that rules a split out."""

    def divider(self, draft: D_contra) -> str | None:
        """What divides a held-out candidate between validation and test (its solution,
        say); None: each held-out key divides it by its own place in the held-out range,
        and they must agree (worlds split by units such as modules)."""

    def fingerprint(self, draft: D_contra) -> str:
        """What the task asks for, as text: equal fingerprints are one task."""

    def task(self, draft: D_contra, address: Address) -> Task | None:
        """The task of a candidate at ``address`` (public view from :meth:`Address.public`,
        hidden half with the fingerprint), or None when the world refuses it (it fails no
        test at the start, its answer is too common in the cell...)."""


class RandomDrafter(Drafter[D], Protocol[D]):
    """A drafter that drafts from a seeded generator (:class:`SharedSequence`,
    :class:`PerAddress`)."""

    def draft(self, difficulty: int, slot: int, rng: random.Random) -> D | None:
        """Candidate ``slot`` (its place in the sequence, or the attempt at an address) at
        ``difficulty`` (None: this draw gives none)."""


class StreamDrafter(Drafter[D], Protocol[D]):
    """A drafter that orders a cell's candidates itself (:class:`CellStream`)."""

    def stream(self, split: Split, difficulty: int) -> Iterator[D]:
        """The candidates of a cell, in order (they need not all be of ``split``)."""


def split_by_content(
    env_id: str, keys: Iterable[tuple[str, str]], divider: str | None, wanted: Split | None = None
) -> Split | None:
    """The split content keys put a candidate in, or None when they disagree (or, with
    ``wanted``, when it is not that split: the keys are then read only until one rules it
    out). A held-out candidate is validation or test by its ``divider``; with no divider, by
    each key's own place in the held-out range (the lower half is validation), all agreeing."""
    found: Split | Literal["held-out"] | None = None
    for kind, key in keys:
        side = _side(content_unit(env_id, kind, key), divided=divider is None)
        if found is None:
            found = side
            if wanted is not None and (side == "train") != (wanted == "train"):
                return None
        elif side != found:
            return None
    if found is None:
        raise SynthesisError(f"{env_id}: a candidate has no content key to split it by")
    if found == "held-out":
        found = "validation" if content_unit(env_id, "held-out", str(divider)) < 0.5 else "test"
    return found if wanted is None or found == wanted else None


def _side(unit: float, *, divided: bool) -> Split | Literal["held-out"]:
    """A content key's side: train, or held-out (validation or test when it ``divided``)."""
    if unit < TRAIN_SHARE:
        return "train"
    if not divided:
        return "held-out"
    return "validation" if unit < (1 + TRAIN_SHARE) / 2 else "test"


def check_address(
    env_id: str,
    splits: Sequence[str],
    difficulties: Sequence[int],
    split: str,
    difficulty: int,
    index: int,
) -> None:
    """Refuse an address outside a world's splits and difficulties, or a negative index, with
    :class:`SynthesisError` (also for worlds that make the task at an address themselves)."""
    if split not in splits:
        raise SynthesisError(f"{env_id} has the splits {', '.join(splits)}, not {split!r}")
    if difficulty not in difficulties:
        raise SynthesisError(f"{env_id} has difficulties {list(difficulties)}, not {difficulty}")
    if index < 0:
        raise SynthesisError(f"task indices start at 0, not {index}")


def draft_rng(env_id: str, seed: int, difficulty: int, slot: int) -> random.Random:
    """The generator of candidate ``slot`` of a difficulty's shared sequence."""
    return random.Random(stable_hash("draft", env_id, seed, difficulty, slot))


def address_rng(address: Address, seed: int, attempt: int) -> random.Random:
    """The generator of draw ``attempt`` at an address (:class:`PerAddress`)."""
    base = task_seed(address.env_id, address.split, address.difficulty, address.index)
    return random.Random(stable_hash(base, seed, attempt))


@dataclass(frozen=True)
class SharedSequence:
    """One seeded sequence of candidates per difficulty, read by every split's cell.

    ``slots``: the size of a finite sequence (a number, or one per difficulty), after which a
    cell is spent and :meth:`TaskSupply.capacity` can count it; ``patience``: candidates in a
    row without a new task before a cell is spent (None: read to the end)."""

    slots: int | Callable[[int], int] | None = None
    patience: int | None = 500


@dataclass(frozen=True)
class PerAddress:
    """Each address draws up to ``attempts`` candidates of its own and keeps the first of its
    split that the drafter turns into a task."""

    attempts: int = 400


@dataclass(frozen=True)
class CellStream:
    """The drafter's own order of a cell's candidates; ``patience`` as for
    :class:`SharedSequence`."""

    patience: int | None = None


@dataclass
class _Cell(Generic[D]):
    candidates: Iterator[D | None]
    tasks: list[Task] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)
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
        order: SharedSequence | PerAddress | CellStream | None = None,
        limit: int | None = None,
    ) -> None:
        """``order``: where candidates come from (:class:`SharedSequence` by default);
        ``limit``: the most tasks a cell holds."""
        self.env_id = env_id
        self.drafter = drafter
        self.difficulties = list(difficulties)
        self.seed = seed
        self.order = order or SharedSequence()
        self.limit = limit
        self._cells: dict[tuple[Split, int], _Cell[D]] = {}
        self._drawn: OrderedDict[Address, Task] = OrderedDict()  # the last DRAWN_KEPT
        self._lock = threading.RLock()

    def task(self, split: Split, difficulty: int, index: int) -> Task:
        """The task at (split, difficulty, index): the same in every process."""
        self._check(split, difficulty, index)
        address = Address(self.env_id, split, difficulty, index)
        with self._lock:
            if isinstance(self.order, PerAddress):
                return self._draw(address, self.order.attempts)
            cell = self._filled(split, difficulty, index)
        if index >= len(cell.tasks):
            raise SynthesisError(
                f"{self.env_id} has {len(cell.tasks)} {split} tasks at difficulty {difficulty}"
            )
        return cell.tasks[index]

    def capacity(self, split: Split, difficulty: int) -> int | None:
        """How many tasks the cell holds: known for a finite shared sequence (counted to its
        end) or a spent cell, else None."""
        order = self.order
        if isinstance(order, SharedSequence) and order.slots is not None:
            self._check(split, difficulty, 0)
            with self._lock:
                return len(self._filled(split, difficulty, None).tasks)
        cell = self._cells.get((split, difficulty))
        return len(cell.tasks) if cell is not None and cell.spent else None

    def _check(self, split: Split, difficulty: int, index: int) -> None:
        check_address(self.env_id, SPLITS, self.difficulties, split, difficulty, index)
        if self.limit is not None and index >= self.limit:
            raise SynthesisError(f"{self.env_id} has at most {self.limit} tasks a cell")

    def _made(self, draft: D, address: Address) -> Task | None:
        """The drafter's task of a candidate in the address's split, its address checked."""
        task = self.drafter.task(draft, address)
        if task is not None and (
            task.task_id != address.task_id or task.public.split != address.split
        ):
            raise SynthesisError(f"{self.env_id}: drafted task {task.task_id} is not at {address}")
        return task

    def _draw(self, address: Address, attempts: int) -> Task:
        """The first task of the address's own draws."""
        found = self._drawn.get(address)
        if found is not None:
            self._drawn.move_to_end(address)
            return found
        drafter: RandomDrafter[D] = self.drafter  # type: ignore[assignment]
        for attempt in range(attempts):
            rng = address_rng(address, self.seed, attempt)
            draft = drafter.draft(address.difficulty, attempt, rng)
            if draft is None or not self._lands(draft, address.split):
                continue
            task = self._made(draft, address)
            if task is not None:
                self._drawn[address] = task
                if len(self._drawn) > DRAWN_KEPT:
                    self._drawn.popitem(last=False)
                return task
        raise SynthesisError(f"no {address.split} task at {self.env_id} difficulty "
                             f"{address.difficulty} in {attempts} draws")  # fmt: skip

    def _lands(self, draft: D, split: Split) -> bool:
        keys = self.drafter.split_keys(draft)
        return split_by_content(self.env_id, keys, self.drafter.divider(draft), split) == split

    def _filled(self, split: Split, difficulty: int, index: int | None) -> _Cell[D]:
        """The cell with tasks up to ``index`` made (None: every task), fewer when spent."""
        cell = self._cells.get((split, difficulty))
        if cell is None:
            cell = self._cells[split, difficulty] = _Cell(self._candidates(split, difficulty))
        while not cell.spent and (index is None or len(cell.tasks) <= index):
            if self.limit is not None and len(cell.tasks) >= self.limit:
                break
            self._advance(cell, split, difficulty)
        return cell

    def _candidates(self, split: Split, difficulty: int) -> Iterator[D | None]:
        """A cell's candidates in the supply's order."""
        order = self.order
        if isinstance(order, CellStream):
            streamer: StreamDrafter[D] = self.drafter  # type: ignore[assignment]
            yield from streamer.stream(split, difficulty)
            return
        assert isinstance(order, SharedSequence)
        drafter: RandomDrafter[D] = self.drafter  # type: ignore[assignment]
        size = order.slots(difficulty) if callable(order.slots) else order.slots
        for slot in range(size) if size is not None else itertools.count():
            rng = draft_rng(self.env_id, self.seed, difficulty, slot)
            yield drafter.draft(difficulty, slot, rng)

    def _advance(self, cell: _Cell[D], split: Split, difficulty: int) -> None:
        """Look at candidates until the cell gains one task or is spent."""
        patience = self.order.patience if not isinstance(self.order, PerAddress) else None
        for tried, draft in enumerate(cell.candidates, 1):
            if draft is not None and self._lands(draft, split):
                fingerprint = self.drafter.fingerprint(draft)
                if fingerprint not in cell.seen:
                    cell.seen.add(fingerprint)  # looked at once, taken or not
                    address = Address(self.env_id, split, difficulty, len(cell.tasks))
                    task = self._made(draft, address)
                    if task is not None:
                        cell.tasks.append(task)
                        return
            if patience is not None and tried >= patience:
                break
        cell.spent = True
