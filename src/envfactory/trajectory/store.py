"""An append-only JSONL store of episode records that survives being killed at any moment.

Each finished episode is one line of ``episodes.jsonl``, written, flushed and fsynced before
:meth:`TrajectoryStore.append` returns (a writer thread commits whatever is queued in one
fsync, so many episodes finishing together cost one disk flush). A line cut short by a kill is
removed when the store is opened again, so the episode is simply run again: nothing is lost and
nothing is recorded twice. In-flight episodes can be checkpointed to ``partial.jsonl`` (the
latest checkpoint of an episode wins) and resumed from there.
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import threading
from collections.abc import Iterable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass
from io import BufferedWriter
from pathlib import Path
from types import TracebackType
from typing import Any

from envfactory.contract.errors import EnvFactoryError
from envfactory.trajectory.record import EpisodeRecord

EPISODES = "episodes.jsonl"
PARTIAL = "partial.jsonl"


class StoreError(EnvFactoryError):
    """The store cannot take a record (a duplicate episode, a corrupted file, a closed store)."""


@dataclass(frozen=True, slots=True)
class Entry:
    """What resuming needs to know about a recorded episode."""

    episode_id: str
    group_id: str
    sample_index: int
    status: str


def _read_lines(path: Path, *, repair: bool) -> Iterator[tuple[int, bytes]]:
    """Complete lines of ``path`` with their line numbers; a torn last line (a write cut short)
    is cut off the file when ``repair``."""
    if not path.exists():
        return
    data = path.read_bytes()
    end = data.rfind(b"\n") + 1
    if end < len(data) and repair:
        with path.open("r+b") as f:
            f.truncate(end)
            f.flush()
            os.fsync(f.fileno())
    for number, line in enumerate(data[:end].splitlines(), start=1):
        if line.strip():
            yield number, line


@dataclass(frozen=True, slots=True)
class _Job:
    episode_id: str
    payload: EpisodeRecord | bytes  # a finished episode, or a checkpoint's line
    fut: Future[None]


class _Writer(threading.Thread):
    """Writes queued episodes and checkpoints in batches, then flushes and fsyncs each file it
    touched. Checkpoints of an episode supersede each other, so when ``partial.jsonl`` has
    grown past ``compact_bytes`` and is mostly stale, it is rewritten with the latest
    checkpoint of each live episode."""

    def __init__(
        self, store: TrajectoryStore, fsync: bool, latest: dict[str, bytes], compact_bytes: int
    ) -> None:
        super().__init__(name="trajectory-writer", daemon=True)
        self.fsync = fsync
        self.episodes = store.path
        self.partial = store.partial_path
        self.latest = latest
        self.compact_bytes = compact_bytes
        self.queue: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()

    def run(self) -> None:
        files: dict[Path, BufferedWriter] = {}
        stop = False
        while not stop:
            batch = [self.queue.get()]
            while True:
                try:
                    batch.append(self.queue.get_nowait())
                except queue.Empty:
                    break
            jobs = [b for b in batch if b is not None]
            stop = len(jobs) < len(batch)
            if jobs:
                self._commit(jobs, files)
        for f in files.values():
            f.close()

    def _commit(self, jobs: list[_Job], files: dict[Path, BufferedWriter]) -> None:
        try:
            lines: dict[Path, list[bytes]] = {self.episodes: [], self.partial: []}
            for job in jobs:
                if isinstance(job.payload, bytes):
                    self.latest[job.episode_id] = job.payload
                    lines[self.partial].append(job.payload)
                else:
                    self.latest.pop(job.episode_id, None)
                    lines[self.episodes].append(_line(job.payload))
            for path, chunk in lines.items():
                if chunk:
                    f = files.get(path)
                    if f is None:
                        f = files[path] = path.open("ab")
                    f.writelines(chunk)
                    f.flush()
                    if self.fsync:
                        os.fsync(f.fileno())
            size = files[self.partial].tell() if self.partial in files else 0
            if size > self.compact_bytes and size > 2 * sum(map(len, self.latest.values())):
                files.pop(self.partial).close()
                _rewrite(self.partial, self.latest.values())
        except Exception as exc:  # a full disk, a removed directory: every waiter hears of it
            for job in jobs:
                job.fut.set_exception(StoreError(f"could not write the trajectory store: {exc}"))
            return
        for job in jobs:
            job.fut.set_result(None)


def _rewrite(path: Path, lines: Iterable[bytes]) -> None:
    """Replace ``path`` with ``lines``, atomically and durably."""
    tmp = path.with_suffix(".tmp")
    with tmp.open("wb") as f:
        f.writelines(lines)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _line(record: EpisodeRecord) -> bytes:
    """One JSONL line. Text that is not Unicode (a lone surrogate an agent or an endpoint sent)
    is kept with U+FFFD in the surrogate's place, so such a record is written, not refused."""
    try:
        return record.model_dump_json().encode() + b"\n"
    except ValueError:  # pydantic's serialisation error, or a UnicodeEncodeError for a key
        valid = EpisodeRecord.model_validate(_valid_text(record.model_dump()))
        return valid.model_dump_json().encode() + b"\n"


def _valid_text(value: Any) -> Any:
    if isinstance(value, str):
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(value, list):
        return [_valid_text(v) for v in value]
    if isinstance(value, dict):
        return {_valid_text(k): _valid_text(v) for k, v in value.items()}
    return value


class TrajectoryStore:
    """``episodes.jsonl`` (finished episodes) and ``partial.jsonl`` (checkpoints) in a folder."""

    def __init__(
        self, directory: str | Path, *, fsync: bool = True, compact_bytes: int = 64 << 20
    ) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.path = self.directory / EPISODES
        self.partial_path = self.directory / PARTIAL
        self.entries: dict[str, Entry] = {}
        for number, line in _read_lines(self.path, repair=True):
            entry = _entry(line, self.path, number)
            self.entries[entry.episode_id] = entry
        self.partials = self._compact_partials()
        latest = {k: _line(r) for k, r in self.partials.items()}
        self._writer = _Writer(self, fsync, latest, compact_bytes)
        self._writer.start()
        self._closed = False

    # -- reading -----------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.entries)

    def __contains__(self, episode_id: object) -> bool:
        return episode_id in self.entries

    def records(self) -> Iterator[EpisodeRecord]:
        """Every finished episode, in the order they were written."""
        yield from read_records(self.path)

    def _compact_partials(self) -> dict[str, EpisodeRecord]:
        latest: dict[str, EpisodeRecord] = {}
        for _, line in _read_lines(self.partial_path, repair=True):
            try:
                record = EpisodeRecord.model_validate_json(line)
            except ValueError:
                continue  # a checkpoint is only a shortcut; a bad one is run again
            if record.episode_id not in self.entries:
                latest[record.episode_id] = record
        if self.partial_path.exists():
            _rewrite(self.partial_path, (_line(r) for r in latest.values()))
        return latest

    # -- writing -----------------------------------------------------------------------------

    def submit(self, record: EpisodeRecord) -> Future[None]:
        """Queue a finished episode; the future is done once it is on disk."""
        if self._closed:
            raise StoreError("the store is closed")
        if record.episode_id in self.entries:
            raise StoreError(f"episode {record.episode_id} is already recorded")
        self.entries[record.episode_id] = Entry(
            record.episode_id, record.group_id, record.sample_index, record.status
        )
        self.partials.pop(record.episode_id, None)
        fut: Future[None] = Future()
        self._writer.queue.put(_Job(record.episode_id, record, fut))
        return fut

    async def append(self, record: EpisodeRecord) -> None:
        """Record a finished episode; returns once it is durable."""
        await asyncio.wrap_future(self.submit(record))

    def append_sync(self, record: EpisodeRecord) -> None:
        self.submit(record).result()

    def checkpoint(self, record: EpisodeRecord) -> Future[None]:
        """Save an in-flight episode (serialised now, so the caller may keep changing it)."""
        if self._closed:
            raise StoreError("the store is closed")
        fut: Future[None] = Future()
        self._writer.queue.put(_Job(record.episode_id, _line(record), fut))
        return fut

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._writer.queue.put(None)
            self._writer.join()

    def __enter__(self) -> TrajectoryStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _entry(line: bytes, path: Path, number: int) -> Entry:
    try:
        raw = json.loads(line)
        return Entry(raw["episode_id"], raw["group_id"], int(raw["sample_index"]), raw["status"])
    except (ValueError, KeyError, TypeError) as exc:
        raise StoreError(f"{path}:{number} is not an episode record ({exc})") from None


def read_records(path: str | Path) -> Iterator[EpisodeRecord]:
    """Episode records from a JSONL file (complete lines only)."""
    for number, line in _read_lines(Path(path), repair=False):
        try:
            yield EpisodeRecord.model_validate_json(line)
        except ValueError as exc:
            raise StoreError(f"{path}:{number} is not an episode record: {exc}") from None
