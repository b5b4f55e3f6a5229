"""A terminal family's part of the shared task supply: its drafts, what splits them, their tasks."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator, Sequence

from pydantic import BaseModel

from envfactory.contract.tasks import Task
from envfactory.tasks.seeds import stable_hash
from envfactory.tasks.supply import Address
from envfactory.terminal import tools
from envfactory.terminal.checks import static_passes
from envfactory.terminal.family import STARTER, Draft, Family, TerminalHidden
from envfactory.terminal.fs import tree_hash, tree_of

PERSONA = "You are a careful assistant working in a Linux shell."
RULES = [
    "Work inside /work; the rest of the system is read-only and there is no network.",
    "Do what the request asks and nothing more; do not delete files you were not asked to.",
    "When you are done, reply with a short final message.",
]


class TerminalDrafter:
    """Drafts of one family (its starter at difficulty 0), split by what they ask, their gold
    plan and their tests; held-out drafts divide by their gold plan. A draft whose tests
    already pass on its initial files is refused."""

    def __init__(self, family: Family) -> None:
        self.family = family

    def draft(self, difficulty: int, slot: int, rng: random.Random) -> Draft:
        if difficulty == STARTER:
            return self.family.starter(rng)
        return self.family.generate(rng, difficulty)

    def split_keys(self, draft: Draft) -> Iterator[tuple[str, str]]:
        """Cheapest first: most drafts miss their split on the instruction, and their plan and
        tests need not be serialised."""
        yield "instruction", draft.instruction
        yield "solution", _dump(draft.gold)
        yield "target", _dump(draft.tests)

    def divider(self, draft: Draft) -> str:
        return _dump(draft.gold)

    def fingerprint(self, draft: Draft) -> str:
        parts = [draft.instruction]
        parts += [f.model_dump_json() for f in draft.initial_files()]
        parts += [t.model_dump_json() for t in draft.tests]
        return f"{stable_hash(*parts):016x}"

    def task(self, draft: Draft, address: Address) -> Task | None:
        initial = tree_of(draft.initial_files())
        if static_passes(draft.tests, initial):
            return None
        public = address.public(
            instruction=draft.instruction,
            persona=PERSONA,
            rules=RULES,
            tools=draft.tools or list(tools.TOOLS),
        )
        hidden = TerminalHidden(
            task_id=address.task_id,
            goals=draft.goals or [self.family.id],
            gold_plan=draft.gold,
            target=[],
            knobs={"difficulty": address.difficulty, **draft.knobs},
            fingerprint=self.fingerprint(draft),
            files=draft.initial_files(),
            tests=draft.tests,
            shape=draft.shape,
        )
        return Task(public=public, hidden=hidden, initial_hash=tree_hash(initial))


def _dump(models: Sequence[BaseModel]) -> str:
    """A split key: the models as canonical JSON."""
    return json.dumps([m.model_dump() for m in models], sort_keys=True)
