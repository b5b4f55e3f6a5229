"""research-pydocs: questions about the running interpreter's standard library, answered by
searching and reading documentation rendered from it with :mod:`inspect`.

Splits are disjoint by module: each documented module hashes to train, validation or test, and
a question belongs to the split of every module it touches, so no held-out question reads a
train module's pages or is a train question. The answer does not decide (an answer hashed to
held-out carried every question it answers there: "1" answered 80% of the test lead questions);
instead no answer fills more than a small share of a template's tasks in any cell.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from envfactory.contract.errors import SynthesisError
from envfactory.contract.tasks import Split
from envfactory.research.plans import Draft
from envfactory.research.pydocs.corpus import PyDocs, pydocs
from envfactory.research.pydocs.questions import LEVELS, Builder
from envfactory.research.world import ResearchWorld
from envfactory.tasks.supply import split_by_content

PASSES = 24  # times a difficulty's candidates go over the documented objects
MAX_TASKS = 1000
RULES = [
    "The documentation describes this Python version's standard library; answer from it.",
    "Commit exactly one final answer with the answer tool; only the first answer counts.",
    "Answer with the value alone: a name or a number (a default as Python writes it).",
]


class PyDocsEnvironment(ResearchWorld):
    """Questions about the standard library's modules, classes, functions and parameters.
    A real corpus holds so many questions: each cell is a fixed list (``finite``), of at most
    MAX_TASKS."""

    finite = True

    persona = "You are a careful research assistant with the Python standard library's docs."
    rules: ClassVar[list[str]] = RULES
    levels = LEVELS
    library_noun = "documentation"

    def __init__(
        self, env_id: str = "research-pydocs", *, seed: int = 0, max_tasks: int = MAX_TASKS
    ) -> None:
        """``max_tasks``: the most tasks a (split, difficulty) cell holds; all a cell could
        hold are drafted when its capacity is first asked (seconds a cell at 1,000)."""
        super().__init__(env_id, "Research: Python docs", seed)
        self.max_tasks: int = max_tasks

    @property
    def corpus(self) -> PyDocs:
        return pydocs()

    def make_drafter(self) -> Builder:
        return Builder(self.corpus)

    def starts(self) -> int:
        return len(self.corpus.objects)

    def split_keys(self, draft: Draft) -> Iterable[tuple[str, str]]:
        """The modules a question touches: it belongs to their split when they share one."""
        return [("module", module) for module in draft.keys]

    def divider(self, draft: Draft) -> None:
        """None: each held-out module is validation or test by its own hash."""
        return None

    def module_split(self, module: str) -> Split | None:
        """The split of a module's questions."""
        return split_by_content(self.id, [("module", module)], None)

    def passes(self, difficulty: int) -> int:
        return PASSES

    def capacity(self, split: Split, difficulty: int) -> int | None:
        """Tasks of a cell: all there are, up to ``max_tasks`` (made on first ask)."""
        return self.supply.capacity(split, difficulty)

    def tasks_up_to(self, split: Split, difficulty: int, wanted: int) -> int:
        """The first ``wanted`` tasks of a cell that exist, made up to there and no further."""
        wanted = min(wanted, self.max_tasks)
        if wanted <= 0:
            return 0
        try:
            self.task(split, difficulty, wanted - 1)
        except SynthesisError:  # the cell is spent before it: its size is known
            return min(wanted, self.capacity(split, difficulty) or 0)
        return wanted

    def describe(self) -> str:
        return (
            f"Questions about Python {self.corpus.version}'s standard library, answered from "
            "documentation rendered with inspect (search, open, find, answer)."
        )

    def initial_hash(self) -> str:
        return f"{self.id}/python{self.corpus.version}"
