"""Does a reply give the answers the user asked for?

Numbers are read out of the text (ids and dates are not numbers here) and compared with a
tolerance of half a cent; other answers must appear as words. A reply that lists many
candidate numbers, or runs long, is a guess spread and earns nothing.
"""

from __future__ import annotations

import re
from typing import Any

from envfactory.domain.expr import FUNCTIONS

_NUMBER = re.compile(r"(?<![\w.-])-?\$?\d[\d,]*(?:\.\d+)?(?![\w-])")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
MAX_NUMBERS = 12
MAX_REPLY_CHARS = 2000


def numbers_in(text: str) -> list[float]:
    out = []
    for m in _NUMBER.finditer(text):
        token = m.group(0).replace("$", "").replace(",", "").rstrip(".")
        try:
            out.append(float(token))
        except ValueError:
            continue
    return out


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def gives(reply: str, expected: Any) -> bool:
    """Whether ``reply`` states ``expected``."""
    if isinstance(expected, bool):
        word = "yes" if expected else "no"
        return re.search(rf"\b{word}\b", reply.lower()) is not None
    if isinstance(expected, (int, float)):
        return any(abs(x - float(expected)) <= 0.005 for x in numbers_in(reply))
    text = _norm(reply)
    if isinstance(expected, str) and _DATE.match(expected):
        pretty = _norm(FUNCTIONS["pretty_date"](expected))
        return _says(text, expected) or _says(text, pretty)
    return _says(text, _norm(str(expected)))


def _says(text: str, phrase: str) -> bool:
    """``phrase`` as whole words of ``text`` (an answer "A" is not in "a day")."""
    return re.search(rf"(?<!\w){re.escape(phrase)}(?!\w)", text) is not None


def grade(reply: str | None, expected: list[Any]) -> tuple[float, str]:
    """Score in [0, 1] (fraction of answers given) and why."""
    if not expected:
        return 1.0, "no answer was asked for"
    if not reply:
        return 0.0, "no reply was given"
    if len(reply) > MAX_REPLY_CHARS:
        return 0.0, f"the reply is longer than {MAX_REPLY_CHARS} characters"
    if len(set(numbers_in(reply))) > MAX_NUMBERS:
        return 0.0, f"the reply lists more than {MAX_NUMBERS} numbers"
    hits = sum(gives(reply, e) for e in expected)
    return hits / len(expected), f"{hits} of {len(expected)} requested answers given"
