"""Composable rubrics: criteria that judge an episode, combined by weighted sum, gate, product
or min, with every verdict explained item by item.

A :class:`Criterion` looks at the episode (anything: the default ones read the database
episode's :class:`~envfactory.verify.facts.Evidence`) and returns a :class:`Judgement` (a score
in [0, 1] and why), or None when it does not apply to the episode. Nodes compose criteria:

- :class:`WeightedSum` -- the weighted mean of its children (weights need not sum to 1; zero
  weights are shown but do not count; no weight at all scores 0);
- :class:`Product` -- the product of its children (a failed gate zeroes it);
- :class:`Min` -- the lowest child (an empty min scores 1);
- :class:`Gate` -- its body's score when every gate passes, times the gates' scores.

Defense items (no collateral writes, rules respected, a write budget) are ordinary criteria.
:meth:`Rubric.judge` returns the reward, the flat list of leaf items a
:class:`~envfactory.contract.verdict.Verdict` carries, and a tree that shows how they combined.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Generic, Literal, TypeVar

from envfactory.contract.verdict import RubricItem, weighted_mean

E = TypeVar("E")
Kind = Literal["score", "gate"]


@dataclass(slots=True)
class Judgement:
    """A criterion's finding. ``active=False`` keeps the item in the verdict with weight 0
    (e.g. the answer item of a task that asks no question)."""

    score: float
    reason: str
    active: bool = True


@dataclass(slots=True)
class Explanation:
    """One node of a judged rubric: how its score came about (``dataclasses.asdict`` gives
    it as plain data)."""

    name: str
    op: str
    weight: float
    score: float
    reason: str = ""
    children: list[Explanation] = field(default_factory=list)


@dataclass(slots=True)
class Scored:
    score: float
    weight: float
    items: list[RubricItem]
    tree: Explanation


class Node(ABC, Generic[E]):
    """A rubric node; ``weight`` is its weight inside a parent :class:`WeightedSum`."""

    name: str
    weight: float

    @abstractmethod
    def evaluate(self, evidence: E) -> Scored | None:
        """The node's score on ``evidence``, or None when nothing in it applies."""

    @abstractmethod
    def criteria(self) -> list[Criterion[E]]:
        """The leaves, in order."""

    @abstractmethod
    def rebuild(self, fn: Callable[[Node[E]], Node[E]]) -> Node[E]:
        """A copy with ``fn`` applied to every node, children first."""


@dataclass(frozen=True)
class Criterion(Node[E]):
    """A leaf: one named check. ``kind`` is how a flat verdict reads it (``gate`` items
    multiply, ``score`` items average); inside a tree its parent decides."""

    name: str
    judge: Callable[[E], Judgement | None]
    kind: Kind = "score"
    weight: float = 1.0

    def evaluate(self, evidence: E) -> Scored | None:
        j = self.judge(evidence)
        if j is None:
            return None
        score = float(j.score)
        score = (1.0 if score > 1.0 else score) if score >= 0.0 else 0.0  # NaN and below: 0
        weight = float(self.weight) if j.active else 0.0
        item = RubricItem(  # validated: pydantic's checks beat model_construct's Python loop
            name=self.name, kind=self.kind, weight=weight, score=score, reason=str(j.reason)
        )
        tree = Explanation(
            name=self.name, op=self.kind, weight=weight, score=score, reason=j.reason
        )
        return Scored(score, weight, [item], tree)

    def criteria(self) -> list[Criterion[E]]:
        return [self]

    def rebuild(self, fn: Callable[[Node[E]], Node[E]]) -> Node[E]:
        return fn(self)


@dataclass(frozen=True)
class _Composite(Node[E]):
    name: str
    children: Sequence[Node[E]]
    weight: float = 1.0
    op: str = field(default="", init=False)

    def evaluate(self, evidence: E) -> Scored | None:
        parts = []
        for child in self.children:
            scored = child.evaluate(evidence)
            if scored is not None:
                parts.append(scored)
        score, why = self.fold(parts)
        score = min(1.0, max(0.0, score))
        items = [i for p in parts for i in p.items]
        tree = Explanation(
            name=self.name,
            op=self.op,
            weight=self.weight,
            score=score,
            reason=why,
            children=[p.tree for p in parts],
        )
        return Scored(score, self.weight, items, tree)

    @abstractmethod
    def fold(self, parts: list[Scored]) -> tuple[float, str]: ...

    def criteria(self) -> list[Criterion[E]]:
        return [leaf for c in self.children for leaf in c.criteria()]

    def rebuild(self, fn: Callable[[Node[E]], Node[E]]) -> Node[E]:
        return fn(replace(self, children=[c.rebuild(fn) for c in self.children]))


@dataclass(frozen=True)
class WeightedSum(_Composite[E]):
    op: str = field(default="weighted_sum", init=False)

    def fold(self, parts: list[Scored]) -> tuple[float, str]:
        mean = weighted_mean((p.weight, p.score) for p in parts)
        if mean is None:
            return 0.0, "nothing weighted"
        return mean, f"mean over weight {sum(p.weight for p in parts if p.weight > 0):g}"


@dataclass(frozen=True)
class Product(_Composite[E]):
    op: str = field(default="product", init=False)

    def fold(self, parts: list[Scored]) -> tuple[float, str]:
        score = math.prod(p.score for p in parts)
        zero = [p.tree.name for p in parts if p.score == 0.0]
        return score, f"zeroed by {', '.join(zero)}" if zero else "product"


@dataclass(frozen=True)
class Min(_Composite[E]):
    op: str = field(default="min", init=False)

    def fold(self, parts: list[Scored]) -> tuple[float, str]:
        if not parts:
            return 1.0, "nothing to check"
        low = min(parts, key=lambda p: p.score)
        return low.score, f"lowest: {low.tree.name}"


@dataclass(frozen=True)
class Gate(Node[E]):
    """``body`` scored only when ``gates`` pass: the body's score times every gate's score."""

    name: str
    gates: Sequence[Node[E]]
    body: Node[E]
    weight: float = 1.0

    def evaluate(self, evidence: E) -> Scored | None:
        inner = Product(self.name, [self.body, *self.gates], self.weight)
        scored = inner.evaluate(evidence)
        assert scored is not None
        scored.tree.op = "gate"
        return scored

    def criteria(self) -> list[Criterion[E]]:
        return [*self.body.criteria(), *(c for g in self.gates for c in g.criteria())]

    def rebuild(self, fn: Callable[[Node[E]], Node[E]]) -> Node[E]:
        return fn(
            replace(self, gates=[g.rebuild(fn) for g in self.gates], body=self.body.rebuild(fn))
        )


@dataclass(frozen=True, slots=True)
class Judged:
    """A rubric's result: the reward (rounded to 6 places), the leaf items, the tree."""

    reward: float
    items: list[RubricItem]
    tree: Explanation


class Rubric(Generic[E]):
    """A named tree of criteria."""

    def __init__(self, root: Node[E]) -> None:
        self.root = root
        names = [c.name for c in root.criteria()]
        if len(set(names)) != len(names):
            raise ValueError(f"rubric items share a name: {sorted(names)}")

    def judge(self, evidence: E) -> Judged:
        scored = self.root.evaluate(evidence)
        if scored is None:
            empty = Explanation(name=self.root.name, op="none", weight=0.0, score=0.0)
            return Judged(0.0, [], empty)
        return Judged(round(scored.score, 6), scored.items, scored.tree)

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.root.criteria()]

    def with_weights(self, weights: dict[str, float]) -> Rubric[E]:
        """The same rubric with some leaves re-weighted (by name)."""
        unknown = set(weights) - set(self.names)
        if unknown:
            raise ValueError(f"no rubric item {', '.join(sorted(unknown))}; items: {self.names}")

        def reweight(node: Node[E]) -> Node[E]:
            if isinstance(node, Criterion) and node.name in weights:
                return replace(node, weight=float(weights[node.name]))
            return node

        return Rubric(self.root.rebuild(reweight))


def flat(criteria: Sequence[Criterion[Any]], name: str = "reward") -> Node[Any]:
    """The classic shape: the weighted mean of the ``score`` criteria times every ``gate``
    (what :func:`~envfactory.contract.verdict.combine` computes from a flat item list)."""
    scores = [c for c in criteria if c.kind == "score"]
    gates = [c for c in criteria if c.kind == "gate"]
    return Gate(name, gates, WeightedSum("task", scores))
