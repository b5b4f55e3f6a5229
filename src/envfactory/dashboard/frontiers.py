"""The curriculum's frontiers for the dashboard: what ``envfactory curriculum show`` and
``history`` report, read from a curriculum's SQLite file while a run may be updating it.

A curriculum run (``rollout --curriculum DB --out RUN``) records each of its rounds in the
file under the run folder's absolute path, so the file that steers a run can be found: the
ones named with ``--curriculum``, or else any ``*.sqlite`` / ``*.db`` file beside or inside
the run folder whose rounds name it.
"""

from __future__ import annotations

import sqlite3
from dataclasses import asdict
from pathlib import Path
from typing import Any

from envfactory.curriculum.controller import Curriculum
from envfactory.curriculum.store import CurriculumError, CurriculumStore

PATTERNS = ("*.sqlite", "*.sqlite3", "*.db")


def _ro(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=5)


def runs_of(path: Path) -> list[str]:
    """The run folders (absolute paths) a curriculum file has steered; [] when it is not one."""
    try:
        conn = _ro(path)
    except sqlite3.Error:
        return []
    try:
        return [r for (r,) in conn.execute("SELECT DISTINCT run FROM rounds ORDER BY run")]
    except sqlite3.Error:
        return []
    finally:
        conn.close()


def find_for(run: Path) -> list[Path]:
    """Curriculum files beside or inside ``run`` that steered it."""
    me = str(run.resolve())
    found = []
    for folder in (run, run.resolve().parent):
        for pattern in PATTERNS:
            for candidate in sorted(folder.glob(pattern)):
                if candidate.is_file() and me in runs_of(candidate):
                    found.append(candidate)
    return found


def read(path: Path) -> dict[str, Any]:
    """Frontiers (per world: frontier, window, accuracy at the frontier, episodes by level,
    sampling weight) and the history of frontier moves; ``error`` when unreadable."""
    out: dict[str, Any] = {"path": str(path), "runs": runs_of(path)}
    if not path.is_file():
        return {**out, "error": "no such file"}
    try:
        conn = _ro(path)  # read-only first: a file that is no curriculum is never touched
        try:
            tables = {t for (t,) in conn.execute("SELECT name FROM sqlite_master")}
            started = (
                "meta" in tables
                and conn.execute("SELECT 1 FROM meta WHERE key = 'config'").fetchone()
            )
        finally:
            conn.close()
        if not {"meta", "envs", "history"} <= tables:
            return {**out, "error": "not a curriculum store"}
        if not started:  # created a moment ago: its settings are not written yet
            return {**out, "error": "the curriculum has not started yet"}
        cur = Curriculum(CurriculumStore(path))
        try:
            envs = [s.model_dump(mode="json") for s in cur.state()]
            history = [asdict(e) for e in cur.history()]
            config = asdict(cur.config)
        finally:
            cur.close()
    except (CurriculumError, sqlite3.Error, ValueError, TypeError) as exc:
        return {**out, "error": str(exc)}
    return {**out, "config": config, "envs": envs, "history": history}
