"""tau2's hand-written retail tasks as envfactory tasks.

Each tau2 task keeps its id and split. Its gold actions become the gold plan; replaying them on
a fresh copy of the world (errors ignored, as tau2 does) gives the target changes; its
``communicate_info`` becomes the answers, graded as committed values against the world's words
(:func:`vocabulary`). The user's request (``reason_for_call``) is the public instruction; the
identity the user knows (e-mail, or name and zip code) is held back in the hidden profile when
the gold plan looks the user up with it, so the agent must ask.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from envfactory.contract.tasks import (
    Ask,
    HiddenTask,
    PlanStep,
    PublicTask,
    Split,
    TargetChange,
    Task,
)
from envfactory.db.tasks import fingerprint
from envfactory.peers.tau2.reward import compared, matches
from envfactory.tasks.heldout import ChangeKey, change_keys
from envfactory.verify.answers import Vocabulary
from envfactory.world.state import hex_hash
from envfactory.world.world import World

AUTH_FACTS = {
    "find_user_id_by_email": ("email",),
    "find_user_id_by_name_zip": ("first_name", "last_name", "zip"),
}
SPLITS: tuple[Split, ...] = ("train", "test")


@dataclass(frozen=True)
class Imported:
    """One tau2 task as made here, and what its gold replay did."""

    task: Task
    tau2_id: str
    gold_hash: str
    failed_gold_steps: tuple[int, ...]
    actions: tuple[dict[str, Any], ...]
    communicate: tuple[str, ...]

    @property
    def passes_idle(self) -> bool:
        """Whether tau2's database and communicate checks pass an agent that does nothing."""
        return not self.task.hidden.target and not self.communicate

    @property
    def unchecked(self) -> str | None:
        """Why no check of tau2's can tell this task done from an agent that knows nothing of
        it (None when one can): it changes nothing, asks nothing said, and no gold call has
        an argument that is compared (a transfer's summary is free text)."""
        if not self.passes_idle or any(compared(a) for a in self.actions):
            return None
        if not self.actions:
            return "no gold action, no change, nothing to say: nothing to check"
        names = ", ".join(sorted({a["name"] for a in self.actions}))
        return f"changes nothing, says nothing; its gold calls ({names}) compare no argument"


def _held(actions: list[dict[str, Any]], instruction: str) -> dict[str, str]:
    """Identity facts the gold plan looks the user up with, if they agree with each other and
    the request does not already say them."""
    facts: dict[str, str] = {}
    for a in actions:
        for fact in AUTH_FACTS.get(a["name"], ()):
            value = a["arguments"].get(fact)
            if not isinstance(value, str) or facts.get(fact, value) != value:
                return {}
            facts[fact] = value
    return {f: v for f, v in facts.items() if v not in instruction}


def _plan(actions: list[dict[str, Any]], held: dict[str, str]) -> tuple[list[PlanStep], list[Ask]]:
    plan: list[PlanStep] = []
    asks: list[Ask] = []
    asked: set[str] = set()
    for a in actions:
        from_user = {k: k for k, v in a["arguments"].items() if held.get(k) == v}
        new = sorted(set(from_user) - asked)
        if new:
            asks.append(Ask(before_step=len(plan), facts=new))
            asked |= set(new)
        plan.append(PlanStep(tool=a["name"], arguments=dict(a["arguments"]), from_user=from_user))
    return plan, asks


def _request(tau2: dict[str, Any], held: dict[str, str]) -> str:
    instructions = (tau2.get("user_scenario") or {}).get("instructions") or {}
    parts = [str(instructions.get("reason_for_call") or "").strip()]
    known = str(instructions.get("known_info") or "").strip()
    if known and not held:
        parts.append(known)
    return "\n".join(p for p in parts if p) or "I need help with my orders."


def vocabulary(world: World) -> Vocabulary:
    """The words a word answer is graded against: every column's values, and each variant
    option's values by option name (a material: every material; ``20 hours``: every battery
    life), since tau2's answers name options (``polyester``, ``tactile``)."""
    columns: dict[str, list[Any]] = {}
    for name, table in world.tables.items():
        rows = world.base.rows[name].values()
        for i, column in enumerate(table.columns):
            columns[f"{name}.{column}"] = [row[i] for row in rows]
    at = world.tables["variants"].columns.index("options")
    for row in world.base.rows["variants"].values():
        for option, value in json.loads(row[at]).items():
            columns.setdefault(f"variants.options.{option}", []).append(value)
    return Vocabulary(columns)


def import_task(
    world: World,
    env_id: str,
    tau2: dict[str, Any],
    split: Split,
    index: int,
    rules: list[str],
    words: Vocabulary,
) -> Imported:
    """One tau2 task; its gold actions are replayed on a fresh copy of ``world``; its answers
    are graded against ``words``."""
    criteria = tau2.get("evaluation_criteria") or {}
    actions = [
        {
            "name": str(a["name"]),
            "arguments": dict(a.get("arguments") or {}),
            "compare_args": a.get("compare_args"),
        }
        for a in criteria.get("actions") or []
    ]
    communicate = [str(c) for c in criteria.get("communicate_info") or []]
    reason = str(
        ((tau2.get("user_scenario") or {}).get("instructions") or {}).get("reason_for_call") or ""
    )
    held = _held(actions, reason)
    plan, asks = _plan(actions, held)
    store = world.new_store()
    failed = []
    for i, a in enumerate(actions):
        tool = world.tools.get(a["name"])
        if tool is None or not tool(store, a["arguments"]).ok:
            failed.append(i)  # tau2 logs a failing gold action and goes on
    target = [
        TargetChange(table=c.table, id=c.key, before=c.before, after=c.after)
        for c in store.changes()
    ]
    gold_hash = hex_hash(store.state_hash())
    store.close()
    task_id = f"{env_id}/{split}/1/{index}"
    public = PublicTask(
        task_id=task_id,
        env_id=env_id,
        split=split,
        difficulty=1,
        instruction=_request(tau2, held),
        persona=world.spec.persona,
        rules=rules,
        tools=list(world.tools),
    )
    writes = sum(1 for a in actions if a["name"] in world.write_tools)
    goal = f"tau2:{tau2['id']}"
    hidden = HiddenTask(
        task_id=task_id,
        goals=[goal],
        gold_plan=plan,
        target=target,
        answers=communicate,
        answer_goals=[goal] * len(communicate),
        answer_key=words.key(public.instruction, communicate),
        profile=held,
        asks=asks,
        knobs={"width": 1, "plan_steps": len(plan), "writes": writes, "max_level": 1},
        fingerprint=fingerprint(target, [["tau2", tau2["id"], communicate]]),
    )
    task = Task(public=public, hidden=hidden, initial_hash=hex_hash(world.base.hash))
    return Imported(
        task, str(tau2["id"]), gold_hash, tuple(failed), tuple(actions), tuple(communicate)
    )


def _value(said: str) -> str:
    """A required string as compared across tasks (``481.5`` is ``481.50``)."""
    try:
        return f"{float(said):.2f}"
    except ValueError:
        return said.strip().lower()


def reproducible(train: list[Imported], test: list[Imported]) -> list[str]:
    """tau2 ids of test tasks whose work train material reproduces, judged by the check that
    decides them: a task that changes rows, when train targets make every row change it makes
    (the database worlds' rule); one that changes nothing but must say values, when train tasks
    say them all; one judged by its gold calls alone, when train gold plans make them all.
    Moved to train, they can make more test tasks reproducible, so this repeats until none is
    left."""
    made: set[ChangeKey] = set()
    said: set[str] = set()
    calls: list[dict[str, Any]] = []

    def learn(m: Imported) -> None:
        made.update(change_keys(m.task.hidden.target))
        said.update(_value(c) for c in m.communicate)
        calls.extend(m.actions)

    def covered(m: Imported) -> bool:
        if keys := change_keys(m.task.hidden.target):
            return keys <= made
        if m.communicate:
            return {_value(c) for c in m.communicate} <= said
        return bool(m.actions) and all(
            any(matches(a, c["name"], c["arguments"]) for c in calls) for a in m.actions
        )

    for m in train:
        learn(m)
    moved: list[str] = []
    left = list(test)
    while found := [m for m in left if covered(m)]:
        for m in found:
            learn(m)
            moved.append(m.tau2_id)
        left = [m for m in left if m not in found]
    return moved
