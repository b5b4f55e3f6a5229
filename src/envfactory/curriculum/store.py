"""The curriculum's state in SQLite: every outcome, every frontier move, every task issued.

Each :meth:`CurriculumStore.commit` is one transaction in a write-ahead log, so a process
killed at any moment loses nothing that was acknowledged and never half-applies an update.
Outcomes are keyed by episode id: reporting an episode twice (a resumed run reconciling what
it already reported) counts it once. Everything the controller keeps in memory is rebuilt
from these tables when a store is opened again.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envfactory.contract.errors import EnvFactoryError

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS envs (
    env_id TEXT PRIMARY KEY, levels TEXT NOT NULL, frontier INTEGER NOT NULL,
    epoch INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS outcomes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, episode_id TEXT NOT NULL UNIQUE,
    env_id TEXT NOT NULL, difficulty INTEGER NOT NULL, success INTEGER NOT NULL,
    reward REAL NOT NULL, frontier INTEGER NOT NULL, epoch INTEGER NOT NULL, at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS outcomes_env ON outcomes (env_id, seq);
CREATE TABLE IF NOT EXISTS history (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, env_id TEXT NOT NULL, event TEXT NOT NULL,
    level_from INTEGER, level_to INTEGER NOT NULL, samples INTEGER NOT NULL,
    accuracy REAL, episodes INTEGER NOT NULL, at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS issued (
    env_id TEXT NOT NULL, split TEXT NOT NULL, difficulty INTEGER NOT NULL,
    next_index INTEGER NOT NULL, PRIMARY KEY (env_id, split, difficulty)
);
CREATE TABLE IF NOT EXISTS rounds (
    run TEXT NOT NULL, round INTEGER NOT NULL, refs TEXT NOT NULL, done INTEGER NOT NULL,
    PRIMARY KEY (run, round)
);
"""


class CurriculumError(EnvFactoryError):
    """The curriculum store cannot be used as asked (another configuration, a bad file)."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """One counted episode."""

    seq: int
    episode_id: str
    env_id: str
    difficulty: int
    success: bool
    reward: float
    frontier: int
    epoch: int


@dataclass(frozen=True, slots=True)
class Event:
    """A frontier move (or the start of an environment)."""

    seq: int
    env_id: str
    event: str
    level_from: int | None
    level_to: int
    samples: int
    accuracy: float | None
    episodes: int
    at: float


class CurriculumStore:
    """One SQLite file (or ``":memory:"``) holding a curriculum's state."""

    def __init__(self, path: str | Path = ":memory:") -> None:
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        try:
            self.conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            if self.path != ":memory:":
                self.conn.execute("PRAGMA journal_mode=WAL")
            # WAL + NORMAL: a commit is in the log before it returns, so a killed process
            # loses nothing; only a power cut can take the last commits (no fsync each time).
            self.conn.execute("PRAGMA synchronous=NORMAL")
            self.conn.execute("PRAGMA busy_timeout=10000")
            self.conn.executescript(SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise CurriculumError(f"{self.path}: not a curriculum store ({exc})") from None
        self.lock = threading.RLock()

    def close(self) -> None:
        self.conn.close()

    @contextmanager
    def commit(self) -> Iterator[sqlite3.Connection]:
        """One transaction: everything inside lands together or not at all."""
        with self.lock:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield self.conn
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            self.conn.execute("COMMIT")

    # -- settings ----------------------------------------------------------------------------

    def meta(self, key: str) -> Any:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    def set_meta(self, db: sqlite3.Connection, key: str, value: Any) -> None:
        db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, json.dumps(value)))

    # -- environments ------------------------------------------------------------------------

    def envs(self) -> dict[str, tuple[list[int], int, int]]:
        """{env_id: (levels, frontier index, epoch)}."""
        rows = self.conn.execute("SELECT env_id, levels, frontier, epoch FROM envs ORDER BY env_id")
        return {e: (json.loads(lv), f, ep) for e, lv, f, ep in rows}

    def put_env(
        self, db: sqlite3.Connection, env_id: str, levels: list[int], frontier: int, epoch: int
    ) -> None:
        db.execute(
            "INSERT OR REPLACE INTO envs VALUES (?, ?, ?, ?)",
            (env_id, json.dumps(levels), frontier, epoch),
        )

    # -- outcomes ----------------------------------------------------------------------------

    def add_outcome(
        self,
        db: sqlite3.Connection,
        episode_id: str,
        env_id: str,
        difficulty: int,
        success: bool,
        reward: float,
        frontier: int,
        epoch: int,
    ) -> bool:
        """Count an episode; False when it was counted before."""
        cur = db.execute(
            "INSERT OR IGNORE INTO outcomes (episode_id, env_id, difficulty, success, reward, "
            "frontier, epoch, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (episode_id, env_id, difficulty, int(success), reward, frontier, epoch, time.time()),
        )
        return cur.rowcount == 1

    def outcomes(self, env_id: str, limit: int, epoch: int | None = None) -> list[Outcome]:
        """The latest ``limit`` outcomes of ``env_id`` (of one frontier epoch), oldest first."""
        q = "SELECT * FROM outcomes WHERE env_id = ?"
        args: list[Any] = [env_id]
        if epoch is not None:
            q += " AND epoch = ? AND difficulty = frontier"
            args.append(epoch)
        rows = self.conn.execute(q + " ORDER BY seq DESC LIMIT ?", (*args, limit)).fetchall()
        return [_outcome(r) for r in reversed(rows)]

    def counted(self, episode_id: str) -> bool:
        """Whether an episode has been counted."""
        q = "SELECT 1 FROM outcomes WHERE episode_id = ?"
        return self.conn.execute(q, (episode_id,)).fetchone() is not None

    def frontier_count(self, env_id: str, epoch: int) -> int:
        """Episodes counted at the frontier of one epoch (since the frontier last moved)."""
        (n,) = self.conn.execute(
            "SELECT COUNT(*) FROM outcomes "
            "WHERE env_id = ? AND epoch = ? AND difficulty = frontier",
            (env_id, epoch),
        ).fetchone()
        return int(n)

    def all_outcomes(self) -> list[Outcome]:
        return [_outcome(r) for r in self.conn.execute("SELECT * FROM outcomes ORDER BY seq")]

    def counts(self) -> dict[tuple[str, int], tuple[int, int]]:
        """{(env, difficulty): (episodes, successes)} over the whole run."""
        rows = self.conn.execute(
            "SELECT env_id, difficulty, COUNT(*), SUM(success) FROM outcomes "
            "GROUP BY env_id, difficulty"
        )
        return {(e, d): (n, int(s or 0)) for e, d, n, s in rows}

    # -- history -----------------------------------------------------------------------------

    def add_event(
        self,
        db: sqlite3.Connection,
        env_id: str,
        event: str,
        level_from: int | None,
        level_to: int,
        samples: int,
        accuracy: float | None,
    ) -> None:
        (episodes,) = db.execute(
            "SELECT COUNT(*) FROM outcomes WHERE env_id = ?", (env_id,)
        ).fetchone()
        db.execute(
            "INSERT INTO history (env_id, event, level_from, level_to, samples, accuracy, "
            "episodes, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (env_id, event, level_from, level_to, samples, accuracy, episodes, time.time()),
        )

    def history(self, env_id: str | None = None) -> list[Event]:
        if env_id is None:
            rows = self.conn.execute("SELECT * FROM history ORDER BY seq")
        else:
            rows = self.conn.execute(
                "SELECT * FROM history WHERE env_id = ? ORDER BY seq", (env_id,)
            )
        return [Event(*r) for r in rows]

    # -- tasks issued ------------------------------------------------------------------------

    def take_index(self, db: sqlite3.Connection, env_id: str, split: str, difficulty: int) -> int:
        """The next unused task index of a (env, split, difficulty) cell."""
        row = db.execute(
            "SELECT next_index FROM issued WHERE env_id = ? AND split = ? AND difficulty = ?",
            (env_id, split, difficulty),
        ).fetchone()
        index = 0 if row is None else int(row[0])
        db.execute(
            "INSERT OR REPLACE INTO issued VALUES (?, ?, ?, ?)",
            (env_id, split, difficulty, index + 1),
        )
        return index

    def issued(self) -> int:
        (n,) = self.conn.execute("SELECT COALESCE(SUM(next_index), 0) FROM issued").fetchone()
        return int(n)

    # -- rounds of a rollout run -------------------------------------------------------------

    def round_refs(self, run: str, index: int) -> tuple[list[str], bool] | None:
        row = self.conn.execute(
            "SELECT refs, done FROM rounds WHERE run = ? AND round = ?", (run, index)
        ).fetchone()
        return None if row is None else (json.loads(row[0]), bool(row[1]))

    def put_round(
        self, db: sqlite3.Connection, run: str, index: int, refs: list[str], done: bool
    ) -> None:
        db.execute(
            "INSERT OR REPLACE INTO rounds VALUES (?, ?, ?, ?)",
            (run, index, json.dumps(refs), int(done)),
        )


def _outcome(row: tuple[Any, ...]) -> Outcome:
    seq, episode_id, env_id, difficulty, success, reward, frontier, epoch, _ = row
    return Outcome(seq, episode_id, env_id, difficulty, bool(success), reward, frontier, epoch)
