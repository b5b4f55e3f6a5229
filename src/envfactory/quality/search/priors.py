"""Prior guesses: an answer from the prior alone, given as the only reply, with no action.

An optimizer that never reads the question still learns which answers are common. So each of
these fixed guesses must earn at most a trace on the questions: the most frequent answer of
each goal template (counted over train, validation and the test split itself, as a model that
saw them all would know it) and the constants ``0``, ``1``, ``yes``, ``no`` and the first of
the words an answer of its kind may be (a status, a city: the words the grader reads). A task
that asks nothing scores 0 without an episode: a guess has nothing to answer there.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from envfactory.env import Environment
from envfactory.quality.search.script import Player, reply_steps
from envfactory.tasks.answer_balance import answers_by_template, cell
from envfactory.tasks.types import SPLITS, Task

CONSTANTS = ("0", "1", "yes", "no")
FIRST_WORD = "first_word"
MODE = "mode"
PER_CELL = 30  # tasks of each (split, difficulty) the answer counts are taken from


def answer_counts(env: Environment, per_cell: int = PER_CELL) -> dict[str, Counter[Any]]:
    """Each goal template's answers (as graded), over the first ``per_cell`` tasks of every
    split and difficulty."""
    tasks = [t for s in SPLITS for d in env.difficulties for t in cell(env, s, d, per_cell)]
    return answers_by_template(tasks)


class PriorGuess:
    """One fixed guess: ``mode`` (the template's most frequent answer), ``first_word`` or one
    of :data:`CONSTANTS`."""

    def __init__(self, guess: str, per_cell: int = PER_CELL) -> None:
        self.guess = guess
        self.per_cell = per_cell
        self.name = f"prior_{guess}"
        self._modes: dict[str, Any] | None = None

    def applies(self, env: Environment) -> bool:
        return any(t.hidden.answers for t in cell(env, "train", env.difficulties[-1], 10))

    def values(self, env: Environment, task: Task) -> list[Any]:
        """What the guess replies to ``task`` (nothing where it has no guess)."""
        hidden = task.hidden
        if self.guess == MODE:
            if self._modes is None:
                counts = answer_counts(env, self.per_cell)
                self._modes = {g: c.most_common(1)[0][0] for g, c in counts.items()}
            return list(dict.fromkeys(self._modes.get(g) for g in hidden.answer_goals))
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


def prior_searches() -> list[PriorGuess]:
    """Every prior guess."""
    return [PriorGuess(g) for g in (MODE, *CONSTANTS, FIRST_WORD)]
