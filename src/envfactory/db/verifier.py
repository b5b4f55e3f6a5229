"""The verifier: compare the episode's final state and reply with the task's target.

Required changes present (row for row, ``verify.matching``), nothing else changed, rules
respected, answers given, and writes within a budget. Cost scales with the rows the episode
touched, not with the database.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from envfactory.contract.actions import CallRecord, EpisodeStatus
from envfactory.contract.tasks import HiddenTask
from envfactory.contract.verdict import RubricItem, Verdict
from envfactory.db.criteria import DEFAULT_RUBRIC, Evidence
from envfactory.domain.expr import Expr, ExprError, compile_expr
from envfactory.domain.spec import RuleSpec
from envfactory.verify.matching import match_state
from envfactory.verify.rubric import Rubric
from envfactory.world.state import RowChange

RowLookup = Callable[[Any], Mapping[str, Any] | None]
"""The row an id names, as the episode found it (None when there is none)."""


class RuleChecker:
    """The rules a verifier checks because no tool would stop the agent. A ``prior_call``
    match key ``param.field`` compares the field of the row the call's ``param`` names (an
    enrollment's student), read through the episode's ``row`` lookup."""

    def __init__(self, rules: Sequence[RuleSpec]) -> None:
        self.prior = [(r.id, r.prior_call) for r in rules if r.prior_call]
        self.invariants: list[tuple[str, str, Expr]] = [
            (r.id, r.invariant.entity, compile_expr(r.invariant.check))
            for r in rules
            if r.invariant
        ]

    def violations(
        self,
        log: Sequence[CallRecord],
        changes: Sequence[RowChange],
        row: RowLookup | None = None,
    ) -> list[str]:
        out = []
        for rule_id, p in self.prior:
            assert p is not None
            for i, call in enumerate(log):
                if not (call.ok and call.tool == p.tool):
                    continue
                if not any(
                    prev.ok
                    and prev.tool == p.needs
                    and all(
                        _argument(call.arguments, a, row) == prev.arguments.get(b)
                        for a, b in p.match.items()
                    )
                    for prev in log[:i]
                ):
                    out.append(f"{rule_id}: {p.tool} without a prior {p.needs}")
        for rule_id, entity, check in self.invariants:
            for c in changes:
                if c.table == entity and c.after is not None:
                    try:
                        ok = bool(check({"row": c.after}))
                    except ExprError:
                        ok = False
                    if not ok:
                        out.append(f"{rule_id}: {entity} {c.key} breaks it")
        return out


_MISSING = object()


def _argument(arguments: Mapping[str, Any], key: str, row: RowLookup | None) -> Any:
    """A call's argument, or with ``param.field`` that field of the row the argument names
    (a value no argument can equal when there is no such row)."""
    param, _, field = key.partition(".")
    value = arguments.get(param)
    if not field:
        return value
    named = row(value) if row is not None else None
    return _MISSING if named is None else named.get(field, _MISSING)


def verdict(
    task: HiddenTask,
    changes: Sequence[RowChange],
    log: Sequence[CallRecord],
    reply: str | None,
    rules: RuleChecker,
    write_tools: frozenset[str],
    status: EpisodeStatus,
    state_hash: str,
    disclosed: set[str] | frozenset[str] = frozenset(),
    rubric: Rubric[Evidence] | None = None,
    said: Sequence[str] = (),
    heard: Sequence[str] = (),
    row: RowLookup | None = None,
) -> Verdict:
    """Score an episode with ``rubric`` (the default one when None). Faults that are not the
    agent's get no reward at all. ``said``: every message the agent sent the user (its
    answers are read from all of them together); ``heard``: what the user said back."""
    if status in ("env_error", "infra_error"):
        item = RubricItem(name="fault", kind="gate", weight=0, score=0, reason=status)
        return Verdict(reward=None, status=status, items=[item], state_hash=state_hash)
    evidence = Evidence(
        task=task,
        changes=changes,
        state=match_state(task.target, changes),
        log=log,
        reply=reply,
        said=tuple(said),
        heard=tuple(heard),
        violations=rules.violations(log, changes, row),
        write_tools=write_tools,
        disclosed=frozenset(disclosed),
    )
    judged = (rubric or DEFAULT_RUBRIC).judge(evidence)
    return Verdict(reward=judged.reward, status=status, items=judged.items, state_hash=state_hash)
