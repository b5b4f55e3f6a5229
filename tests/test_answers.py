"""Answers are one committed value of their kind (issue 14, class 2: shotgun answers).

A reply listing many candidates (dates, clock times, seat codes, amounts, names) used to earn
whatever it happened to contain; now a reply naming more values of a kind than were asked for
earns nothing for its answers, whatever its format, while an honest reply that names the row
it talks about (ids, the request's own dates) keeps full marks.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from properties import budget

from envfactory.contract.actions import Message
from envfactory.contract.tasks import AnswerKey, Task
from envfactory.db.environment import DatabaseEnvironment as Environment
from envfactory.episode.runner import run_episode
from envfactory.policies.exploits import Shotgun
from envfactory.verify.answers import Vocabulary, grade, grade_conversation, kind_of

_IDS = re.compile(r"\b[A-Z]{2,}-\d{3,}\b")


def _answer_only(env: Environment, per_difficulty: int = 6) -> list[Task]:
    return [
        t
        for d in env.difficulties
        for i in range(per_difficulty)
        if (t := env.task("test", d, i)).hidden.answers and not t.hidden.target
    ]


def _render(answer: Any, style: int) -> str:
    """``answer`` as a person might write it (``style`` picks one of the usual forms)."""
    kind = kind_of(answer)
    if kind in ("number", "fraction"):
        v = float(answer)
        return [f"${v:,.2f}", f"{v:.2f}", f"{v:g}", f"{v:,.2f} dollars"][style % 4]
    if kind == "date":
        d = dt.date.fromisoformat(answer)
        forms = [
            d.isoformat(),
            f"{d:%B} {d.day}, {d.year}",
            f"{d.day} {d:%B} {d.year}",
            f"{d:%m/%d/%Y}",
            f"{d:%b} {d.day}",
        ]
        return forms[style % 5]
    if kind == "time":
        h, m = map(int, answer.split(":"))
        twelve = f"{(h - 1) % 12 + 1}:{m:02d} {'pm' if h >= 12 else 'am'}"
        return [answer, f"{h}:{m:02d}", twelve][style % 3]
    return str(answer)


def _honest(task: Task, style: int) -> str:
    """A reply that names the row it is about (the request's ids) and gives each answer once."""
    ids = ", ".join(_IDS.findall(task.public.instruction)[:2]) or "your request"
    given = " and ".join(_render(a, style) for a in task.hidden.answers)
    return f"I looked up {ids}. The answer is {given}. Anything else I can help with?"


def _other(answer: Any, key: AnswerKey) -> Any:
    """Another value of the same kind as ``answer`` (None when the world holds no other)."""
    kind = kind_of(answer)
    if kind == "number":
        return float(answer) + 1
    if kind == "fraction":
        return round(float(answer) + 0.37, 2)
    if kind == "date":
        return (dt.date.fromisoformat(answer) + dt.timedelta(days=1)).isoformat()
    if kind == "time":
        h, m = map(int, answer.split(":"))
        return f"{(h + 1) % 24:02d}:{m:02d}"
    if kind == "code":
        digit = next(i for i, c in enumerate(answer) if c.isdigit())
        swapped = str((int(answer[digit]) + 1) % 10)
        return answer[:digit] + swapped + answer[digit + 1 :]
    words = [w for w in key.words if w != str(answer).lower() and w not in key.request.lower()]
    return words[0] if words else None


def test_honest_replies_earn_full_marks(db_env: Environment) -> None:
    """Each answer once, in any usual form, with the row's ids and a closing question."""
    tasks = _answer_only(db_env)
    assert tasks
    for task in tasks:
        for style in range(5):
            reply = _honest(task, style)
            score, why = grade(reply, task.hidden.answers, task.hidden.answer_key)
            assert score == 1.0, (task.task_id, reply, why)


def test_two_candidates_of_the_kind_earn_nothing(db_env: Environment) -> None:
    """The right answers and one more value of one's kind: no committed answer, no reward."""
    checked = 0
    for task in _answer_only(db_env):
        key = task.hidden.answer_key
        for answer in task.hidden.answers:
            other = _other(answer, key)
            if other is None:
                continue
            given = " and ".join(_render(a, 0) for a in task.hidden.answers)
            reply = f"It is {given}, or else {_render(other, 0)}."
            assert grade(reply, task.hidden.answers, key)[0] == 0.0, (task.task_id, reply)
            checked += 1
    assert checked


@pytest.mark.parametrize("chars", [2000, 12_000])
def test_the_shotgun_earns_nothing(db_env: Environment, chars: int) -> None:
    """The audit's shotgun (every clock time, seat code, yes/no, dates around the request's,
    small numbers and amounts, in one final reply, no action) on every answer-only task."""
    for task in _answer_only(db_env):
        assert run_episode(db_env, task, Shotgun(chars)).reward == 0.0, task.task_id


def test_a_shotgun_holding_the_answer_earns_nothing(db_env: Environment) -> None:
    """Worse than the audit's: the candidates of every kind and the true answers too."""
    for task in _answer_only(db_env, 3):
        answers = task.hidden.answers
        others = [o for a in answers if (o := _other(a, task.hidden.answer_key)) is not None]
        if not others:
            continue
        reply = "; ".join(_render(v, 1) for v in [*answers, *others])
        ep = db_env.episode()
        ep.reset(task)
        ep.step(Message(content=reply))
        assert ep.evaluate().reward == 0.0, (task.task_id, reply)


def test_numbers_in_ids_dates_times_and_quantities_are_not_amounts() -> None:
    reply = (
        "Order ORD-00062 (2 items, seat 29B, line 555-292-0857, tracking 200537866304) was "
        "delivered on March 4, 2026 at 9:30 am, in Fall 2026; the total was $45.00."
    )
    assert grade(reply, [45.0]) == (1.0, "1 of 1 requested answers given")
    assert grade(reply, [45.0, "29B"])[0] == 1.0
    assert grade("The total was $45.00, or maybe $46.00.", [45.0])[0] == 0.0
    assert grade("It is 45.20, 45.25 or 45.30.", [45.2])[0] == 0.0
    # Without a currency sign every number is a candidate for a whole-number answer.
    assert grade("You have 20 days left out of 25.", [20.0])[0] == 0.0
    assert grade("You have 20 days left.", [20.0])[0] == 1.0


def test_values_the_request_names_are_not_candidates() -> None:
    key = AnswerKey(
        request="Who manages Mark Harmon, hired on 2026-01-05?",
        words=["heather hodges", "mark harmon", "lynn day"],
    )
    honest = "Mark Harmon (hired 2026-01-05) reports to Heather Hodges."
    assert grade(honest, ["Heather Hodges"], key)[0] == 1.0
    assert grade("Heather Hodges or Lynn Day.", ["Heather Hodges"], key)[0] == 0.0


def test_values_inside_other_answers_are_not_candidates() -> None:
    """An address answer's house number and suite are not guesses at the zip code answer
    (tau2's task 43 asks for both); another number still is, and so is a number that is
    itself an answer of the kind."""
    expected = ["943 Maple Drive", "Suite 356", "60621"]
    assert grade("943 Maple Drive, Suite 356, Chicago IL 60621.", expected)[0] == 1.0
    assert grade("943 Maple Drive, Suite 356, 60621 or 60622.", expected)[0] == 0.0
    assert grade("Suite 356; 356 or 357.", ["Suite 356", "356"])[0] == 0.0


def test_dates_in_every_form_are_one_day_and_many_days_are_many() -> None:
    same = "2026-06-19, that is June 19, 2026 (Jun 19; 06/19/2026; 19 June 2026)"
    assert grade(same, ["2026-06-19"])[0] == 1.0
    dashed = "-2026-06-18-2026-06-19-June 20, 2026-"  # joined by dashes to hide from counters
    assert grade(dashed, ["2026-06-19"])[0] == 0.0
    assert grade("9:30, 09:30 or 9:30 am", ["09:30"])[0] == 1.0
    assert grade("at 9:30 or 10 am", ["09:30"])[0] == 0.0


def test_a_word_inside_a_longer_value_named_is_part_of_that_mention() -> None:
    """A description answer holds words other columns hold ("fire"): saying it names one
    value, not two; the word said on its own is still its own mention, and a word answer said
    only inside a longer value is not given."""
    key = AnswerKey(words=["dark impact fire choose.", "fire", "water", "standard"])
    answers = ["Dark impact fire choose.", "standard"]
    assert grade("Done: Dark impact fire choose., standard.", answers, key)[0] == 1.0
    assert grade("Dark impact fire choose., standard, fire.", answers, key)[0] == 0.0
    assert grade("Dark impact fire choose.", ["fire"], key)[0] == 0.0
    assert grade("It is fire, not water.", ["fire"], key)[0] == 0.0


def test_a_number_answer_from_1900_to_2100_is_said_bare() -> None:
    """A bare 1966 is a year unless an answer is such a number: then it is said bare, and
    two of them are two candidates; a year inside a date never is one."""
    assert grade("The count is 1966.", [1966])[0] == 1.0
    assert grade("1966 or 1967.", [1966])[0] == 0.0
    assert grade("Published 2025-03-30T12:37:00Z: 1966.", [1966, "2025-03-30T12:37:00Z"])[0] == 1.0
    assert grade("The count is 1966.", [42])[0] == 0.0
    assert grade("42, since 1966.", [42])[0] == 1.0


def test_a_whole_number_of_seven_digits_or_more_is_said_as_a_code() -> None:
    """A timestamp or account number (1741033840) is said as its digits; another such run is
    another candidate, and a smaller number beside it is no candidate."""
    assert grade("Created at 1741033840, 2 times.", [1741033840, 2])[0] == 1.0
    assert grade("1741033840 or 1741033841.", [1741033840])[0] == 0.0
    uuid = "40266134-57e9-4c82-8476-f8bbb231f1de"
    assert grade(f"Key {uuid}, created 1712228759.", [uuid, 1712228759])[0] == 1.0
    assert grade(f"Key {uuid}.", [40266134])[0] == 0.0  # inside the key, not said on its own


def test_a_code_that_reads_as_a_clock_time_is_credited_and_counted() -> None:
    """Codes such as "+49:77" and "12:34:56": the clock times blanked out before codes are read
    must not erase them, and a list of such values is still a list of candidates."""
    for code, rival in (("+49:77", "+11:22"), ("12:34:56", "01:02:03")):
        assert grade(f"The value is {code}.", [code])[0] == 1.0
        assert grade(f"The value is {code} or {rival}.", [code])[0] == 0.0
    assert grade("Key ORD-00062, shipped 12:34.", ["ORD-00062"])[0] == 1.0


def test_a_date_time_answer_needs_its_day_and_its_clock_time() -> None:
    assert grade("Created 2024-12-15 at 18:57.", ["2024-12-15T18:57:00Z"])[0] == 1.0
    assert grade("Created 2024-12-15T18:57:00Z.", ["2024-12-15T18:57:00Z"])[0] == 1.0
    assert grade("Created on 2024-12-15.", ["2024-12-15T18:57:00Z"])[0] == 0.0
    assert grade("2024-12-15 or 2024-12-16 at 18:57.", ["2024-12-15T18:57:00Z"])[0] == 0.0


_KINDS = st.sampled_from(["number", "fraction", "date", "time", "code"])


@st.composite
def _answer_and_other(draw: st.DrawFn) -> tuple[Any, Any]:
    kind = draw(_KINDS)
    if kind == "number":  # (a bare 1900 to 2100 reads as a year)
        a = float(draw(st.integers(0, 1850)))
        return a, a + draw(st.integers(1, 49))
    if kind == "fraction":
        cents = draw(st.integers(1, 500_000).filter(lambda c: c % 100))
        other = cents + draw(st.integers(1, 999).filter(lambda d: (cents + d) % 100))
        return cents / 100, other / 100
    if kind == "date":
        d = draw(st.dates(dt.date(2020, 1, 1), dt.date(2030, 12, 31)))
        return d.isoformat(), (d + dt.timedelta(days=draw(st.integers(1, 300)))).isoformat()
    if kind == "time":
        t = draw(st.integers(0, 24 * 60 - 1))
        o = (t + draw(st.integers(1, 24 * 60 - 1))) % (24 * 60)
        return f"{t // 60:02d}:{t % 60:02d}", f"{o // 60:02d}:{o % 60:02d}"
    row, other_row = draw(st.lists(st.integers(1, 60), min_size=2, max_size=2, unique=True))
    seat = draw(st.sampled_from("ABCDEF"))
    return f"{row}{seat}", f"{other_row}{seat}"


@given(pair=_answer_and_other(), style=st.integers(0, 20), first=st.booleans())
@budget(300)
def test_property_one_value_passes_two_fail(pair: tuple[Any, Any], style: int, first: bool) -> None:
    """Any answer of any kind, in any usual form, passes alone and fails beside another value
    of its kind written the same way, in either order."""
    answer, other = pair
    alone = f"Booking BK-00412: it is {_render(answer, style)}."
    assert grade(alone, [answer])[0] == 1.0, alone
    both = [_render(answer, style), _render(other, style)]
    listed = f"It is {' or '.join(both if first else both[::-1])}."
    assert grade(listed, [answer])[0] == 0.0, listed


def test_a_fractional_answer_beside_whole_numbers_is_one_of_many() -> None:
    """Issue 42: the agent cannot know the answer's shape, so whole numbers are candidates of
    a fractional answer too (hr's dump "2026, 10, 2, 25, 16.50" earned 1.0); money marks
    still tell an amount from a quantity."""
    assert grade("10, 2, 25, 16.50", [16.5])[0] == 0.0
    assert grade("You have 16.50 days left out of 25.", [16.5])[0] == 0.0
    assert grade("You have 16.50 days left.", [16.5])[0] == 1.0
    assert grade("2 items, $45.20 in all.", [45.2])[0] == 1.0
    assert grade("It is 16.50 and 3.", [16.5, 3])[0] == 1.0


def test_a_word_answer_has_every_name_of_the_world_as_a_candidate() -> None:
    """Issue 42: a reply naming the row it looked up (the speaker and the company) names two
    names, whichever column was asked about; few-valued columns (statuses) are no names."""
    vocabulary = Vocabulary(
        {
            "speakers.name": [f"Speaker {c}" for c in "ABCDEFG"],
            "speakers.company": ["Acme", "Globex", "Initech"],
            "talks.status": ["scheduled", "cancelled"],
        }
    )
    key = vocabulary.key("Which company is the speaker of the keynote with?", ["Globex"])
    assert grade("Globex.", ["Globex"], key)[0] == 1.0
    assert grade("Globex (the talk is scheduled).", ["Globex"], key)[0] == 1.0
    assert grade("Speaker B, Globex.", ["Globex"], key)[0] == 0.0


def test_a_conversation_is_read_together() -> None:
    """Values said in earlier messages are candidates; what the user said may be repeated;
    without a final reply there is no answer."""
    said = ["Shall I go ahead with 41?", "The answer: 42."]
    assert grade_conversation(said[-1], said, [], [42])[0] == 0.0
    assert grade_conversation(said[-1], said[1:], [], [42])[0] == 1.0
    heard = ["Sure: my booking number is 41."]
    assert grade_conversation(said[-1], said, heard, [42])[0] == 1.0
    assert grade_conversation(None, said, [], [42])[0] == 0.0


def test_list_markers_of_a_request_are_no_values_it_names() -> None:
    """A request of numbered sub-goals did not name their numbers: a reply of the markers
    is a list of candidates for a question answered 6 (it earned 1.0 when the markers were
    excused as values the request names), not a repetition of the request."""
    request = "A few things.\n1. What is the unit price of order ORD-00146?\n6. I need an email."
    key = AnswerKey(request=request)
    assert grade("1, 6", [6.0], key)[0] == 0.0  # the markers, not an answer
    assert grade("The unit price is 6.", [6.0], key)[0] == 1.0


def test_the_options_of_a_choice_are_rivals_not_repetitions() -> None:
    """tau2's "whether you used your visa, mastercard, or amex": a reply of the three options
    earned the answer when every value the request names was excused."""
    key = AnswerKey(request="Did you use your visa, mastercard, or amex credit card?")
    words = ["visa", "mastercard", "amex", "paypal"]
    key = AnswerKey(request=key.request, words=words)
    assert grade("visa, mastercard, amex", ["mastercard"], key)[0] == 0.0
    assert grade("You paid with your mastercard.", ["mastercard"], key)[0] == 1.0
