"""A run's journal: one JSON line per finished candidate, so a stopped run can go on.

The first line holds the settings the candidates were judged under; each later line is one
candidate's outcome, written and flushed as it finishes. A process killed mid-write leaves
at most a partial last line, which :func:`read_journal` drops (and cuts from the file).
"""

from __future__ import annotations

import json
from pathlib import Path
from types import TracebackType
from typing import Any

FORMAT = "envfactory-synth-journal/1"


class JournalError(ValueError):
    """A journal that cannot be continued: another run's settings, or a damaged line."""


def read_journal(path: Path) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """The header and entries of the journal at ``path`` (``None, []`` when there is none);
    a partial last line is cut from the file."""
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
    if records[0].get("format") != FORMAT:
        raise JournalError(f"{path}: not an envfactory synth journal ({FORMAT})")
    return records[0], records[1:]


class Journal:
    """Appends one line per finished candidate to ``path`` (the header first, when the file is
    new); used as ``with Journal(path, header) as journal: journal.add(record)``."""

    def __init__(self, path: Path, header: dict[str, Any]) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = path.open("a")
        if self._fh.tell() == 0:
            self.add({"format": FORMAT, **header})

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
