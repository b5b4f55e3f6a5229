"""Gold plans as supervised training data: the oracle's solved episodes, played through the
harness a model sees (user dialogue and tool results included), as chat rows with tool calls.

Two formats. ``native``: OpenAI-style assistant ``tool_calls`` and ``tool`` messages, with a
``tools`` column of the JSON schemas the episode exposed (a JSON string, as TRL reads it), for
chat templates that render tools. ``hermes``: the harness's text mode, tool calls as
``<tool_call>`` JSON in the assistant's text, tool results as ``<tool_response>`` blocks in a
user turn and the tools listed in the system prompt, so any chat template can train on it.

Rows carry the transcript and where it came from (world, split, difficulty, task index,
reward), nothing else: no gold plan, target or rubric beyond what the transcript shows.
One JSONL and one Parquet file per split, named after it (``jsonl/train.jsonl``,
``parquet/train.parquet``), so ``datasets`` maps the files of a folder to splits.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from envfactory.contract.tasks import Split
from envfactory.harness.config import HarnessConfig
from envfactory.rollout.engine import Listener
from envfactory.rollout.types import TaskRef
from envfactory.training.sft import solved
from envfactory.trajectory.record import ChatMessage, EpisodeRecord

Format = Literal["native", "hermes"]

#: The harness's tool format behind each export format.
TOOL_FORMAT: dict[Format, Literal["native", "text"]] = {"native": "native", "hermes": "text"}

#: The columns of a row (``tools`` in the native format only).
META_KEYS = ("task_id", "env_id", "split", "difficulty", "task_index", "reward")
MESSAGE_KEYS = ("role", "content", "tool_calls", "tool_call_id")


def row_keys(fmt: Format) -> tuple[str, ...]:
    """Every column of a row of ``fmt``, in order."""
    return ("messages", *(("tools",) if fmt == "native" else ()), *META_KEYS)


class ExportSummary(BaseModel):
    """What an export wrote."""

    rows: int = Field(description="episodes the oracle solved, one row each")
    episodes: int = Field(description="episodes played")
    unsolved: int = Field(description="tasks without a row: unsolved, faulted or not made")
    format: Format
    splits: list[str]
    per_world: dict[str, int]
    per_split: dict[str, int]
    per_difficulty: dict[str, int]
    files: list[str]
    seconds: float
    rows_per_s: float
    warnings: list[str] = Field(default_factory=list)


def harness_for(fmt: Format) -> HarnessConfig:
    """The harness the episodes are played through: what a model trained on them sees."""
    return HarnessConfig(tool_format=TOOL_FORMAT[fmt])


def task_refs(
    levels: Mapping[str, Sequence[int]], splits: Sequence[Split], tasks: int
) -> list[TaskRef]:
    """The first ``tasks`` tasks of every world × split × difficulty (``levels``: a world's
    difficulties)."""
    return [
        TaskRef(env_id, split, difficulty, index)
        for env_id, difficulties in levels.items()
        for split in splits
        for difficulty in difficulties
        for index in range(tasks)
    ]


def message(m: ChatMessage, fmt: Format) -> ChatMessage:
    """A transcript message as a training message: the chat fields of ``fmt``, every one
    present (``None`` where unused, as ``datasets`` reads them back from either file), and
    empty text rather than ``None`` beside tool calls (chat templates concatenate it)."""
    keys = MESSAGE_KEYS if fmt == "native" else MESSAGE_KEYS[:2]
    out = {k: m.get(k) for k in keys}
    if out["content"] is None:
        out["content"] = ""
    return out


def to_row(record: EpisodeRecord, fmt: Format) -> dict[str, Any]:
    """One training row: the transcript, the tools (native) and where it came from."""
    ref = TaskRef.parse(record.task_id)
    row: dict[str, Any] = {"messages": [message(m, fmt) for m in record.messages]}
    if fmt == "native":
        row["tools"] = json.dumps(record.tools, separators=(",", ":"))
    row.update(
        task_id=record.task_id,
        env_id=record.env_id,
        split=record.split,
        difficulty=record.difficulty,
        task_index=ref.index,
        reward=record.reward,
    )
    return row


def write_jsonl(rows: list[dict[str, Any]], path: Path) -> Path:
    with path.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path


def parquet_schema(fmt: Format) -> Any:
    """The Parquet schema of ``fmt``'s rows (fixed, so every export reads the same way)."""
    import pyarrow as pa  # type: ignore[import-untyped]

    fields = [("role", pa.string()), ("content", pa.string())]
    if fmt == "native":
        function = pa.struct([("name", pa.string()), ("arguments", pa.string())])
        call = pa.struct([("id", pa.string()), ("type", pa.string()), ("function", function)])
        fields += [("tool_calls", pa.list_(call)), ("tool_call_id", pa.string())]
    columns = [("messages", pa.list_(pa.struct(fields)))]
    if fmt == "native":
        columns.append(("tools", pa.string()))
    columns += [
        ("task_id", pa.string()),
        ("env_id", pa.string()),
        ("split", pa.string()),
        ("difficulty", pa.int64()),
        ("task_index", pa.int64()),
        ("reward", pa.float64()),
    ]
    return pa.schema(columns)


def write_parquet(rows: list[dict[str, Any]], path: Path, fmt: Format) -> Path:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq  # type: ignore[import-untyped]
    except ImportError:
        raise ImportError(
            "Parquet export needs pyarrow: pip install 'envfactory[parquet]'"
        ) from None
    pq.write_table(pa.Table.from_pylist(rows, schema=parquet_schema(fmt)), path)
    return path


def write(rows: list[dict[str, Any]], out: Path, splits: Sequence[str], fmt: Format) -> list[Path]:
    """``jsonl/SPLIT.jsonl`` and ``parquet/SPLIT.parquet`` in ``out`` for each split asked
    for: one folder per format, so ``load_dataset(builder, data_dir=...)`` finds the splits."""
    for folder in ("jsonl", "parquet"):
        (out / folder).mkdir(parents=True, exist_ok=True)
    files: list[Path] = []
    for split in splits:
        part = [r for r in rows if r["split"] == split]
        files.append(write_jsonl(part, out / "jsonl" / f"{split}.jsonl"))
        files.append(write_parquet(part, out / "parquet" / f"{split}.parquet", fmt))
    return files


def export(
    refs: list[TaskRef],
    out: Path,
    fmt: Format = "native",
    on_episode: Listener | None = None,
) -> ExportSummary:
    """Play the oracle on ``refs``, keep the episodes it solved (reward 1.0) and write them to
    ``out`` as ``fmt`` rows; ``on_episode`` sees every finished episode."""
    played = 0

    def count(record: EpisodeRecord) -> None:
        nonlocal played
        played += 1
        if on_episode is not None:
            on_episode(record)

    t0 = time.perf_counter()
    rows = [to_row(r, fmt) for r in solved(refs, harness_for(fmt), count)]
    splits = list(dict.fromkeys(r.split for r in refs))
    files = write(rows, out, splits, fmt)
    seconds = time.perf_counter() - t0
    return ExportSummary(
        rows=len(rows),
        episodes=played,
        unsolved=len(refs) - len(rows),
        format=fmt,
        splits=splits,
        per_world=_counts((r.env_id for r in refs), (r["env_id"] for r in rows)),
        per_split=_counts(splits, (r["split"] for r in rows)),
        per_difficulty={
            str(k): v for k, v in sorted(Counter(r["difficulty"] for r in rows).items())
        },
        files=[str(f) for f in files],
        seconds=round(seconds, 3),
        rows_per_s=round(len(rows) / seconds, 1) if seconds > 0 else 0.0,
    )


def _counts(keys: Iterable[str], values: Iterable[str]) -> dict[str, int]:
    """How often each of ``keys`` occurs in ``values`` (zero included), in the keys' order."""
    counts = dict.fromkeys(keys, 0)
    for v in values:
        counts[v] = counts.get(v, 0) + 1
    return counts
