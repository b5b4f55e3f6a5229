"""The criteria of a database world's verdict, and the rubric a domain's data makes of them.

The default rubric is the weighted mean of ``state`` and ``answer`` times the defense gates
``no_collateral``, ``rules``, ``asked_user`` (tasks where the user holds facts back) and
``write_budget``. A domain's ``rubric:`` section re-weights score items, chooses how they
combine (weighted sum, min, product), adds items written as expressions over the episode's
facts, and sets the write budget; gates always multiply.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from envfactory.contract.actions import CallRecord
from envfactory.contract.errors import DomainError
from envfactory.contract.tasks import HiddenTask
from envfactory.domain.expr import Expr, ExprError, compile_expr
from envfactory.domain.spec import RUBRIC_FACTS, DomainSpec, RubricItemSpec, WriteBudgetSpec
from envfactory.verify.answers import grade_conversation
from envfactory.verify.rubric import Criterion, Judgement, Min, Node, Product, Rubric, WeightedSum
from envfactory.verify.rubric import Gate as GateNode
from envfactory.world.state import RowChange


@dataclass(frozen=True)
class Evidence:
    """Everything a database world's criteria judge; the answer's grade is computed once."""

    task: HiddenTask
    changes: Sequence[RowChange]
    state: tuple[int, list[str], list[str]]  # match_state: matched, missing, collateral
    log: Sequence[CallRecord]
    reply: str | None
    violations: Sequence[str]
    write_tools: frozenset[str]
    disclosed: frozenset[str] = field(default_factory=frozenset)
    said: Sequence[str] = ()  # every message to the user (the final reply last); () : the reply
    heard: Sequence[str] = ()  # what the user said back

    @cached_property
    def answer(self) -> tuple[float, str]:
        return grade_conversation(
            self.reply, self.said, self.heard, self.task.answers, self.task.answer_key
        )

    @property
    def writes(self) -> int:
        return sum(1 for c in self.log if c.tool in self.write_tools)

    @property
    def gold_writes(self) -> int:
        return sum(1 for s in self.task.gold_plan if s.tool in self.write_tools)

    def facts(self, tools: Sequence[str], entities: Sequence[str]) -> dict[str, Any]:
        """The names a domain's rubric expressions read (``RUBRIC_FACTS``)."""
        matched, missing, collateral = self.state
        return {
            "calls": len(self.log),
            "writes": self.writes,
            "failed": sum(1 for c in self.log if not c.ok),
            "calls_to": {t: 0 for t in tools} | Counter(c.tool for c in self.log),
            "changed": {e: 0 for e in entities} | Counter(c.table for c in self.changes),
            "required": len(self.task.target),
            "matched": matched,
            "missing": len(missing),
            "collateral": len(collateral),
            "reply": self.reply or "",
            "answered": self.answer[0],
            "gold_calls": len(self.task.gold_plan),
            "gold_writes": self.gold_writes,
            "asked": len(self.disclosed),
        }


def _state(ev: Evidence) -> Judgement:
    matched, missing, _ = ev.state
    n = len(ev.task.target)
    why = f"{matched} of {n} required changes made" + (
        f"; {', '.join(missing[:3])}" if missing else ""
    )
    return Judgement(matched / n if n else 1.0, why, active=bool(n))


def _answer(ev: Evidence) -> Judgement:
    score, why = ev.answer
    return Judgement(score, why, active=bool(ev.task.answers))


def _no_collateral(ev: Evidence) -> Judgement:
    collateral = ev.state[2]
    if collateral:
        return Judgement(0.0, "changed what was not asked: " + ", ".join(collateral[:3]))
    return Judgement(1.0, "nothing else changed")


def _rules(ev: Evidence) -> Judgement:
    if ev.violations:
        return Judgement(0.0, "; ".join(ev.violations[:3]))
    return Judgement(1.0, "all rules respected")


def _asked_user(ev: Evidence) -> Judgement | None:
    if not ev.task.profile:
        return None
    unasked = sorted(set(ev.task.profile) - set(ev.disclosed))
    if unasked:
        return Judgement(0.0, f"acted without asking the user for: {', '.join(unasked)}")
    return Judgement(1.0, "asked the user for what only the user knows")


@dataclass(frozen=True)
class _WriteBudget:
    spec: WriteBudgetSpec

    def __call__(self, ev: Evidence) -> Judgement:
        budget = int(self.spec.per_gold_write * ev.gold_writes) + self.spec.slack
        writes = ev.writes
        return Judgement(float(writes <= budget), f"{writes} write calls (budget {budget})")


@dataclass(frozen=True)
class _Expression:
    """A domain's own item: an expression over the episode's facts."""

    item: RubricItemSpec
    expr: Expr
    tools: tuple[str, ...]
    entities: tuple[str, ...]

    def __call__(self, ev: Evidence) -> Judgement:
        try:
            value = self.expr(ev.facts(self.tools, self.entities))
        except ExprError as exc:
            return Judgement(0.0, f"{self.item.check!r} could not be evaluated: {exc}")
        if self.item.kind == "gate":
            ok = bool(value)
            return Judgement(float(ok), "holds" if ok else self.item.reason or "does not hold")
        try:
            score = float(value)
        except (TypeError, ValueError):
            return Judgement(0.0, f"{self.item.check!r} is not a number")
        return Judgement(score, self.item.reason or f"{self.item.check} = {score:g}")


_COMBINE: dict[str, Callable[[str, list[Node[Evidence]]], Node[Evidence]]] = {
    "weighted_sum": WeightedSum,
    "min": Min,
    "product": Product,
}


def _compile(item: RubricItemSpec, spec: DomainSpec) -> Criterion[Evidence]:
    try:
        expr = compile_expr(item.check)
    except DomainError as exc:
        raise DomainError(f"{spec.id}: rubric item {item.name}: {exc}") from None
    if unknown := sorted(set(expr.names) - set(RUBRIC_FACTS)):
        raise DomainError(
            f"{spec.id}: rubric item {item.name} reads {unknown}; "
            f"it may read: {', '.join(RUBRIC_FACTS)}"
        )
    judge = _Expression(item, expr, tuple(a.name for a in spec.actions), tuple(spec.entities))
    return Criterion(item.name, judge, item.kind, item.weight if item.kind == "score" else 0.0)


def domain_rubric(spec: DomainSpec | None = None) -> Rubric[Evidence]:
    """The rubric of a domain: the default one, as its ``rubric:`` section changes it."""
    r = spec.rubric if spec is not None else None
    extra = [_compile(i, spec) for i in r.items] if r is not None and spec is not None else []
    scores: list[Node[Evidence]] = [
        Criterion("state", _state, "score", 1.0),
        Criterion("answer", _answer, "score", 1.0),
        *(c for c in extra if c.kind == "score"),
    ]
    gates: list[Node[Evidence]] = [
        Criterion("no_collateral", _no_collateral, "gate", 0.0),
        Criterion("rules", _rules, "gate", 0.0),
        Criterion("asked_user", _asked_user, "gate", 0.0),
        Criterion(
            "write_budget",
            _WriteBudget(r.write_budget if r is not None else WriteBudgetSpec()),
            "gate",
            0.0,
        ),
        *(c for c in extra if c.kind == "gate"),
    ]
    combine = _COMBINE[r.combine if r is not None else "weighted_sum"]
    rubric: Rubric[Evidence] = Rubric(GateNode("reward", gates, combine("task", scores)))
    return rubric.with_weights(r.weights) if r is not None and r.weights else rubric


DEFAULT_RUBRIC = domain_rubric()
