"""What an agent may send: JSON values that every world can store, compare and echo back.

Agent input is checked here once, before any world sees it, so that nothing an agent sends can
fail inside a world (and void its episode as ``env_error``) or raise out of ``step()``:

- numbers are finite, and integers fit SQLite's signed 64-bit range;
- text (strings and object keys) holds no NUL and no lone surrogate (neither can be encoded
  as UTF-8, passed to a process, or written to a file name);
- objects have string keys, nesting is at most :data:`MAX_DEPTH` deep, and the whole value is
  at most :data:`MAX_CHARS` characters;
- only JSON types: None, bool, int, float, str, list, dict.

JSON text is parsed strictly: ``NaN`` and ``Infinity`` are not JSON and are refused.
"""

from __future__ import annotations

import json
import math
from typing import Any, NamedTuple

INT_MIN, INT_MAX = -(2**63), 2**63 - 1  # SQLite's INTEGER
MAX_DEPTH = 32
MAX_CHARS = 1 << 20  # characters of a value (strings and keys, plus about two per item)


def text_problem(text: str) -> str | None:
    """What makes ``text`` unusable (a NUL, a lone surrogate), or None."""
    if "\x00" in text:
        return "contains a NUL character"
    if text.isascii():  # a flag CPython keeps: no surrogate to look for
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "contains a lone surrogate (not valid Unicode text)"
    return None


def number_problem(value: int | float) -> str | None:
    """What makes a number unusable (not finite, an integer beyond 64 bits), or None."""
    if isinstance(value, float):
        return None if math.isfinite(value) else "must be a finite number"
    return None if INT_MIN <= value <= INT_MAX else "is out of range (64-bit integers only)"


# Where a value sits: the top-level name, or (where its container sits, its key or index),
# spelled out only when there is a problem to report.
_Where = str | tuple[Any, Any]


def _path(where: _Where) -> str:
    if isinstance(where, str):
        return where
    parent, key = where
    path = _path(parent)
    if isinstance(key, int):
        return f"{path}[{key}]"
    if key.isidentifier() and len(key) <= 40:
        return f"{path}.{key}"
    return f"{path}[{key[:40]!r}]"


class BadValue(NamedTuple):
    """Where a value is wrong (a path, safe to show), what is wrong, and the top-level key."""

    where: str
    problem: str
    field: str | None


def value_problem(value: Any, name: str = "arguments") -> BadValue | None:
    """The first problem with an agent-sent ``value``, or None when it is fine.

    ``where`` is a path from ``name`` (``arguments.items[2]``); keys that are not clean text
    are not spelled out.
    """
    size = 0
    stack: list[tuple[Any, _Where, int, str | None]] = [(value, name, 0, None)]
    while stack:
        v, where, depth, field = stack.pop()
        size += 1
        if isinstance(v, str):  # the common case first
            size += len(v)
            problem = text_problem(v)
        elif v is None or isinstance(v, bool):
            continue
        elif isinstance(v, (int, float)):
            problem = number_problem(v)
        elif isinstance(v, (list, dict)):
            if depth >= MAX_DEPTH:
                bad = f"is nested more than {MAX_DEPTH} levels deep"
                return BadValue(_path(where), bad, field)
            size += len(v)
            if size > MAX_CHARS:  # before its items are queued
                return _too_large(name)
            problem = None
            if isinstance(v, list):
                stack.extend((x, (where, i), depth + 1, field) for i, x in enumerate(v))
            else:
                for key, x in v.items():
                    if not isinstance(key, str):
                        return BadValue(_path(where), "has a key that is not a string", field)
                    if key_problem := text_problem(key):
                        return BadValue(_path(where), f"has a key that {key_problem}", field)
                    size += len(key)
                    stack.append((x, (where, key), depth + 1, field if depth else key[:100]))
        else:
            problem = f"is not a JSON value ({type(v).__name__})"
        if problem:
            return BadValue(_path(where), problem, field)
        if size > MAX_CHARS:
            return _too_large(name)
    return None


def _too_large(name: str) -> BadValue:
    return BadValue(name, f"is too large (more than {MAX_CHARS} characters)", None)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number: numbers must be finite")


def load_json(text: str | bytes) -> Any:
    """Parse JSON text strictly (``NaN``, ``Infinity`` refused); raises ``ValueError``."""
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except RecursionError:
        raise ValueError("nested too deeply") from None
