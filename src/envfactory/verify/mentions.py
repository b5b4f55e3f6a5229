"""The values a text mentions, by kind: dates, clock times, numbers, codes, yes/no and words.

One reader per kind, used both to find an expected answer in a reply and to count the other
candidates of its kind there, so whatever could match an answer is also counted. Dates and
times are read first and blanked out, so their digits are not numbers; ids and codes (``29B``,
``ORD-00062``, ``555-292-0857``) are not numbers either.
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

_MONTH_NAMES = [name.lower() for name in calendar.month_name[1:]]
_MONTH = (
    r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
)
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(\d{4})"
# Each date form, with the order of its (year, month, day) groups.
_DATE_FORMS: tuple[tuple[re.Pattern[str], tuple[int, int, int]], ...] = (
    (re.compile(r"(?<!\d)(\d{4})[-/](\d{1,2})[-/](\d{1,2})(?!\d)"), (1, 2, 3)),
    (re.compile(r"(?<![\d/])(\d{1,2})/(\d{1,2})/(\d{4})(?![\d/])"), (3, 1, 2)),  # US m/d/y
    (re.compile(rf"\b{_MONTH}\s+{_DAY}(?:,?\s+{_YEAR})?(?!\d)"), (3, 1, 2)),
    (re.compile(rf"(?<!\d){_DAY}(?:\s+of)?\s+{_MONTH}(?:,?\s+{_YEAR})?(?![\w])"), (3, 2, 1)),
)
_MONTH_YEAR = re.compile(rf"\b{_MONTH}\s+{_YEAR}(?!\d)")  # no day: a period, not a date
_MERIDIEM = r"\s*([ap])\.?\s?m\b\.?"
_TIMES = (
    re.compile(rf"(?<![\d:.])(\d{{1,2}}):(\d{{2}})(?::\d{{2}})?(?:{_MERIDIEM})?(?![\d:])"),
    re.compile(rf"(?<![\d:.])(\d{{1,2}})()(?:{_MERIDIEM})"),
)
_NOON = re.compile(r"\b(noon|midday|midnight)\b")
_NUMBER = re.compile(
    r"(?<![\w.,-])(-)?([$€£])?\s?(-)?((?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?)(?![\w-]|[.,]\d)"
    r"(\s*(?:dollars?|usd|eur|euros?|gbp)\b)?"
)
_ORDINAL = re.compile(r"^\d+(st|nd|rd|th)$")
_YES_NO = re.compile(r"\b(yes|no)\b")
CODE_DIGITS = 7  # a bare run of this many digits is a code, not an amount
Date = tuple[int | None, int, int]  # (year or None when not said, month, day)


def read_dates(text: str) -> set[Date]:
    """Every date ``text`` names (lower-cased text), in any of the usual forms."""
    out: set[Date] = set()
    for pattern, (y, m, d) in _DATE_FORMS:
        for match in pattern.finditer(text):
            month = match.group(m)
            mm = int(month) if month.isdigit() else _month(month)
            year = match.group(y)
            day = _date(int(year) if year else None, mm, int(match.group(d)))
            if day is not None:
                out.add(day)
    return out


def _month(name: str) -> int:
    return next(i for i, full in enumerate(_MONTH_NAMES, 1) if full.startswith(name[:3]))


def _date(year: int | None, month: int, day: int) -> Date | None:
    try:
        dt.date(year or 2024, month, day)  # 2024: a leap year, so February 29 is a date
    except ValueError:
        return None
    return (year, month, day)


def date_of(iso: str) -> Date:
    d = dt.date.fromisoformat(iso)
    return (d.year, d.month, d.day)


def same_day(expected: Date, said: Date) -> bool:
    return said[1:] == expected[1:] and said[0] in (None, expected[0])


def resolve_years(days: set[Date]) -> set[Date]:
    """A date said without its year is the day of that month and day that the text names
    with a year, if any (it only repeats it); otherwise it stays yearless."""
    full = {(mm, d) for y, mm, d in days if y is not None}
    return {day for day in days if day[0] is not None or day[1:] not in full}


def read_times(text: str) -> set[int]:
    """Every clock time ``text`` names, as minutes after midnight ("9:30", "09:30 am", "2 pm",
    "noon")."""
    out: set[int] = set()
    for pattern in _TIMES:
        for match in pattern.finditer(text):
            hour, minute = int(match.group(1)), int(match.group(2) or 0)
            half = match.group(3)
            if half is not None:
                if not 1 <= hour <= 12:
                    continue
                hour = hour % 12 + (12 if half == "p" else 0)
            if hour < 24 and minute < 60:
                out.add(hour * 60 + minute)
    for match in _NOON.finditer(text):
        out.add(0 if match.group(1) == "midnight" else 720)
    return out


def time_of(text: str) -> int:
    hour, minute = text.split(":")
    return int(hour) * 60 + int(minute)


@dataclass(frozen=True, slots=True)
class Amounts:
    """The numbers a text states. When any is marked as money (``$45``, ``45 dollars``), only
    the marked ones are amounts: the rest are quantities ("2 items"), not answers."""

    values: frozenset[float]
    years: frozenset[float] = frozenset()  # bare numbers from 1900 to 2100: amounts if asked

    def of_answers(self, expected: Iterable[float]) -> frozenset[float]:
        """The values that could answer ``expected``: bare year-like numbers too when one of
        those answers is itself such a number (a count of 1966 is said "1966")."""
        return self.values | self.years if any(map(is_year, expected)) else self.values

    def has(self, expected: float) -> bool:
        return any(abs(v - expected) <= 0.005 for v in self.of_answers([expected]))


def is_year(value: float) -> bool:
    return float(value).is_integer() and 1900 <= value <= 2100


def read_amounts(text: str) -> Amounts:
    """The numbers of a lower-cased text whose dates and times are blanked out. A bare
    four-digit number from 1900 to 2100 is a year (an amount only where an answer is such a
    number: :meth:`Amounts.of_answers`), and a bare run of ``CODE_DIGITS`` or more digits a
    code (a tracking or phone number), not an amount."""
    plain: set[float] = set()
    marked: set[float] = set()
    years: set[float] = set()
    for match in _NUMBER.finditer(text):
        sign, currency, signed, digits, unit = match.groups()
        money = bool(currency or unit)
        bare = not money and "," not in digits and "." not in digits
        if bare and len(digits) >= CODE_DIGITS:
            continue
        if bare and len(digits) == 4 and is_year(int(digits)) and not (sign or signed):
            years.add(float(digits))
            continue
        value = float(digits.replace(",", "")) * (-1 if sign or signed else 1)
        (marked if money else plain).add(round(value, 2))
    return Amounts(frozenset(marked or plain), frozenset() if marked else frozenset(years))


def blank(text: str) -> str:
    """``text`` with its dates, month-and-year periods and clock times replaced by spaces."""
    patterns = [p for p, _ in _DATE_FORMS] + [_MONTH_YEAR, *_TIMES]
    for pattern in patterns:
        text = pattern.sub(lambda m: " " * len(m.group(0)), text)
    return text


_TOKEN_START = r"(?<!\w)(?<!\w-)"  # a code is a whole token, not part of a hyphenated one
_TOKEN_END = r"(?!\w)(?!-\w)"


def code_pattern(code: str) -> re.Pattern[str]:
    """Tokens built like ``code``: its runs of letters and of digits, of any length, and the
    same punctuation (seat ``29B``: ``5A``, ``40F``; ``ORD-00062``: ``BK-7``). A code of
    digits alone is a run of at least ``CODE_DIGITS`` digits (shorter ones are numbers). A
    token is whole: no part of a longer hyphenated one (the 40266134 of a UUID is no code)."""
    if code.isdigit():
        return re.compile(rf"{_TOKEN_START}\d{{{CODE_DIGITS},}}{_TOKEN_END}")
    runs = re.findall(r"[^\W\d_]+|\d+|.", code)
    parts = [
        "[^\\W\\d_]+" if r[0].isalpha() else r"\d+" if r[0].isdigit() else re.escape(r)
        for r in runs
    ]
    return re.compile(rf"{_TOKEN_START}{''.join(parts)}{_TOKEN_END}")


def read_codes(text: str, shape: re.Pattern[str]) -> set[str]:
    """The tokens of ``text`` (dates and times blanked) built like a code; ordinals ("2nd")
    are not codes."""
    return {c for c in shape.findall(text) if not _ORDINAL.match(c)}


def read_yes_no(text: str) -> set[str]:
    return set(_YES_NO.findall(text))


def says(text: str, phrase: str) -> bool:
    """``phrase`` as whole words of ``text`` (an answer "A" is not in "a day")."""
    return phrase in text and _whole(phrase).search(text) is not None


@lru_cache(maxsize=8192)
def _whole(phrase: str) -> re.Pattern[str]:
    """``phrase`` as whole words (compiled once: re's own cache holds 512 patterns, fewer
    than the phrases a world's answers are told apart from)."""
    return re.compile(rf"(?<!\w){re.escape(phrase)}(?!\w)")


def longest_first(phrases: Iterable[str]) -> tuple[str, ...]:
    """Distinct ``phrases`` in the order :func:`phrases_named` reads them."""
    return tuple(sorted(set(phrases), key=len, reverse=True))


def phrases_named(text: str, phrases: Iterable[str]) -> set[str]:
    """The ``phrases`` ``text`` names as whole words, longest first: a phrase said only
    inside a longer one named ("fire" in the description "Dark energy fire choose.") is part
    of that mention, not a mention of its own. A tuple is taken as :func:`longest_first`
    made it (a world's words, ordered once)."""
    named: set[str] = set()
    ordered = phrases if isinstance(phrases, tuple) else longest_first(phrases)
    for phrase in ordered:
        if not phrase or phrase not in text:  # a whole-word mention is a substring first
            continue
        pattern = _whole(phrase)
        if pattern.search(text):
            named.add(phrase)
            text = pattern.sub(" ; ", text)
    return named


_LIST_MARKER = re.compile(r"(?m)^[ \t]*\d{1,2}[.)](?=\s)")


def without_list_markers(text: str) -> str:
    """``text`` with the numbers that open its lines as list markers ("6. I need ...")
    blanked: they count the requests, they are no values a request names."""
    return _LIST_MARKER.sub(lambda found: " " * len(found.group(0)), text)


def norm(text: str) -> str:
    return " ".join(text.lower().split())
