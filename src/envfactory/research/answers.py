"""Grading one committed answer: normalised text, numbers, dates in several formats, aliases."""

from __future__ import annotations

import datetime as dt
import re
import unicodedata
from decimal import Decimal
from typing import Literal

AnswerType = Literal["name", "number", "date"]
_WORDS = (
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
    "nineteen", "twenty",
)  # fmt: skip
_NUMBER_WORDS = {w: i for i, w in enumerate(_WORDS)}
_NUMERAL = re.compile(r"(?<![\w.,])-?\d+(?:[.,]\d+| \d{3}(?!\d))*")  # digits and what joins them
_WELL_FORMED = re.compile(r"-?(?:[1-9]\d{0,2}(,|\s)\d{3}(?:\1\d{3})*|\d+)(?:\.\d+)?")
_ORDINAL = re.compile(r"\b(\d{1,2})(?:st|nd|rd|th)\b")
_DATE_FORMATS = ("%Y-%m-%d", "%Y/%m/%d", "%d %B %Y", "%B %d %Y", "%d %b %Y", "%b %d %Y")


def normalise(text: str) -> str:
    """Lower case, no accents or punctuation, single spaces, no leading article."""
    text = unicodedata.normalize("NFKD", text)
    text = "".join(c for c in text if not unicodedata.combining(c)).lower()
    text = " ".join(re.sub(r"[^\w\s]|_", " ", text).split())
    return re.sub(r"^(the|a|an) ", "", text)


def number(text: str) -> Decimal | None:
    """The one number ``text`` gives, exactly: digits with a decimal part or well-formed
    thousands groups ("194,910", "194 910", not "0 001"), or a small number word. None when it
    gives none, several, or a malformed one."""
    words = normalise(text).split()
    named = [_NUMBER_WORDS[w] for w in words if w in _NUMBER_WORDS]
    digits = _NUMERAL.findall(text.replace("\u00a0", " "))
    if len(named) + len(digits) != 1:
        return None
    if named:
        return Decimal(named[0])
    if not _WELL_FORMED.fullmatch(digits[0]):
        return None
    return Decimal(re.sub(r"[, ]", "", digits[0]))


def date(text: str) -> dt.date | None:
    """A date written as 1987-03-14, 1987/03/14, 14 March 1987 or March 14, 1987."""
    cleaned = _ORDINAL.sub(r"\1", text.strip().rstrip("."))
    cleaned = " ".join(re.sub(r"(?<=[A-Za-z]),|,(?= ?\d{4})|\bof\b|\bthe\b", " ", cleaned).split())
    for fmt in _DATE_FORMATS:
        try:
            return dt.datetime.strptime(cleaned, fmt).date()
        except ValueError:
            continue
    return None


def accepted(kind: AnswerType, value: str, aliases: list[str]) -> list[str]:
    """The normalised forms a right answer may take."""
    if kind == "name":
        return sorted({normalise(v) for v in [value, *aliases]})
    return [value]


def matches(kind: AnswerType, answer: str, forms: list[str]) -> bool:
    """Whether ``answer`` states exactly the expected value."""
    if kind == "name":
        return normalise(answer) in forms
    if kind == "number":
        return number(answer) == int(forms[0])
    return date(answer) == dt.date.fromisoformat(forms[0])
