"""Prior guesses: an answer from the prior alone, given as the only reply, with no action.

An optimizer that never reads the question still learns which answers are common. So each of
these fixed guesses must earn at most a trace on the questions: the most frequent answer of
each goal template in the task's own split (train, validation or test: the synthesiser keeps
train answers out of held-out questions, so a held-out skew shows only in the held-out split's
own mode) and in train (a memorised train prior, on every task); and the constants ``0``,
``1``, ``yes``, ``no`` and the first of the words an answer of its kind may be (a status, a
city: the words the grader reads). A task that asks nothing scores 0 without an episode: a
guess has nothing to answer there.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from envfactory.contract.environment import Environment
from envfactory.contract.tasks import Split, Task
from envfactory.quality.search.script import Player, reply_steps
from envfactory.tasks.answer_balance import cell
from envfactory.verify.answers import comparable

CONSTANTS = ("0", "1", "yes", "no")
FIRST_WORD = "first_word"
MODE = "mode"
PER_CELL = 30  # tasks of each (split, difficulty) the answer counts are taken from


def pool(env: Environment, split: Split, per_cell: int = PER_CELL) -> list[Task]:
    """The first ``per_cell`` tasks of each difficulty of ``split``: where a mode is counted."""
    return [t for d in env.difficulties for t in cell(env, split, d, per_cell)]


class PriorGuess:
    """One fixed guess: ``mode`` (the template's most frequent answer in the task's own split,
    which its public view names), ``mode_train`` (in train, on every task), ``first_word`` or
    one of :data:`CONSTANTS`. A mode is counted over distinct questions, without the task's
    own: a value asked once is no prior, and a question asked again is not another."""

    def __init__(self, guess: str, per_cell: int = PER_CELL) -> None:
        self.guess = guess
        self.per_cell = per_cell
        self.name = f"prior_{guess}"
        self._asked: dict[tuple[str, Split], dict[str, dict[str, Any]]] = {}

    def applies(self, env: Environment) -> bool:
        return any(t.hidden.answers for d in env.difficulties for t in cell(env, "train", d, 10))

    def _mode(self, env: Environment, task: Task, template: str) -> Any:
        split: Split = "train" if self.guess == f"{MODE}_train" else task.public.split
        if (env.id, split) not in self._asked:
            self._asked[env.id, split] = questions_by_template(pool(env, split, self.per_cell))
        own = set(questions_by_template([task]).get(template, {}))
        asked = self._asked[env.id, split].get(template, {})
        seen = Counter(answer for key, answer in asked.items() if key not in own)
        best = seen.most_common(1)
        return _said(best[0][0]) if best else None

    def values(self, env: Environment, task: Task) -> list[Any]:
        """What the guess replies to ``task`` (nothing where it has no guess)."""
        hidden = task.hidden
        if self.guess.startswith(MODE):
            return list(dict.fromkeys(self._mode(env, task, g) for g in hidden.answer_goals))
        if self.guess == FIRST_WORD:
            return hidden.answer_key.words[:1]
        return [self.guess]

    def rewards(self, env: Environment, tasks: Sequence[Task]) -> list[float]:
        player = Player(env)
        out = []
        for task in tasks:
            values = [v for v in self.values(env, task) if v is not None]
            if not task.hidden.answers or not values:
                out.append(0.0)
                continue
            out.append(player.reward(task, reply_steps(env, values), values))
        player.close()
        return out


def questions_by_template(tasks: Sequence[Task]) -> dict[str, dict[str, Any]]:
    """Each goal template's distinct questions over ``tasks`` (what it asks -> the answer, as
    compared): a question asked again is one question, its answer no prior. A task of a kind
    that records no question keys asks each of its questions once."""
    out: dict[str, dict[str, Any]] = {}
    for task in tasks:
        hidden = task.hidden
        keys = hidden.questions or [f"{task.task_id}#{i}" for i in range(len(hidden.answers))]
        for goal, key, answer in zip(hidden.answer_goals, keys, hidden.answers, strict=True):
            out.setdefault(goal, {})[key] = comparable(answer)
    return out


def _said(value: Any) -> Any:
    """An answer as compared (``True``, ``3.0``) as a reply says it (``yes``, ``3``)."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def prior_searches() -> list[PriorGuess]:
    """Every prior guess."""
    return [PriorGuess(g) for g in (MODE, f"{MODE}_train", *CONSTANTS, FIRST_WORD)]
