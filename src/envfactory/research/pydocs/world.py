"""research-pydocs: questions about the running interpreter's standard library, answered by
searching and reading documentation rendered from it with :mod:`inspect`.

Splits are disjoint by module: each documented module hashes to train, validation or test, and
a question belongs to the split of every module it touches, so no held-out question reads a
train module's pages or is a train question. The answer does not decide (an answer hashed to
held-out carried every question it answers there: "1" answered 80% of the test lead questions);
instead no answer fills more than a small share of a template's tasks in any cell.
"""

from __future__ import annotations

from typing import ClassVar

from envfactory.contract.tasks import Split
from envfactory.research.plans import Draft
from envfactory.research.pydocs.corpus import PyDocs, pydocs
from envfactory.research.pydocs.questions import LEVELS, Builder
from envfactory.research.world import ResearchWorld
from envfactory.tasks.seeds import TRAIN_SHARE, content_unit

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

    def module_split(self, module: str) -> Split:
        u = content_unit(self.id, "module", module)
        if u < TRAIN_SHARE:
            return "train"
        return "validation" if u < (1 + TRAIN_SHARE) / 2 else "test"

    def split_of(self, draft: Draft, wanted: Split | None = None) -> Split | None:
        splits = {self.module_split(m) for m in draft.keys}
        if len(splits) != 1:
            return None
        split = splits.pop()
        return split if wanted is None or split == wanted else None

    def passes(self, difficulty: int) -> int:
        return PASSES

    def capacity(self, split: Split, difficulty: int) -> int:
        """Tasks of a cell: all there are, up to ``max_tasks`` (made on first ask)."""
        return len(self._filled(split, difficulty, self.max_tasks - 1).tasks)

    def tasks_up_to(self, split: Split, difficulty: int, wanted: int) -> int:
        """The first ``wanted`` tasks of a cell that exist, made up to there and no further."""
        wanted = min(wanted, self.max_tasks)
        if wanted <= 0:
            return 0
        return min(wanted, len(self._filled(split, difficulty, wanted - 1).tasks))

    def describe(self) -> str:
        return (
            f"Questions about Python {self.corpus.version}'s standard library, answered from "
            "documentation rendered with inspect (search, open, find, answer)."
        )

    def initial_hash(self) -> str:
        return f"{self.id}/python{self.corpus.version}"
