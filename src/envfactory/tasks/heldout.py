"""How much of a held-out split's work the train split already does.

A row change is compared canonically, as the verifier compares states (``verify/matching.py``):
an update by its table, row id and the after-values of the fields it changes; a delete by its
table and row id; an insert by its table and its content, with every id of a row the same task
inserts replaced by one placeholder (new ids depend on call order). The placeholder makes two
inserts equal that the verifier might tell apart, so the measure can only over-count overlap.

For each held-out task with a non-empty target the report counts whether its target is the
target of some train task (replaying that train plan would solve it), and whether every one of
its row changes is made by some train task (train plans would cover all its work). Tasks that
only ask questions change nothing and are left out of both counts.

A question is its goal template and its answer, compared as grading compares answers (45.2 is
45.20): for each held-out task that asks, the report counts whether some train task asks one of
its questions with the same answer (the train task's reply, replayed, would give it).

``python -m envfactory.quality.heldout retail banking tests/openapi/specs/shop-swagger2.json``
prints the numbers (500 tasks per split and difficulty; an OpenAPI document is compiled first).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from envfactory.contract.environment import Environment
from envfactory.contract.errors import SynthesisError
from envfactory.contract.tasks import Split, TargetChange, Task
from envfactory.verify.answers import comparable

ChangeKey = tuple[str, str | None, str]
Question = tuple[str, object]
NEW_ROW = "<new row>"


def change_keys(target: Sequence[TargetChange]) -> frozenset[ChangeKey]:
    """A target's row changes in canonical form: (table, row id or None for an insert, what)."""
    new = {t.id for t in target if t.before is None}

    def canon(values: dict[str, object]) -> str:
        named = {k: NEW_ROW if isinstance(v, str) and v in new else v for k, v in values.items()}
        return json.dumps(named, sort_keys=True, default=str)

    keys: set[ChangeKey] = set()
    for t in target:
        if t.before is None:
            assert t.after is not None
            keys.add((t.table, None, canon({k: v for k, v in t.after.items() if k != "id"})))
        elif t.after is None:
            keys.add((t.table, t.id, "deleted"))
        else:
            before = t.before
            keys.add(
                (t.table, t.id, canon({k: v for k, v in t.after.items() if before.get(k) != v}))
            )
    return frozenset(keys)


def questions(task: Task) -> set[Question]:
    """A task's questions: (goal template, answer as compared)."""
    hidden = task.hidden
    return {(g, comparable(a)) for g, a in zip(hidden.answer_goals, hidden.answers, strict=True)}


@dataclass(frozen=True)
class Overlap:
    """One held-out split against train: how many of its tasks train material solves."""

    split: str
    tasks: int  # held-out tasks generated
    changing: int  # of those, tasks whose target changes a row
    same_target: int  # targets equal to a train task's target
    covered: int  # targets whose every row change some train target makes
    asking: int  # tasks that ask questions
    answered: int  # of those, tasks with a question some train task asks, same answer

    def line(self) -> str:
        return (
            f"{self.split:10} tasks {self.tasks:5}  with changes {self.changing:5}  "
            f"same target as train {self.same_target:4}  all changes in train {self.covered:4}  "
            f"asking {self.asking:5}  a train answer {self.answered:4}"
        )


def compare(train: Iterable[Task], held: Iterable[Task], split: str) -> Overlap:
    """Count the held-out tasks whose target train tasks reproduce (see the module doc)."""
    targets: set[frozenset[ChangeKey]] = set()
    made: set[ChangeKey] = set()
    asked: set[Question] = set()
    for task in train:
        keys = change_keys(task.hidden.target)
        if keys:
            targets.add(keys)
            made |= keys
        asked |= questions(task)
    tasks = changing = same = covered = asking = answered = 0
    for task in held:
        tasks += 1
        if own := questions(task):
            asking += 1
            answered += bool(own & asked)
        keys = change_keys(task.hidden.target)
        if not keys:
            continue
        changing += 1
        same += keys in targets
        covered += keys <= made
    return Overlap(split, tasks, changing, same, covered, asking, answered)


def split_tasks(env: Environment, split: Split, per_cell: int) -> list[Task]:
    """``per_cell`` tasks of every difficulty of one split (all of them in a fixed task list)."""
    out = []
    for difficulty in env.difficulties:
        count = (env.capacity(split, difficulty) or 0) if env.finite else per_cell
        for index in range(count):
            try:
                out.append(env.task(split, difficulty, index))
            except SynthesisError:
                continue
    return out


def measure(env: Environment, per_cell: int = 500) -> list[Overlap]:
    """Every held-out split of ``env`` against its train split."""
    train = split_tasks(env, "train", per_cell)
    return [
        compare(train, split_tasks(env, split, per_cell), split)
        for split in env.splits
        if split != "train"
    ]
