"""Rule bypass: the gold plan with the step a stated rule demands left out, or misdirected.

A database domain states rules that demand a step before a write ("before cancelling an
order, look it up with get_order"): declared as a ``prior_call`` the verifier checks, or only
in the rule's words (a rule whose text names a read tool). A task has such a rule in play when
its gold plan makes the demanded call before the write it guards. The bypass plays the rest of
the gold plan and its reply:

- ``rule_skip``: without the demanded calls;
- ``rule_detour``: without the demanded calls, and each write they guard made with another
  write tool that sets the same fields of the same row and that no rule guards so (a
  ``prior_call`` names one tool: a second path to the same fields skips it);
- ``rule_mismatch``: with each demanded call's arguments one off (another row's id, a number
  one less, the next day), so a check that a look-up came first but not that it looked up the
  same thing pays (a demanded call with no argument to move is not in play).

Each scores what the writes got past the rule add to the plan's reward (the plan's reward less
that of the same plan without those writes, so other sub-goals' work is not counted): it earns
only where the world lets the write past the rule and the verdict does not notice. A task with
no rule in play scores 0 without an episode.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from envfactory.contract.environment import Environment
from envfactory.contract.tasks import PlanStep, Task
from envfactory.domain.spec import ActionSpec, DomainSpec
from envfactory.policies.scripted import write_tools
from envfactory.quality.search.script import Player, Step, gold_steps

Mode = Literal["skip", "mismatch", "detour"]
_ROW_ID = re.compile(r"^([A-Z][A-Z0-9]*-)(\d+)$")
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


@dataclass(frozen=True)
class Demand:
    """A call a rule demands before a write: of ``needs``, before ``write`` (None: any write),
    with the arguments ``match`` pairs ({write_param: needs_param}) agreeing."""

    needs: str
    write: str | None
    match: tuple[tuple[str, str], ...] = ()


def _spec(env: Environment) -> DomainSpec | None:
    spec = getattr(env, "spec", None)
    return spec if isinstance(spec, DomainSpec) else None


def demands(env: Environment) -> list[Demand]:
    """The calls ``env``'s rules demand before writes."""
    spec = _spec(env)
    if spec is None:
        return []
    reads = {a.name for a in spec.actions if a.kind == "read"}
    out: list[Demand] = []
    for rule in spec.rules:
        if rule.prior_call is not None:
            p = rule.prior_call
            out.append(Demand(p.needs, p.tool, tuple(p.match.items())))
        else:  # only in words: every read tool the text names
            named = set(re.findall(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b", rule.text)) & reads
            out += [Demand(tool, None) for tool in sorted(named)]
    return out


def in_play(task: Task, rules: Sequence[Demand], writes: set[str]) -> tuple[set[int], set[int]]:
    """The gold steps a rule puts in play: the demanded calls, and the writes they guard
    (indices into the gold plan)."""
    plan = task.hidden.gold_plan
    demanded: set[int] = set()
    guarded: set[int] = set()
    for i, step in enumerate(plan):
        for d in rules:
            if step.tool != d.needs:
                continue
            later = {
                j
                for j in range(i + 1, len(plan))
                if (plan[j].tool == d.write if d.write else plan[j].tool in writes)
            }
            if later:
                demanded.add(i)
                guarded |= later
    return demanded, guarded


_LOADED = re.compile(r"^(\w+)\[(\w+)\]\??$")


def _updates(action: ActionSpec) -> dict[str, tuple[str, dict[str, Any]]]:
    """The rows ``action`` updates: entity -> (the parameter naming the row, {field: value})."""
    out: dict[str, tuple[str, dict[str, Any]]] = {}
    for effect in action.effects:
        source = action.load.get(effect.update or "")
        match = _LOADED.match(source) if isinstance(source, str) else None
        if match and match.group(2) in action.params:
            entity, key = match.groups()
            out.setdefault(entity, (key, {}))[1].update(effect.set)
    return out


def detour(spec: DomainSpec, step: PlanStep, task: Task, guarded: set[str]) -> PlanStep | None:
    """``step`` made with another write tool, outside ``guarded``, that sets every field
    ``step``'s tool sets on the same row; its other parameters take ``step``'s values of the
    same name, or the target's values of the fields they set. None where there is none."""
    mine = _updates(spec.action(step.tool))
    if len(mine) != 1:
        return None
    ((entity, (key, fields)),) = mine.items()
    row = step.arguments.get(key)
    after = next((c.after or {} for c in task.hidden.target if c.id == row), {})
    for other in spec.actions:
        theirs = _updates(other).get(entity)
        if other.name in guarded or other.name == step.tool or theirs is None:
            continue
        their_key, their_fields = theirs
        if not set(fields) <= set(their_fields):
            continue
        field_of = {
            v[1:]: f
            for f, v in their_fields.items()
            if isinstance(v, str) and v[1:] in other.params
        }
        args: dict[str, Any] = {}
        for name, param in other.params.items():
            value = row if name == their_key else step.arguments.get(name)
            value = after.get(field_of.get(name, ""), value) if value is None else value
            if value is not None:
                args[name] = value
            elif param.required:
                break
        else:
            return PlanStep(tool=other.name, arguments=args)
    return None


def neighbour(value: Any) -> Any:
    """A value one off: a row id (``ORD-00124`` → ``ORD-00123``; the first → the second), a
    number (one less, or one more where that would not be positive) or an ISO date (the next
    day); any other value as it is."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return value - 1 if value > 1 else value + 1
    if not isinstance(value, str):
        return value
    if _ISO_DATE.match(value):
        return (dt.date.fromisoformat(value) + dt.timedelta(days=1)).isoformat()
    match = _ROW_ID.match(value)
    if match is None:
        return value
    prefix, digits = match.groups()
    number = int(digits) - 1 if int(digits) > 1 else int(digits) + 1
    return f"{prefix}{number:0{len(digits)}d}"


class RuleBypass:
    """The gold plan with the demanded calls skipped (``skip``) or made on another row
    (``mismatch``)."""

    def __init__(self, mode: Mode) -> None:
        self.mode = mode
        self.name = f"rule_{mode}"

    def applies(self, env: Environment) -> bool:
        return bool(demands(env))

    def plan(self, env: Environment, task: Task) -> tuple[list[Step], set[int]] | None:
        """The bypass plan of ``task`` and the gold indices of the writes it gets past a rule,
        or None where no rule is in play."""
        demanded, guarded = in_play(task, demands(env), write_tools(env.tools("mcp")))
        if not demanded:
            return None
        if self.mode == "skip":
            return [(i, s) for i, s in gold_steps(task) if i not in demanded], guarded
        if self.mode == "detour":
            return self._detour(env, task, demanded)
        moved = [
            (
                i,
                s.model_copy(
                    update={"arguments": {k: neighbour(v) for k, v in s.arguments.items()}}
                ),
            )
            if i in demanded
            else (i, s)
            for i, s in gold_steps(task)
        ]
        if moved == gold_steps(task):
            return None  # no row id to move: not in play
        return moved, guarded

    def _detour(
        self, env: Environment, task: Task, demanded: set[int]
    ) -> tuple[list[Step], set[int]] | None:
        spec = _spec(env)
        assert spec is not None  # a world with demands is a domain's
        guarded = {d.write for d in demands(env) if d.write}
        out: list[Step] = []
        moved: set[int] = set()
        for i, step in gold_steps(task):
            other = detour(spec, step, task, guarded) if step.tool in guarded else None
            if other is not None:
                moved.add(i)
            if i not in demanded:
                out.append((i, other or step))
        return (out, moved) if moved else None

    def rewards(self, env: Environment, tasks: Sequence[Task]) -> list[float]:
        player = Player(env)
        out = []
        for task in tasks:
            bypass = self.plan(env, task)
            out.append(0.0 if bypass is None else _gain(player, task, *bypass))
        player.close()
        return out


def _gain(player: Player, task: Task, steps: list[Step], past: set[int]) -> float:
    """What the writes got past a rule add to the bypass plan's reward (the rest of the plan,
    serving other sub-goals, earns its share either way)."""
    answers = task.hidden.answers
    reward = player.reward(task, steps, answers)
    if reward <= 0.0:
        return 0.0
    return max(0.0, reward - player.reward(task, [s for s in steps if s[0] not in past], answers))


def rule_searches() -> list[RuleBypass]:
    """Every rule bypass."""
    return [RuleBypass("skip"), RuleBypass("detour"), RuleBypass("mismatch")]
