"""Does a reply give the answers the user asked for, each as one committed value?

Every expected answer has a kind, read from its value: yes/no, a number, a date (of a
date-time, the day and the clock time must both be said), a clock time, a code (one token with
digits: seat ``29B``, tracking number ``200537866304``) or a word (a name, a city, a status).
The reply's mentions of that kind are read with the reader that finds the answer
(:mod:`envfactory.verify.mentions`), so whatever could match counts as a candidate; the words
a reply could name are the values the answer's column holds in the world, recorded on the task
at synthesis (:class:`~envfactory.contract.tasks.AnswerKey`).

The rule: for each kind asked for, the reply may name no more distinct values of that kind than
answers of that kind were asked for; values the request itself names do not count (repeating
the question is not a guess). A reply that names more earns nothing for its answers, whatever
its format: a list of candidates is no answer. Otherwise the score is the fraction of expected
answers given. Candidates are what the agent could mean as the answer without knowing its
shape: every number the reply names is a candidate for a number answer, whole (45) or
fractional (45.20) alike, and a word answer's candidates are its column's values and every
name the world holds (:meth:`Vocabulary.key`), not only the values of its own column.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

from envfactory.contract.tasks import AnswerKey
from envfactory.verify import mentions as m

Kind = Literal["yes/no", "number", "fraction", "date", "time", "code", "word"]
MAX_REPLY_CHARS = 2000
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
# A date-time (``2024-12-15T18:57:00Z``) is answered by its day and its clock time.
ISO_DATE_TIME = re.compile(
    r"^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2})(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?$"
)
_CLOCK = re.compile(r"^([01]?\d|2[0-3]):[0-5]\d$")
_NUMERIC = re.compile(r"^-?\d+(?:\.\d+)?$")
_COUNTED_AS: dict[Kind, Kind] = {"fraction": "number"}  # candidates are counted as numbers


def kind_of(expected: Any) -> Kind:
    """The kind of an expected answer, from its value."""
    if isinstance(expected, bool):
        return "yes/no"
    if isinstance(expected, int) and expected >= 10 ** (m.CODE_DIGITS - 1):
        return "code"  # said as a bare run of digits (a timestamp, an account number)
    if isinstance(expected, (int, float)):
        return "number" if float(round(expected, 2)).is_integer() else "fraction"
    text = str(expected).strip()
    if _ISO_DATE.match(text) or ISO_DATE_TIME.match(text):
        return "date"
    if _CLOCK.match(text):
        return "time"
    if _NUMERIC.match(text) and len(text.lstrip("-").split(".")[0]) < m.CODE_DIGITS:
        return kind_of(float(text))
    if any(c.isdigit() for c in text) and not any(c.isspace() for c in text):
        return "code"
    return "word"


@dataclass(frozen=True, slots=True)
class _Reading:
    """What one text names, for the kinds being graded."""

    text: str  # lower-cased, whitespace collapsed
    blanked: str  # the same, its dates and times blanked out
    amounts: m.Amounts
    days: set[m.Date]
    times: set[int]

    @classmethod
    def of(cls, text: str) -> _Reading:
        low = m.norm(text)
        blanked = m.blank(low)
        days = m.resolve_years(m.read_dates(low))
        return cls(low, blanked, m.read_amounts(blanked), days, m.read_times(low))

    def candidates(self, kind: Kind, expected: Sequence[Any], names: tuple[str, ...]) -> set[Any]:
        """The distinct values of ``kind`` this text names (``expected``: the answers of that
        kind, whose shapes say what a code looks like; ``names``: for words, the phrases a
        word answer is told apart from, normalised and ordered by
        :func:`~envfactory.verify.mentions.longest_first`)."""
        if kind == "number":  # fractional answers too: 16.50 is one of "10, 25, 16.50"
            return set(self.amounts.of_answers(map(float, expected)))
        if kind == "date":
            return set(self.days)
        if kind == "time":
            return set(self.times)
        if kind == "yes/no":
            return m.read_yes_no(self.text)
        if kind == "code":
            shapes: dict[str, set[re.Pattern[str]]] = {}
            for code in (str(e).lower() for e in expected):
                shapes.setdefault(self._source(code), set()).add(m.code_pattern(code))
            named: set[str] = set()
            for source, of_source in shapes.items():
                found = {c for shape in of_source for c in m.read_codes(source, shape)}
                named |= m.phrases_named(source, found)  # not the 40266134 of a UUID
            return named
        return m.phrases_named(self.text, names)

    def _source(self, code: str) -> str:
        """Where codes built like ``code`` are read: the text with its dates and times blanked
        (the 15 of "2024-03-15" is no code), unless ``code`` itself reads as a time or date
        ("+49:77", "12:34:56"), which blanking would erase."""
        return self.text if m.blank(code) != code else self.blanked

    def gives(self, expected: Any) -> bool:
        kind = kind_of(expected)
        if kind in ("number", "fraction"):
            return self.amounts.has(float(expected))
        if kind == "date":
            return names_date(expected, self.days, self.times)
        if kind == "time":
            return m.time_of(str(expected).strip()) in self.times
        if kind == "yes/no":
            return ("yes" if expected else "no") in m.read_yes_no(self.text)
        if kind == "code":
            code = str(expected).lower()
            return code in m.read_codes(self._source(code), m.code_pattern(code))
        return m.says(self.text, m.norm(str(expected)))


def names_date(expected: Any, days: Iterable[m.Date], times: Iterable[int]) -> bool:
    """Whether the ``days`` and clock ``times`` a text names give the date (or date-time)
    ``expected``: the day, and for a date-time its clock time too."""
    text = str(expected).strip()
    stamp = ISO_DATE_TIME.match(text)
    day = m.date_of(stamp.group(1) if stamp else text)
    on_day = any(m.same_day(day, said) for said in days)
    return on_day and (stamp is None or m.time_of(stamp.group(2)) in times)


def comparable(expected: Any) -> Any:
    """``expected`` as compared with other answers (45.2 is 45.20; "29B" is "29b")."""
    if kind_of(expected) in ("number", "fraction"):
        return round(float(expected), 2)
    return expected if isinstance(expected, bool) else m.norm(str(expected))


def gives(reply: str, expected: Any) -> bool:
    """Whether ``reply`` states ``expected`` (not whether it commits to it: see :func:`grade`)."""
    return _Reading.of(reply).gives(expected)


def grade(
    reply: str | None,
    expected: Sequence[Any],
    key: AnswerKey | None = None,
    max_chars: int | None = MAX_REPLY_CHARS,
) -> tuple[float, str]:
    """Score in [0, 1] (the fraction of answers given, or 0 for a list of candidates) and
    why. ``key`` names the request (whose values a reply may repeat) and the words of the
    answers' kind; without one, a word answer has only itself as a candidate. A reply longer
    than ``max_chars`` earns 0 (None: a caller that bounds its parts itself, such as a whole
    conversation read as one reply)."""
    if not expected:
        return 1.0, "no answer was asked for"
    if not reply:
        return 0.0, "no reply was given"
    if max_chars is not None and len(reply) > max_chars:
        return 0.0, f"the reply is longer than {max_chars} characters"
    key = key or AnswerKey()
    typed, words = tuple((type(e), e) for e in expected), tuple(key.words)
    try:
        sheet = _sheet(typed, key.request, words)
    except TypeError:  # an answer that cannot be a cache key (a list): read it afresh
        sheet = _sheet.__wrapped__(typed, key.request, words)
    return sheet.grade(_read(reply))


def grade_conversation(
    reply: str | None,
    said: Sequence[str],
    heard: Sequence[str],
    expected: Sequence[Any],
    key: AnswerKey | None = None,
) -> tuple[float, str]:
    """:func:`grade` of an episode's answers: the final ``reply`` is what commits the agent,
    and everything it ``said`` to the user (the reply among it) is read together, so values
    spread over several messages are as many candidates as one message listing them; what
    the user said back (``heard``) the agent may repeat, as it may the request. Each message
    is bounded as a reply is. No final reply: no answer."""
    if reply is None or not expected:
        return grade(reply, expected, key)
    messages = list(said) or [reply]
    if any(len(text) > MAX_REPLY_CHARS for text in messages):
        return 0.0, f"a message is longer than {MAX_REPLY_CHARS} characters"
    if heard:
        key = key or AnswerKey()
        key = key.model_copy(update={"request": "\n".join([key.request, *heard])})
    return grade("\n".join(messages), expected, key, max_chars=None)


@dataclass(frozen=True, slots=True)
class _Kind:
    """One kind of answer asked for: its answers, the phrases a word answer is told apart
    from, how many distinct values a reply may name, and the values it names that are no
    candidates (the request's, and those that answers of other kinds hold in their text)."""

    answers: tuple[Any, ...]
    names: tuple[str, ...]
    allowed: int
    excused: frozenset[Any]


@dataclass(frozen=True, slots=True)
class _Sheet:
    """What grading needs from the answers and their key, read once per task: a verdict then
    reads only the reply."""

    expected: tuple[tuple[Any, Kind, Any], ...]  # (answer, its kind, comparable(answer))
    kinds: dict[Kind, _Kind]

    def grade(self, said: _Reading) -> tuple[float, str]:
        # A word or code answer is given when the reply names it on its own, not inside another.
        alone: dict[Kind, set[Any]] = {}
        for kind, of in self.kinds.items():
            named = said.candidates(kind, of.answers, of.names)
            if kind in ("word", "code"):
                alone[kind] = set(named)
            named -= of.excused
            if len(named) > of.allowed:
                return 0.0, (
                    f"the reply names {len(named)} values of kind {kind} where {of.allowed} "
                    "was asked for: a list of candidates is no answer"
                )
        hits = sum(
            same in alone[kind] if kind in alone else said.gives(e)
            for e, kind, same in self.expected
        )
        n = len(self.expected)
        return hits / n, f"{hits} of {n} requested answers given"


@lru_cache(maxsize=4096)
def _sheet(typed: tuple[tuple[type, Any], ...], request: str, words: tuple[str, ...]) -> _Sheet:
    """The :class:`_Sheet` of the answers ``typed`` ((type, value) pairs: 1 is not True) under
    a key's request and words, kept per task."""
    expected = [e for _, e in typed]
    asked = _Reading.of(m.without_list_markers(request))
    # Distinct values by kind: two questions with the same answer are answered by one value.
    counts = Counter(kind for kind, _ in {(_counted(e), comparable(e)) for e in expected})
    kinds: dict[Kind, _Kind] = {}
    for kind, allowed in counts.items():
        of_kind = [e for e in expected if _counted(e) == kind]
        names = m.longest_first(m.norm(w) for w in (*words, *map(str, of_kind)))
        # The values a request names are no guesses, unless it names an answer among them:
        # then they are the options of a choice ("visa, mastercard or amex?"), each a rival.
        options = any(asked.gives(e) for e in of_kind)
        repeated = set() if options else asked.candidates(kind, of_kind, names)
        excused = repeated | _embedded(kind, of_kind, expected, names)
        kinds[kind] = _Kind(tuple(of_kind), names, allowed, frozenset(excused))
    return _Sheet(tuple((e, kind_of(e), comparable(e)) for e in expected), kinds)


def _counted(expected: Any) -> Kind:
    """The kind whose candidates ``expected`` is counted among (a fraction: the numbers)."""
    kind = kind_of(expected)
    return _COUNTED_AS.get(kind, kind)


@lru_cache(maxsize=4)
def _read(reply: str) -> _Reading:
    """A reply's reading. The last few are kept: the checks of one verdict read the same
    reply (a database world's answer criterion and tau2's communicate check)."""
    return _Reading.of(reply)


def _embedded(
    kind: Kind, of_kind: list[Any], expected: Sequence[Any], names: tuple[str, ...]
) -> set[Any]:
    """Values of ``kind`` that answers of other kinds hold in their own text (the 356 of
    "Suite 356"): giving those answers names them, so they are no candidates, unless one is
    itself an answer counted in ``kind``."""
    own: list[str] = []
    others: list[str] = []
    for e in expected:
        (own if _counted(e) == kind else others).append(str(e))
    held = _Reading.of(" ".join(others)).candidates(kind, of_kind, names)
    return held - _Reading.of(" ".join(own)).candidates(kind, of_kind, names)


NAME_COLUMN_MIN = 6  # distinct words a column holds to be a column of names


def _names(values: Iterable[Any]) -> frozenset[str]:
    """The values of a column of names (normalised): at least ``NAME_COLUMN_MIN`` distinct
    words, each capitalised as a name is (a column of lower-case words, such as statuses,
    genres or filler text, holds no names); else none."""
    held = {v for v in values if isinstance(v, str)}
    if len(held) < NAME_COLUMN_MIN or not all(
        v[:1].isupper() and kind_of(v) == "word" for v in held
    ):
        return frozenset()
    return frozenset(m.norm(v) for v in held)


class Vocabulary:
    """The string values of a world's columns: a word answer's candidates are the values of
    the columns that hold it (a speaker's name: every speaker's name) and every name the
    world holds (:func:`_names`: people, companies, titles, cities), so a reply that names
    the whole row it looked up names many candidates, whichever column was asked about."""

    def __init__(self, columns: Mapping[str, Iterable[Any]]) -> None:
        self.columns = {
            name: frozenset(m.norm(v) for v in values if isinstance(v, str))
            for name, values in columns.items()
        }
        self.holding: dict[str, list[str]] = {}
        for name, values in self.columns.items():
            for value in values:
                self.holding.setdefault(value, []).append(name)
        self.names = frozenset().union(*(_names(vs) for vs in columns.values()))

    def key(self, request: str, answers: Sequence[Any]) -> AnswerKey:
        """The answer key of a task that asks ``request`` and expects ``answers``."""
        words: set[str] = set()
        for answer in answers:
            if kind_of(answer) == "word":
                words |= self.names
                for column in self.holding.get(m.norm(str(answer)), ()):
                    words |= self.columns[column]
        return AnswerKey(request=request, words=sorted(words))
