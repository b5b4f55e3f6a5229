"""A research world's part of the shared task supply (:mod:`envfactory.tasks.supply`).

Candidate ``slot`` of a difficulty starts from ``order[slot % len(order)]``, the order a hashed
permutation of the world's starting points, gone over ``passes`` times; the world's keys split
it. A candidate that lands in a cell is then admitted by the cell's answer cap, so no answer
fills more than about ``ANSWER_SHARE`` of a template's tasks, and kept only when its gold plan
replays on the corpus.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from typing import Protocol

from envfactory.contract.tasks import Split, Task
from envfactory.research import answers, tools
from envfactory.research.corpus import Library
from envfactory.research.hidden import ResearchHidden
from envfactory.research.plans import Draft, replayable
from envfactory.tasks.answer_balance import AnswerCap
from envfactory.tasks.seeds import stable_hash
from envfactory.tasks.supply import Address, draft_rng

ANSWER_SHARE = 0.05  # about the most one answer may answer of a template's tasks in a cell
PRESCAN = 600  # a difficulty's first candidates, whose answers tell how often each value comes


class Questions(Protocol):
    """A world's drafter of questions: one from each starting point, seeded."""

    def draft(self, difficulty: int, start: int, rng: random.Random) -> Draft | None: ...


class QuestionWorld(Protocol):
    """What a :class:`ResearchDrafter` reads from its world (a ``ResearchWorld``)."""

    @property
    def id(self) -> str: ...

    @property
    def seed(self) -> int: ...

    @property
    def persona(self) -> str: ...

    @property
    def rules(self) -> Sequence[str]: ...

    @property
    def corpus(self) -> Library: ...

    @property
    def drafter(self) -> Questions: ...

    def starts(self) -> int: ...

    def passes(self, difficulty: int) -> int: ...

    def keep(self, draft: Draft, difficulty: int) -> bool: ...

    def split_keys(self, draft: Draft) -> Iterable[tuple[str, str]]: ...

    def divider(self, draft: Draft) -> str | None: ...

    def initial_hash(self) -> str: ...


class ResearchDrafter:
    """Drafts a research world's questions for the task supply, and caps each cell's answers.
    Called under the supply's lock."""

    def __init__(self, world: QuestionWorld) -> None:
        self.world = world
        self._orders: dict[int, list[int]] = {}
        self._offers: dict[int, list[tuple[str, str]]] = {}  # difficulty -> (kind, answer)
        self._caps: dict[tuple[Split, int], AnswerCap] = {}

    def order(self, difficulty: int) -> list[int]:
        """The world's starting points in a difficulty's hashed order."""
        order = self._orders.get(difficulty)
        if order is None:
            world = self.world
            order = list(range(world.starts()))
            random.Random(stable_hash("order", world.id, world.seed, difficulty)).shuffle(order)
            self._orders[difficulty] = order
        return order

    def slots(self, difficulty: int) -> int:
        """How long a difficulty's candidate sequence is."""
        return self.world.passes(difficulty) * len(self.order(difficulty))

    def draft(self, difficulty: int, slot: int, rng: random.Random) -> Draft | None:
        order = self.order(difficulty)
        draft = self.world.drafter.draft(difficulty, order[slot % len(order)], rng)
        return draft if draft is not None and self.world.keep(draft, difficulty) else None

    def split_keys(self, draft: Draft) -> Iterable[tuple[str, str]]:
        return self.world.split_keys(draft)

    def divider(self, draft: Draft) -> str | None:
        return self.world.divider(draft)

    def fingerprint(self, draft: Draft) -> str:
        return f"{stable_hash(draft.instruction, draft.answer):016x}"

    def task(self, draft: Draft, address: Address) -> Task | None:
        """The task, unless the cell's answer cap refuses the draft or its plan does not
        replay."""
        world = self.world
        cap = self._cap(address.split, address.difficulty)
        fingerprint = self.fingerprint(draft)
        draw = stable_hash("admit", world.id, world.seed, fingerprint) / 2**64
        if not cap.admits(draft.kind, draft.answer, draw):
            return None
        plan = replayable(world.corpus, draft)
        if plan is None:
            return None
        cap.add(draft.kind, draft.answer)
        public = address.public(
            instruction=draft.instruction, persona=world.persona, rules=world.rules,
            tools=list(tools.TOOLS),
        )  # fmt: skip
        hidden = ResearchHidden(
            task_id=address.task_id,
            goals=[draft.kind],
            gold_plan=plan,
            target=[],
            answers=[draft.answer],
            answer_goals=[draft.kind],
            knobs={"difficulty": address.difficulty, **draft.knobs},
            needs=draft.plan.needs,
            fingerprint=fingerprint,
            kind=draft.kind,
            answer_type=draft.answer_type,
            accepted=answers.accepted(draft.answer_type, draft.answer, draft.aliases),
            unreliable=draft.unreliable,
            shape=draft.shape,
        )
        return Task(public=public, hidden=hidden, initial_hash=world.initial_hash())

    def _cap(self, split: Split, difficulty: int) -> AnswerCap:
        """A cell's answer cap, told how often each answer comes among the difficulty's first
        ``PRESCAN`` candidates of every split (so a cell's first tasks are thinned too)."""
        cap = self._caps.get((split, difficulty))
        if cap is None:
            cap = self._caps[split, difficulty] = AnswerCap(ANSWER_SHARE)
            for kind, answer in self._prescan(difficulty):
                cap.offer(kind, answer)
        return cap

    def _prescan(self, difficulty: int) -> list[tuple[str, str]]:
        offers = self._offers.get(difficulty)
        if offers is None:
            env_id, seed = self.world.id, self.world.seed
            drafts = (
                self.draft(difficulty, slot, draft_rng(env_id, seed, difficulty, slot))
                for slot in range(min(PRESCAN, self.slots(difficulty)))
            )
            offers = self._offers[difficulty] = [(d.kind, d.answer) for d in drafts if d]
        return offers
