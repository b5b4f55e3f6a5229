"""How evenly a held-out split's answers are spread: the prior a constant guess exploits.

For each goal template, the most frequent answer of train and the most frequent answer of the
held-out split itself, with the share of each split's questions that value answers. A split
that concentrates one value in its held-out part (an answer hashed to held-out carries all its
questions there) shows as a held-out share well above the train share; a template whose
answers are few shows as a top share above a fair one. Answers are compared as grading
compares them (45.2 is 45.20). A task asking two questions of one template counts twice.

``python -m envfactory.tasks.answer_balance retail research-pydocs -d 0 1 2 -n 200`` prints
the templates whose top answer answers more than a fair share, or twice its train share.
"""

from __future__ import annotations

import argparse
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from envfactory.contract.environment import Environment
from envfactory.contract.errors import SynthesisError
from envfactory.contract.tasks import Split, Task
from envfactory.verify.answers import comparable, kind_of

FAIR_SHARE = 0.25  # the most one value may answer of a template's questions
FAIR_YES_NO = 0.6  # of a yes/no template's questions
MIN_QUESTIONS = 20  # fewer held-out questions of a template are not judged
SKEW_FLOOR = 0.1  # a value answering less of a template is no skew, however rare in train


@dataclass(frozen=True)
class TemplateBalance:
    """One goal template's answers in train and in a held-out split."""

    template: str
    train: int  # train questions of the template
    held: int  # held-out questions
    yes_no: bool  # every answer is yes or no
    train_top: Any  # the most frequent train answer (as compared)
    train_top_in_train: float  # the share of train questions it answers
    train_top_in_held: float  # the share of held-out questions it answers
    held_top: Any  # the most frequent held-out answer
    held_top_in_held: float
    held_top_in_train: float

    @property
    def fair(self) -> float:
        """The most one value may answer of the template's held-out questions."""
        return FAIR_YES_NO if self.yes_no else FAIR_SHARE

    def skewed(self, min_questions: int = MIN_QUESTIONS) -> bool:
        """Whether one value answers more than a fair share of the held-out questions, or
        more than twice its train share and ``SKEW_FLOOR`` (judged from ``min_questions``
        held-out ones)."""
        if self.held < min_questions:
            return False
        top = self.held_top_in_held
        return top > self.fair or top > max(2 * self.held_top_in_train, SKEW_FLOOR)

    def line(self) -> str:
        return (
            f"{self.template:28} train {self.train:4} held {self.held:4}  "
            f"train top {self.train_top!r:>12} {self.train_top_in_train:.2f}/"
            f"{self.train_top_in_held:.2f}  held top {self.held_top!r:>12} "
            f"{self.held_top_in_held:.2f} (train {self.held_top_in_train:.2f})"
        )


class AnswerCap:
    """Keeps any one answer from more than about ``share`` of a template's questions, in every
    prefix of a growing list of tasks, not only in the whole list.

    Each question offered is first thinned by its answer's frequency among the template's
    offers so far (:meth:`offer` may count some beforehand, so the first are thinned too): it
    passes with chance ``share`` over that frequency (a value offered more often than
    ``share`` passes about ``share`` of the offers, so the common value is not simply the
    first of every list). Then it is admitted when, with it, its answer answers at
    most ``share`` of the template's questions, or when it is the first its answer answers."""

    def __init__(self, share: float) -> None:
        self.share = share
        self.offered: Counter[str] = Counter()
        self.offers: Counter[tuple[str, Any]] = Counter()
        self.asked: Counter[str] = Counter()
        self.answered: Counter[tuple[str, Any]] = Counter()

    def admits(self, template: str, answer: Any, draw: float) -> bool:
        """Whether to take a question offered (``draw``: its own uniform number in [0, 1),
        from a stable hash of it); counts the offer."""
        value = self.offer(template, answer)
        if draw * self.offers[template, value] >= self.share * self.offered[template]:
            return False
        after = self.answered[template, value] + 1
        return after == 1 or after <= self.share * (self.asked[template] + 1)

    def offer(self, template: str, answer: Any) -> Any:
        """Count a question offered; its answer as compared."""
        value = comparable(answer)
        self.offered[template] += 1
        self.offers[template, value] += 1
        return value

    def add(self, template: str, answer: Any) -> None:
        """Count a question taken."""
        self.asked[template] += 1
        self.answered[template, comparable(answer)] += 1


def answers_by_template(tasks: Iterable[Task]) -> dict[str, Counter[Any]]:
    """Each goal template's answers (as compared), counted over ``tasks``."""
    out: dict[str, Counter[Any]] = {}
    for task in tasks:
        hidden = task.hidden
        for goal, answer in zip(hidden.answer_goals, hidden.answers, strict=True):
            out.setdefault(goal, Counter())[comparable(answer)] += 1
    return out


def _share(counts: Counter[Any], value: Any) -> float:
    total = sum(counts.values())
    return counts[value] / total if total else 0.0


def answer_balance(train: Iterable[Task], held: Iterable[Task]) -> list[TemplateBalance]:
    """Per goal template asked in ``held``: its top answers and their shares in each split."""
    before = answers_by_template(train)
    out = []
    for template, counts in sorted(answers_by_template(held).items()):
        seen = before.get(template, Counter())
        train_top = seen.most_common(1)[0][0] if seen else None
        held_top = counts.most_common(1)[0][0]
        out.append(
            TemplateBalance(
                template=template,
                train=sum(seen.values()),
                held=sum(counts.values()),
                yes_no=all(kind_of(v) == "yes/no" for v in counts),
                train_top=train_top,
                train_top_in_train=_share(seen, train_top),
                train_top_in_held=_share(counts, train_top),
                held_top=held_top,
                held_top_in_held=_share(counts, held_top),
                held_top_in_train=_share(seen, held_top),
            )
        )
    return out


def constant_reward(tasks: Sequence[Task], value: Any) -> float:
    """The mean share of a task's answers that ``value`` gives: about what replying ``value``
    to every task earns (tasks asking nothing are left out)."""
    wanted = comparable(value)
    shares = [
        sum(comparable(a) == wanted for a in t.hidden.answers) / len(t.hidden.answers)
        for t in tasks
        if t.hidden.answers
    ]
    return sum(shares) / len(shares) if shares else 0.0


def cell(env: Environment, split: Split, difficulty: int, n: int) -> list[Task]:
    """The first ``n`` tasks of a cell (fewer where it holds fewer)."""
    out = []
    for index in range(env.tasks_up_to(split, difficulty, n)):
        try:
            out.append(env.task(split, difficulty, index))
        except SynthesisError:
            break
    return out


def measure(
    env: Environment, difficulty: int, n: int = 200, held: Split = "test"
) -> list[TemplateBalance]:
    """:func:`answer_balance` of ``n`` train and ``n`` ``held`` tasks of one difficulty."""
    return answer_balance(cell(env, "train", difficulty, n), cell(env, held, difficulty, n))


def main(argv: list[str] | None = None) -> None:
    import envfactory

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("envs", nargs="+")
    parser.add_argument("-d", "--difficulties", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("-n", "--per-cell", type=int, default=200)
    parser.add_argument("--all", action="store_true", help="every template, not only skewed")
    args = parser.parse_args(argv)
    for name in args.envs:
        env = envfactory.make(name)
        for difficulty in args.difficulties:
            for b in measure(env, difficulty, args.per_cell):
                if args.all or b.skewed():
                    print(f"{name:16} d{difficulty} {'SKEW' if b.skewed() else '    '} {b.line()}")


if __name__ == "__main__":
    main()
