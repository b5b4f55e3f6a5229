"""Questions before they are tasks, and the gold plans that answer them, for every corpus.

A :class:`Plan` records, besides its tool calls, which earlier steps each step uses the results
of: an ``open`` needs the ``search`` that showed the document, the next search needs the page
that named what it looks for, and the answer needs the reads that state it. A noisy oracle that
slips on a step the answer depends on then loses the answer, as an agent would.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from envfactory.contract.tasks import PlanStep
from envfactory.research.answers import AnswerType, normalise
from envfactory.research.corpus import Library

K = 5  # results a gold search asks for


@dataclass
class Plan:
    """Gold steps and, per step, the earlier steps whose results it uses."""

    steps: list[PlanStep] = field(default_factory=list)
    needs: list[list[int]] = field(default_factory=list)
    wanted: list[str] = field(default_factory=list)  # the document each search is for

    def add(self, step: PlanStep, *needs: int | None) -> int:
        """Append ``step``; its position."""
        self.steps.append(step)
        self.needs.append(sorted({n for n in needs if n is not None}))
        return len(self.steps) - 1

    def search(self, query: str, doc_id: str, after: int | None = None) -> int:
        """A search for ``query`` that must show ``doc_id`` (``after``: the step that gave
        the query, when the question does not)."""
        self.wanted.append(doc_id)
        return self.add(PlanStep(tool="search", arguments={"query": query, "k": K}), after)

    def open(self, doc_id: str, page: int, after: int) -> int:
        step = PlanStep(tool="open", arguments={"doc_id": doc_id, "page": page})
        return self.add(step, after)

    def find(self, doc_id: str, pattern: str, after: int) -> int:
        step = PlanStep(tool="find", arguments={"doc_id": doc_id, "pattern": pattern})
        return self.add(step, after)

    def answer(self, value: str, *after: int) -> int:
        return self.add(PlanStep(tool="answer", arguments={"value": value}), *after)


@dataclass
class Draft:
    """A question before it is given an id."""

    kind: str
    instruction: str
    plan: Plan
    answer_type: AnswerType
    answer: str
    aliases: list[str]
    unreliable: str | None  # the answer trusting unreliable pages gives (None: none on the way)
    knobs: dict[str, int] = field(default_factory=dict)
    shape: list[str] = field(default_factory=list)  # what the question follows and reads
    keys: list[str] = field(default_factory=list)  # split units it touches (pydocs: modules)

    @property
    def steps(self) -> list[PlanStep]:
        return self.plan.steps


def gives_away(d: Draft) -> bool:
    """Whether the question states its own answer."""
    text = f" {normalise(d.instruction)} "
    if d.answer_type == "name":
        return any(f" {normalise(v)} " in text for v in [d.answer, *d.aliases] if normalise(v))
    return d.answer in re.findall(r"\d+", d.instruction) + re.findall(r"-\d+", d.instruction)


def replayable(library: Library, d: Draft) -> list[PlanStep] | None:
    """The plan with each search asking for enough results to show the document it is for,
    or None when a gold search cannot find it."""
    out, wanted = list(d.steps), iter(d.plan.wanted)
    for i, step in enumerate(d.steps):
        if step.tool != "search":
            continue
        want = library.by_id[next(wanted)]
        query = str(step.arguments["query"])
        found = library.index.search(query, 20)
        if want not in found:
            return None
        k = max(K, found.index(want) + 1)
        out[i] = PlanStep(tool="search", arguments={"query": query, "k": k})
    return out
