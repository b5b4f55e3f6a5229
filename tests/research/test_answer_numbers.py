"""Numbers are graded exactly: a wrong number written like the right one is wrong."""

from __future__ import annotations

import pytest

from envfactory.research import answers


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("1.4", "1"),
        ("1.9", "1"),
        ("194910.4", "194910"),
        ("0 001", "1"),
        ("0,001", "1"),
        ("1,23", "123"),
        ("12,40", "1240"),
        ("1,234 567", "1234567"),
        ("1.2.3", "1"),
    ],
)
def test_a_fraction_or_a_malformed_group_is_not_the_integer(reply: str, expected: str) -> None:
    assert not answers.matches("number", reply, [expected])


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("194,910", "194910"),
        ("194 910", "194910"),
        ("194\u00a0910", "194910"),
        ("3 400 000", "3400000"),
        ("twelve", "12"),
        ("12.", "12"),
        ("It is 7.", "7"),
        ("1.0", "1"),
        ("-3", "-3"),
        ("0", "0"),
    ],
)
def test_right_numbers_in_any_plain_form_are_accepted(reply: str, expected: str) -> None:
    assert answers.matches("number", reply, [expected])


def test_two_numbers_commit_to_neither() -> None:
    assert answers.number("12400 or 12500") is None
    assert answers.number("one or 2") is None
