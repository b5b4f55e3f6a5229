"""Prior guesses: a template with one answer pays a constant reply; a sound one does not."""

from __future__ import annotations

from pathlib import Path

import pytest
from mutants import mutant

import envfactory
from envfactory.db import tasks as synth
from envfactory.quality.search.priors import PriorGuess, pool, prior_searches
from envfactory.tasks.answer_balance import answers_by_template
from envfactory.verify.answers import comparable

TOTAL = 'answer: "money(sum(i.quantity * i.unit_price for i in items))"'


def _questions(env: envfactory.Environment, split: str = "train") -> list[envfactory.Task]:
    tasks = [t for t in env.tasks(split, 1, 40) if "order_total" in t.hidden.answer_goals]  # type: ignore[arg-type]
    assert len(tasks) >= 3
    return tasks


def test_the_synthesiser_does_not_ask_a_template_answered_by_one_value(tmp_path: Path) -> None:
    """Every total "yes": the template is never asked (a blind guess would be right); the
    sound world asks it."""
    assert _questions(envfactory.make("retail"))
    env = mutant(tmp_path, "retail", TOTAL, 'answer: "True"')
    tasks = [t for d in env.difficulties for t in env.tasks("train", d, 40)]  # type: ignore[arg-type]
    assert not any("order_total" in t.hidden.answer_goals for t in tasks)


def test_a_template_answered_by_one_value_pays_its_mode_and_the_constant(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the synthesiser's guard off, the prior guesses find the same defect."""
    monkeypatch.setattr(synth, "GUESS_SHARE", 1.0)
    env = mutant(tmp_path, "retail", TOTAL, 'answer: "True"')  # every total is "yes"
    tasks = _questions(env)
    counts = answers_by_template(pool(env, "train", per_cell=10))
    assert counts["order_total"].most_common(1)[0][0] is True
    for guess, paid in (("mode", 1.0), ("mode_train", 1.0), ("yes", 1.0), ("no", 0.0), ("1", 0.0)):
        assert PriorGuess(guess, per_cell=10).rewards(env, tasks) == [paid] * len(tasks), guess


def test_no_prior_guess_pays_on_a_sound_template() -> None:
    env = envfactory.make("retail")
    tasks = _questions(env, "test")
    for search in prior_searches():
        assert search.applies(env)
        assert search.rewards(env, tasks) == [0.0] * len(tasks), search.name


def test_a_task_that_asks_nothing_is_not_guessed() -> None:
    env = envfactory.make("retail")
    writes = [t for t in env.tasks("test", 1, 20) if not t.hidden.answers]
    assert writes and PriorGuess("1").rewards(env, writes) == [0.0] * len(writes)


def test_a_task_s_own_answer_is_not_its_prior() -> None:
    """The test split's mode is counted without the task itself: an answer asked once is
    no prior, whatever the sample."""
    env = envfactory.make("retail")
    tasks = pool(env, "test")
    counts = answers_by_template(tasks)["order_total"]
    guess = PriorGuess("mode")
    asked = [t for t in tasks if t.hidden.answer_goals == ["order_total"]]
    once = [t for t in asked if counts[comparable(t.hidden.answers[0])] == 1]
    assert once
    assert all(guess.values(env, t) != t.hidden.answers for t in once)
