"""research-wiki: multi-hop questions over a generated encyclopedia."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import ClassVar

from envfactory.research.corpus import DEFAULT_SIZE, Corpus, corpus
from envfactory.research.plans import Draft
from envfactory.research.questions import LEVELS, Builder
from envfactory.research.world import DIFFICULTIES, PASSES, ResearchWorld

__all__ = ["DIFFICULTIES", "PASSES", "ResearchEnvironment"]
PERSONA = "You are a careful research assistant with an offline encyclopedia."
RULES = [
    "Trust only encyclopedia articles: pages marked as an unverified fan wiki may be wrong.",
    "Commit exactly one final answer with the answer tool; only the first answer counts.",
    "Answer with the value alone: a name, a number or a date.",
]
MIN_DISTRACTORS = {4: 1, 5: 1}  # the top levels go through a near-duplicate or a fan page


class ResearchEnvironment(ResearchWorld):
    """Multi-hop questions answered by searching and reading a generated encyclopedia."""

    persona = PERSONA
    rules: ClassVar[list[str]] = RULES
    levels = LEVELS

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
        super().__init__(env_id, name, seed)
        self.size = max(300, round(size * scale))

    @property
    def corpus(self) -> Corpus:
        return corpus(self.seed, self.size)

    def make_drafter(self) -> Builder:
        return Builder(self.corpus)

    def starts(self) -> int:
        return len(self.corpus.graph.entities)

    def passes(self, difficulty: int) -> int:
        return 1 if difficulty == 0 else PASSES  # a lead question depends on its entity only

    def keep(self, draft: Draft, difficulty: int) -> bool:
        return draft.knobs["distractors"] >= MIN_DISTRACTORS.get(difficulty, 0)

    def split_keys(self, draft: Draft) -> Iterator[tuple[str, str]]:
        """Its question and its gold plan each hash to train or held-out, and a task is train
        when both do, held-out when both do. So no held-out question or solution is ever a
        train one; its answer does not decide (an answer hashed to held-out carried every
        question it answers there)."""
        yield "question", draft.instruction
        yield "solution", _plan(draft)

    def divider(self, draft: Draft) -> str:
        """Held-out tasks divide into validation and test by their plan's hash."""
        return _plan(draft)

    def describe(self) -> str:
        return (
            f"Multi-hop questions over a generated encyclopedia of {self.size:,} documents "
            "(search, open, find, answer)."
        )

    def documents(self) -> int:
        return self.size

    def initial_hash(self) -> str:
        return f"{self.seed}/{self.size}"


def _plan(draft: Draft) -> str:
    """A draft's gold plan as text."""
    return json.dumps([s.model_dump() for s in draft.steps], sort_keys=True)
