"""Leak scan: hidden task state shown before the agent has resolved it.

Two leaks, each scored per task:

- ``answer_in_request``: the request states the answer it asks for, in any form
  (:func:`~envfactory.verify.spoken.stated_in`: digits, words, units, spacing), other than
  as one option of a choice the grader counts as rivals. A finding,
  not a played exploit: a task scores the share of its answers its instruction states,
  whether or not a policy would find them.
- ``listed_target``: a read tool called with no value from the instruction (no arguments, or
  only a schema's enum values) lists a row the task must change (its target, or a row its
  setup broke). The exploit plays "the first row the shortest such listing shows" (the
  generic read showing fewest rows of the target's kind): the generic reads,
  then the gold steps on a target row, each target swapped for the first listed row of its
  kind (the other steps, which resolve references or serve other sub-goals, are left out,
  and so is the reply). It earns only where the listing singles out the target, so the
  reference never needs resolving.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from envfactory.contract.environment import Environment
from envfactory.contract.tasks import PlanStep, Task
from envfactory.policies.scripted import write_tools
from envfactory.quality.search.script import Player, Step, gold_steps
from envfactory.verify.answers import gives, grade
from envfactory.verify.spoken import stated_in

_ROW_ID = re.compile(r"\b([A-Z][A-Z0-9]*-)\d+\b")
MAX_GENERIC = 12  # generic read calls per task
MAX_ENUM = 6  # values tried of an enum parameter


class AnswerInRequest:
    """The share of a task's answers that its own request states."""

    name = "answer_in_request"

    def applies(self, env: Environment) -> bool:
        return True

    def rewards(self, env: Environment, tasks: Sequence[Task]) -> list[float]:
        return [_stated_share(t) for t in tasks]


def _stated_share(task: Task) -> float:
    answers = task.hidden.answers
    if not answers:
        return 0.0
    return sum(_leaks(task, a) for a in answers) / len(answers)


def _leaks(task: Task, answer: Any) -> bool:
    """Whether the request gives ``answer`` away: it states it, and not as one option of a
    choice ("visa, mastercard, or amex") — where the grader reads it there, a leak is a
    request that, said back, earns the answer."""
    text = task.public.instruction
    if not stated_in(text, answer):
        return False
    if not gives(text, answer):
        return True  # stated in a form the grader does not read ("12 point 5")
    return grade(text, [answer], task.hidden.answer_key)[0] > 0


def generic_calls(env: Environment) -> list[PlanStep]:
    """Read calls that need no value from an instruction: a tool with no required parameter,
    with none; a tool whose required parameters are all enums, with each value of the first
    (the others at their first value)."""
    writes = write_tools(env.tools("mcp"))
    out: list[PlanStep] = []
    for tool in env.tools("mcp"):
        schema = tool.get("inputSchema", {})
        props: dict[str, Any] = schema.get("properties", {})
        required = [p for p in schema.get("required", []) if p in props]
        if tool["name"] in writes or tool["name"] == "answer":
            continue
        if not required:
            out.append(PlanStep(tool=tool["name"], arguments={}))
        elif all("enum" in props[p] for p in required):
            first, rest = required[0], {p: props[p]["enum"][0] for p in required[1:]}
            out += [
                PlanStep(tool=tool["name"], arguments={**rest, first: value})
                for value in props[first]["enum"][:MAX_ENUM]
            ]
    return out[:MAX_GENERIC]


def target_ids(task: Task) -> list[str]:
    """The rows a task must change that exist before it starts, and the rows its setup
    broke."""
    rows = [c.id for c in task.hidden.target if c.before is not None]
    return list(dict.fromkeys([*rows, *(c.id for c in task.hidden.setup)]))


def first_listed(shown: Sequence[str]) -> dict[str, str]:
    """For each kind of row (id prefix), the first id of the generic read that shows fewest
    rows of that kind (the earliest of equals): a short listing singles rows out, and a long
    one listed before it does not hide it."""
    best: dict[str, tuple[int, str]] = {}
    for text in shown:
        ids: dict[str, list[str]] = {}
        for match in _ROW_ID.finditer(text):
            kind = ids.setdefault(match.group(1), [])
            if match.group(0) not in kind:
                kind.append(match.group(0))
        for prefix, rows in ids.items():
            if prefix not in best or len(rows) < best[prefix][0]:
                best[prefix] = (len(rows), rows[0])
    return {prefix: row for prefix, (_, row) in best.items()}


def swapped(value: Any, swap: dict[str, str]) -> Any:
    """``value`` with every string that ``swap`` names replaced, in lists and dicts too."""
    if isinstance(value, str):
        return swap.get(value, value)
    if isinstance(value, list):
        return [swapped(v, swap) for v in value]
    if isinstance(value, dict):
        return {k: swapped(v, swap) for k, v in value.items()}
    return value


class ListedTarget:
    """The gold plan on the first row of its kind that a generic read lists."""

    name = "listed_target"

    def applies(self, env: Environment) -> bool:
        return bool(generic_calls(env))

    def rewards(self, env: Environment, tasks: Sequence[Task]) -> list[float]:
        calls = generic_calls(env)
        player = Player(env)
        out = [self._reward(player, calls, task) for task in tasks]
        player.close()
        return out

    def _reward(self, player: Player, calls: list[PlanStep], task: Task) -> float:
        targets = target_ids(task)
        if not targets or not calls:
            return 0.0
        listed = first_listed(player.observe(task, calls))
        swap = {t: listed[p] for t in targets if (p := _prefix(t)) in listed}
        if not swap:
            return 0.0  # no listing shows a row of the target's kind
        steps: list[Step] = [(-1, call) for call in calls]
        for i, step in gold_steps(task):
            if swapped(step.arguments, dict.fromkeys(swap, "")) != step.arguments:  # on a target
                arguments = swapped(step.arguments, swap)
                steps.append((i, step.model_copy(update={"arguments": arguments})))
        return player.reward(task, steps)


def _prefix(row_id: str) -> str:
    match = _ROW_ID.fullmatch(row_id)
    return match.group(1) if match else row_id


def leak_searches() -> list[AnswerInRequest | ListedTarget]:
    """Every leak scan."""
    return [AnswerInRequest(), ListedTarget()]
