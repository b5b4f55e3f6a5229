"""Reading a trajectory store while a run writes it.

A run is a store folder: its ``episodes.jsonl``, or, for a curriculum run, the
``round-NNNN/episodes.jsonl`` of each round. :class:`RunReader` remembers how many bytes of
each file it has read and, on :meth:`RunReader.refresh`, reads only what was appended since.
Only complete lines count: a line still being written (no newline yet) is left for the next
refresh, and a complete line that is not an episode record is counted in ``skipped``, never
raised. Each episode is kept as a small :class:`Row`; the full record is read back from its
place in the file when someone asks for it.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envfactory.trajectory.record import SCORED, EpisodeRecord
from envfactory.trajectory.store import EPISODES

BLOCK = 8 << 20  # bytes read at a time
SUCCESS = 1.0 - 1e-9  # the rollout summary's success: a reward of 1


@dataclass(slots=True)
class Row:
    """What the dashboard keeps of one episode."""

    episode_id: str
    group_id: str
    task_id: str
    env_id: str
    split: str
    difficulty: int
    sample_index: int
    status: str
    reward: float | None
    started: float
    ended: float
    wall_s: float
    steps: int
    tool_errors: int
    round: int | None
    file: int  # index into RunReader.files
    offset: int
    length: int

    @property
    def scored(self) -> bool:
        return self.status in SCORED and self.reward is not None

    @property
    def success(self) -> bool | None:
        return None if not self.scored or self.reward is None else self.reward >= SUCCESS

    def public(self) -> dict[str, Any]:
        return {
            "episode_id": self.episode_id,
            "group_id": self.group_id,
            "task_id": self.task_id,
            "env_id": self.env_id,
            "split": self.split,
            "difficulty": self.difficulty,
            "sample_index": self.sample_index,
            "status": self.status,
            "reward": self.reward,
            "success": self.success,
            "ended": self.ended or None,
            "wall_s": self.wall_s,
            "steps": self.steps,
            "tool_errors": self.tool_errors,
            "round": self.round,
        }


def _row(raw: Any, round_: int | None, file: int, offset: int, length: int) -> Row | None:
    """The row of a parsed line; None when it is not an episode record."""
    if not isinstance(raw, dict):
        return None
    try:
        timing = raw.get("timing") or {}
        reward = raw.get("reward")
        metrics = raw.get("metrics") or {}
        return Row(
            episode_id=str(raw["episode_id"]),
            group_id=str(raw.get("group_id", "")),
            task_id=str(raw.get("task_id", "")),
            env_id=str(raw["env_id"]),
            split=str(raw.get("split", "")),
            difficulty=int(raw["difficulty"]),
            sample_index=int(raw.get("sample_index", 0)),
            status=str(raw.get("status", "truncated")),
            reward=None if reward is None else float(reward),
            started=float(timing.get("started", 0.0) or 0.0),
            ended=float(timing.get("ended", 0.0) or 0.0),
            wall_s=float(timing.get("wall_s", 0.0) or 0.0),
            steps=len(raw.get("steps") or []),
            tool_errors=int(metrics.get("tool_errors", 0) or 0),
            round=round_,
            file=file,
            offset=offset,
            length=length,
        )
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _round_of(path: Path, root: Path) -> int | None:
    name = path.parent.name
    if path.parent != root and name.startswith("round-"):
        try:
            return int(name.removeprefix("round-"))
        except ValueError:
            return None
    return None


@dataclass
class _File:
    path: Path
    round: int | None
    offset: int = 0


@dataclass
class RunReader:
    """One run (a store folder), read incrementally. Thread-safe."""

    path: Path
    name: str
    files: list[_File] = field(default_factory=list)
    rows: list[Row] = field(default_factory=list)
    index: dict[str, int] = field(default_factory=dict)
    skipped: int = 0
    generation: int = 0  # bumped on every change, for caches
    refreshed: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def open(cls, path: str | Path, name: str | None = None) -> RunReader:
        folder = Path(path)
        if folder.is_file():  # the episodes.jsonl itself
            folder = folder.parent
        return cls(path=folder, name=name or folder.resolve().name)

    # -- what the run is ------------------------------------------------------------------

    @property
    def curriculum_run(self) -> bool:
        """A ``rollout --curriculum`` run: one store per round."""
        return any(f.round is not None for f in self.files)

    def manifest(self) -> dict[str, Any]:
        """The run's ``run.json`` (that of its first round for a curriculum run), or {}."""
        for candidate in (self.path / "run.json", *sorted(self.path.glob("round-*/run.json"))):
            try:
                value = json.loads(candidate.read_text())
            except (OSError, ValueError):
                continue
            if isinstance(value, dict):
                return value
        return {}

    def policy(self) -> str | None:
        policy = self.manifest().get("policy")
        if isinstance(policy, dict) and policy.get("name"):
            return str(policy["name"])
        return None

    # -- reading ------------------------------------------------------------------------

    def _discover(self) -> None:
        known = {f.path for f in self.files}
        found = [self.path / EPISODES, *sorted(self.path.glob(f"round-*/{EPISODES}"))]
        for p in found:
            if p not in known and p.exists():
                self.files.append(_File(p, _round_of(p, self.path)))

    def refresh(self) -> int:
        """Read what was appended since the last refresh; returns the number of new rows."""
        with self.lock:
            self._discover()
            if any(_size(f.path) < f.offset for f in self.files):
                self._reset()  # a file was replaced: read the run again from scratch
            before = len(self.rows)
            for i, f in enumerate(self.files):
                if _size(f.path) > f.offset:
                    self._read(i, f)
            self.refreshed = time.time()
            added = len(self.rows) - before
            if added or not before:
                self.generation += 1
            return added

    def _reset(self) -> None:
        for f in self.files:
            f.offset = 0
        self.rows = []
        self.index = {}
        self.skipped = 0

    def _read(self, i: int, f: _File) -> None:
        with f.path.open("rb") as handle:
            handle.seek(f.offset)
            carry = b""
            while block := handle.read(BLOCK):
                data = carry + block
                end = data.rfind(b"\n") + 1
                if end == 0:
                    carry = data
                    continue
                self._lines(i, f, data[:end], f.offset)
                f.offset += end
                carry = data[end:]
            # ``carry`` is a line still being written: it is read again, whole, next time

    def _lines(self, i: int, f: _File, chunk: bytes, start: int) -> None:
        pos = start
        for line in chunk.split(b"\n")[:-1]:
            length = len(line) + 1
            if line.strip():
                try:
                    raw = json.loads(line)
                except ValueError:
                    raw = None
                row = _row(raw, f.round, i, pos, len(line))
                if row is None or row.episode_id in self.index:
                    self.skipped += 1
                else:
                    self.index[row.episode_id] = len(self.rows)
                    self.rows.append(row)
            pos += length

    # -- reading back -------------------------------------------------------------------

    def snapshot(self) -> list[Row]:
        with self.lock:
            return list(self.rows)

    def latest(self) -> tuple[int, list[Row]]:
        """Refresh, then the generation and the rows, read together."""
        self.refresh()
        with self.lock:
            return self.generation, list(self.rows)

    def record(self, episode_id: str) -> EpisodeRecord | None:
        """The full record of an episode, read back from its place in the store."""
        with self.lock:
            at = self.index.get(episode_id)
            if at is None:
                return None
            row = self.rows[at]
            path = self.files[row.file].path
        with path.open("rb") as handle:
            handle.seek(row.offset)
            line = handle.read(row.length)
        return EpisodeRecord.model_validate_json(line)
