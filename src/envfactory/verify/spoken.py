"""Is an answer written in a text, in any form? The leak scan's reader of requests.

A request that states its own answer makes the question free, whatever the form: digits with
odd spacing or separators ("12 .5", "1 200", "1,200.50", "12,5"), number words ("twelve",
"one hundred and five", "twelve point five", "12 point 5", "twelve and a half"), units and
currency ("$12.50", "12.5 GB", "191 dollars and 76 cents", "76 cents"), dates in any
usual form (ordinal words too: "June nineteenth"), clock times, and codes or words with odd
spacing ("ORD - 00062", "29 b").
It reads generously: a leak scan would rather flag a request that only seems to state an
answer than miss one. Each text is read once (cached), so checking every answer of a task is
a set look-up per answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from envfactory.verify import mentions as m
from envfactory.verify.answers import kind_of, names_date

_UNITS = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
]
_TENS = ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
_ORDINALS = [
    "zeroth",
    "first",
    "second",
    "third",
    "fourth",
    "fifth",
    "sixth",
    "seventh",
    "eighth",
    "ninth",
    "tenth",
    "eleventh",
    "twelfth",
    "thirteenth",
    "fourteenth",
    "fifteenth",
    "sixteenth",
    "seventeenth",
    "eighteenth",
    "nineteenth",
]
_TENTHS = [
    "twentieth",
    "thirtieth",
    "fortieth",
    "fiftieth",
    "sixtieth",
    "seventieth",
    "eightieth",
    "ninetieth",
]
_VALUE: dict[str, int] = {
    **{w: i for i, w in enumerate(_UNITS)},
    **{w: 10 * (i + 2) for i, w in enumerate(_TENS)},
    **{w: i for i, w in enumerate(_ORDINALS) if i},
    **{w: 10 * (i + 2) for i, w in enumerate(_TENTHS)},
}
_SCALE = {"hundred": 100, "thousand": 1000, "million": 10**6, "billion": 10**9}
_ALONE = frozenset({"one", "first", "second"})  # a pronoun or an order, when said alone
_FRACTION = {"half": 0.5, "quarter": 0.25}
_FIRST = "|".join(sorted([*_VALUE, *_SCALE], key=len, reverse=True))
_WORD = f"{_FIRST}|point"
_RUN = re.compile(
    rf"\b(?:{_FIRST})(?:(?:[\s-]+(?:and[\s-]+)?)(?:{_WORD}))*"
    r"(?:\s+and\s+(?:a|one)\s+(?:half|quarter))?\b"
)
_DIGITS_AND = re.compile(r"(\d+)\s+and\s+(?:a|one)\s+(half|quarter)\b")
_POINT = re.compile(r"(\d+)\s*point\s*(\d+)")
_MONEY = re.compile(
    r"(?<![\d.])(?:(\d+)(?:\s*(?:dollars?|bucks|usd))?\s+(?:and\s+)?)?(\d{1,2})\s*cents?\b"
    r"|(?<![\d.])(\d+)\s*(?:dollars?|bucks|usd)\s+(?:and\s+)?(\d{2})(?![\d.,%]|\s*[^\W_])"
)
_SPACED_DATE = re.compile(r"(?<=\d)\s*([-/])\s*(?=\d)")
_NUMBER = re.compile(
    r"(?<![\w.-])(\d{1,3}(?:[ ,\u00a0\u202f]\d{3})+|\d+)(?:\s*[.]\s*(\d+)|,(\d{1,2})(?!\d))?"
)


def _run_digits(run: str) -> str:
    """A run of number words as digits; an "and" that follows no scale word ("five and
    twelve") separates two numbers, one that does ("one hundred and five") joins. A word
    that is mostly no number on its own ("commit one answer", "the first line") stays."""
    words = re.split(r"[\s-]+", run)
    if len(words) == 1 and words[0] in _ALONE:
        return run
    numbers: list[list[str]] = [[]]
    for i, w in enumerate(words):
        joins = i > 0 and (words[i - 1] in _SCALE or words[i + 1 : i + 2] in (["a"], ["one"]))
        if w == "and" and not joins:
            numbers.append([])
        else:
            numbers[-1].append(w)
    return " and ".join(_value(n) for n in numbers if n)


def _value(words: list[str]) -> str:
    """Number words as digits ("one hundred and five": "105"; "twelve point five": "12.5";
    "twelve and a half": "12.5"; "nineteenth": "19")."""
    words = [w for w in words if w not in ("and", "a")]
    extra = _FRACTION.get(words[-1], 0.0) if words else 0.0
    if extra:
        words = words[:-2] if len(words) > 1 and words[-2] == "one" else words[:-1]
    total = current = 0
    decimals = ""
    after_point = False
    for w in words:
        if w == "point":
            after_point = True
        elif after_point:
            decimals += str(_VALUE.get(w, 0) % 10)
        elif w in _SCALE:
            if _SCALE[w] == 100:
                current = max(current, 1) * 100
            else:
                total += max(current, 1) * _SCALE[w]
                current = 0
        else:
            current += _VALUE[w]
    whole = total + current
    if decimals:
        return f"{whole}.{decimals}"
    return f"{whole + extra:g}" if extra else str(whole)


def digits_of(text: str) -> str:
    """``text`` (lower-cased) with its number words written in digits."""
    text = _POINT.sub(r"\1.\2", text)
    text = _RUN.sub(lambda r: _run_digits(r.group(0)), text)
    text = _DIGITS_AND.sub(lambda r: f"{int(r.group(1)) + _FRACTION[r.group(2)]:g}", text)
    return _POINT.sub(r"\1.\2", text)


@dataclass(frozen=True, slots=True)
class _Said:
    """What one text states, in every reading."""

    low: str  # lower-cased, whitespace collapsed, number words in digits
    numbers: frozenset[float]
    days: frozenset[m.Date]
    times: frozenset[int]


def _numbers(text: str) -> set[float]:
    """Every number of ``text`` (dates and times blanked), in each reading of its separators:
    "1 200" is 1200 and also 1 and 200; "12 .5" is 12.5 and also 12 and 5."""
    out: set[float] = set()
    for match in _NUMBER.finditer(text):
        whole, point, comma = match.groups()
        groups = re.split(r"[ ,\u00a0\u202f]", whole)
        out.update(float(g) for g in groups)
        joined = "".join(groups)
        out.add(float(joined))
        if point is not None:
            out.add(float(f"{joined}.{point}"))
            out.add(float(point))
        if comma is not None:
            out.add(float(f"{joined}.{comma}"))
            out.add(float(comma))
    return out | _money(text)


def _money(text: str) -> set[float]:
    """Amounts said in dollars and cents: "191 dollars and 76 cents", "$191 and 76 cents",
    "191 dollars 76" (number words already in digits) are 191.76; "76 cents" is 0.76."""
    out: set[float] = set()
    for match in _MONEY.finditer(text):
        dollars, cents, whole, part = match.groups()
        if cents is not None:
            out.add(int(dollars or 0) + int(cents) / 100)
        else:
            out.add(int(whole) + int(part) / 100)
    return out


@lru_cache(maxsize=1024)
def _read(text: str) -> _Said:
    low = digits_of(m.norm(text))
    dated = _SPACED_DATE.sub(r"\1", low)
    days = frozenset(m.read_dates(dated))
    times = frozenset(m.read_times(low))
    return _Said(low, frozenset(_numbers(m.blank(dated))), days, times)


@lru_cache(maxsize=4096)
def _spaced(token: str, code: bool) -> re.Pattern[str]:
    """``token`` with any spacing or punctuation between its runs of letters and of digits
    (a ``code``: between any two of its characters, "2005 3786 6304"), as a whole token."""
    runs = re.findall(r"[^\W_]" if code else r"[^\W\d_]+|\d+", token)
    return re.compile(r"(?<![^\W_])" + r"[\W_]*".join(map(re.escape, runs)) + r"(?![^\W_])")


def stated_in(text: str, answer: Any) -> bool:
    """Whether ``text`` states ``answer`` in any form (a yes/no answer is never "stated": a
    request holds yes and no in its own words)."""
    if isinstance(answer, bool) or answer is None:
        return False
    said = _read(m.without_list_markers(text))
    kind = kind_of(answer)
    if kind in ("number", "fraction"):
        value = abs(float(answer))
        return any(abs(v - value) <= 0.005 for v in said.numbers)
    if kind == "date":
        return names_date(answer, said.days, said.times)
    if kind == "time":
        return m.time_of(str(answer).strip()) in said.times
    token = m.norm(str(answer))
    if not re.search(r"[^\W_]", token):
        return token in said.low
    return _spaced(token, kind == "code").search(said.low) is not None
