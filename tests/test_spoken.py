"""The leak scan's reader (issue 42): an answer written in a request in any form is found."""

from __future__ import annotations

import time

import pytest

from envfactory.verify.spoken import digits_of, stated_in


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("It should come to 12 point 5 GB, right?", 12.5),
        ("twelve and a half days", 12.5),
        ("twelve point five", 12.5),
        ("about 12 .5 gb", 12.5),
        ("about 12. 5 gb", 12.5),
        ("one hundred and five items", 105),
        ("Is it twelve?", 12),
        ("one hundred and one", 101),
        ("the twenty-first", 21),
        ("$1,200.50 in all", 1200.5),
        ("1 200 euros", 1200),
        ("12,5 kg", 12.5),
        ("forty-two dollars", 42.0),
        ("two thousand three hundred", 2300),
        ("on June nineteenth, 2026", "2026-06-19"),
        ("on 2026 - 06 - 19", "2026-06-19"),
        ("19 June", "2026-06-19"),
        ("06/19/2026 at 6:57 pm", "2026-06-19T18:57:00Z"),
        ("at half past nine or 9:30", "09:30"),
        ("order ORD - 00062", "ORD-00062"),
        ("seat 29 b", "29B"),
        ("tracking 2005 3786 6304", 200537866304),
        ("the Russo Brooks account", "Russo-Brooks"),
        ("It came to 191 dollars and 76 cents.", 191.76),
        ("$191 and 76 cents", 191.76),
        ("one hundred ninety-one dollars seventy-six", 191.76),
        ("one hundred ninety-one dollars and seventy-six cents", 191.76),
        ("76 cents", 0.76),
        ("5 dollars and 2 cents", 5.02),
    ],
)
def test_an_answer_in_any_form_is_stated(text: str, answer: object) -> None:
    assert stated_in(text, answer), (text, answer)


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("order ORD-00062 placed 2026-06-19", 62),  # digits of an id or a date are no amount
        ("order ORD-00062 placed 2026-06-19", 19),
        ("twelve items", 12.5),
        ("seat 29B", "29C"),
        ("the Russo-Brooks account", "Brooks Group"),
        ("Did it ship?", True),
        ("The first line answers it; commit one answer.", 1),  # research's boilerplate
        ("Wait a second.", 2),
        ("on June 18", "2026-06-19"),
        ("2026-06-19 at 9:00", "2026-06-19T18:57:00Z"),
        ("refund 5 dollars for 20 items", 5.2),  # dollars then a count is no cents
        ("300 dollars and 45 nights", 300.45),
        ("76 cents", 76.01),
    ],
)
def test_other_values_are_not_the_answer(text: str, answer: object) -> None:
    assert not stated_in(text, answer), (text, answer)


def test_number_words_become_digits() -> None:
    assert digits_of("one hundred and five and twelve point five") == "105 and 12.5"


def test_it_is_fast_enough_for_every_answer_of_every_task() -> None:
    """A leak scan calls it for each answer of thousands of tasks: one text is read once."""
    texts = [f"Balance of account ACC-{i:05d} on June {i % 28 + 1}?" for i in range(500)]
    start = time.perf_counter()
    for text in texts:
        for answer in (12.5, "2026-06-19", "ORD-00062", "Russo-Brooks", 7):
            stated_in(text, answer)
    assert time.perf_counter() - start < 1.0


def test_a_list_marker_states_nothing() -> None:
    request = "Please:\n1. Cancel order ORD-00012.\n6. What is its unit price?"
    assert not stated_in(request, 6)
    assert not stated_in(request, 1)
    assert stated_in(request + " I ordered 6.", 6)
