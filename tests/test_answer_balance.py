"""The answer-balance measure and the cap that keeps one answer from filling a template."""

from __future__ import annotations

import random
from collections import Counter

import envfactory
from envfactory.tasks.answer_balance import (
    AnswerCap,
    TemplateBalance,
    answer_balance,
    answers_by_template,
    cell,
    constant_reward,
    measure,
)


def test_the_cap_thins_a_common_answer_in_every_prefix() -> None:
    rng = random.Random(0)
    offers = ["1" if rng.random() < 0.8 else str(rng.randrange(2, 400)) for _ in range(5000)]
    cap = AnswerCap(0.05)
    for answer in offers[:500]:  # told beforehand how often each value comes
        cap.offer("fact", answer)
    taken: list[str] = []
    for answer in offers[500:]:
        if cap.admits("fact", answer, rng.random()):
            cap.add("fact", answer)
            taken.append(answer)
    assert len(taken) > 300
    for n in (20, 100, len(taken)):
        assert Counter(taken[:n])["1"] <= max(1, 0.05 * n), n
    assert Counter(taken).most_common(1)[0][1] <= 0.05 * len(taken) + 1


def test_balance_counts_every_question_of_a_database_world() -> None:
    env = envfactory.make("retail")
    train, test = cell(env, "train", 2, 40), cell(env, "test", 2, 40)
    report = answer_balance(train, test)
    asked = answers_by_template(test)
    assert {b.template for b in report} == set(asked)
    for b in report:
        counts = asked[b.template]
        assert b.held == sum(counts.values())
        assert b.held_top_in_held == counts.most_common(1)[0][1] / b.held
        assert 0 <= b.train_top_in_held <= b.held_top_in_held
    assert report == measure(env, 2, 40)
    asking = [t for t in test if t.hidden.answers]
    assert asking and constant_reward(test, asking[0].hidden.answers[0]) > 0
    assert constant_reward(test, "no such answer") == 0


def test_skew_is_a_share_above_fair_or_twice_train() -> None:
    def balance(held_top: float, in_train: float, yes_no: bool = False) -> TemplateBalance:
        return TemplateBalance("t", 100, 100, yes_no, "a", 0.1, 0.1, "b", held_top, in_train)

    assert balance(0.3, 0.3).skewed()  # above a fair share
    assert not balance(0.5, 0.5, yes_no=True).skewed()
    assert balance(0.2, 0.05).skewed()  # four times its train share
    assert not balance(0.08, 0.0).skewed()  # rare in train, but rare
    assert not balance(0.9, 0.0).skewed(min_questions=101)  # too few questions to judge
