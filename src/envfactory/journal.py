"""A long run's journal: one JSON line per finished item, so a stopped run can go on
(``envfactory synth``'s candidates, ``envfactory openapi import``'s documents).

The first line names the journal's format and holds the settings the items were judged
under; each later line is one item's outcome, written and flushed as it finishes. A process
killed mid-write leaves at most a partial last line, which :func:`read_journal` drops (and cuts
from the file).
"""

from __future__ import annotations

import json
from pathlib import Path
from types import TracebackType
from typing import Any


class JournalError(ValueError):
    """A journal that cannot be continued: another run's settings, or a damaged line."""


def read_journal(path: Path, fmt: str) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """The header and entries of the journal of format ``fmt`` at ``path`` (``None, []``
    when there is none); a partial last line is cut from the file."""
    if not path.exists():
        return None, []
    data = path.read_bytes()
    whole = data.rfind(b"\n") + 1
    if whole < len(data):
        with path.open("r+b") as fh:
            fh.truncate(whole)
    lines = data[:whole].decode().splitlines()
    records: list[dict[str, Any]] = []
    for number, line in enumerate(lines, 1):
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        if not isinstance(record, dict):
            raise JournalError(f"{path}, line {number}: not a journal record; remove the line")
        records.append(record)
    if not records:
        return None, []
    if records[0].get("format") != fmt:
        raise JournalError(f"{path}: not a journal of this kind ({fmt})")
    return records[0], records[1:]


def go_on(
    path: Path, fmt: str, now: dict[str, Any], code: str
) -> tuple[list[dict[str, Any]], Journal]:
    """The entries of the journal at ``path`` and the journal to go on with, once its header
    holds to ``now`` (the settings, and under the key ``code`` a digest of the code that
    judges); raises :class:`JournalError` naming what differs."""
    header, entries = read_journal(path, fmt)
    if header is not None and (was := {k: header.get(k) for k in now}) != now:
        why = f"{code} code" if {**was, code: 0} == {**now, code: 0} else "settings"
        raise JournalError(
            f"{path.parent} holds a run with other {why} ({was}, not {now}); run with the "
            "same settings and code to go on, or start over with --fresh (or another --out)"
        )
    return entries, Journal(path, fmt, now)


class Journal:
    """Appends one line per finished item to ``path`` (the header, with its format ``fmt``,
    first when the file is new); used as ``with Journal(path, fmt, header) as journal:
    journal.add(record)``."""

    def __init__(self, path: Path, fmt: str, header: dict[str, Any]) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = path.open("a")
        if self._fh.tell() == 0:
            self.add({"format": fmt, **header})

    def add(self, record: dict[str, Any]) -> None:
        """Write ``record`` as one line, flushed: it survives the process being killed."""
        self._fh.write(json.dumps(record, separators=(",", ":")) + "\n")
        self._fh.flush()

    def __enter__(self) -> Journal:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._fh.close()
