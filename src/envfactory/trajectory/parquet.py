"""Parquet export of a JSONL store: one row per episode, scalar columns for filtering and
JSON text columns for the nested parts (messages, calls, steps, rubric)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from envfactory.trajectory.record import EpisodeRecord
from envfactory.trajectory.store import read_records

NESTED = (
    "rubric",
    "step_rewards",
    "metrics",
    "timing",
    "messages",
    "tools",
    "model",
    "calls",
    "steps",
)


def _row(record: EpisodeRecord) -> dict[str, Any]:
    data = record.model_dump(mode="json")
    row = {k: v for k, v in data.items() if k not in NESTED}
    row["model_name"] = record.model.name
    row["n_calls"] = len(record.calls)
    row["n_steps"] = len(record.steps)
    row["wall_s"] = record.timing.wall_s
    row["prompt_tokens"] = sum(c.prompt_tokens or 0 for c in record.calls)
    row["completion_tokens"] = sum(c.completion_tokens or 0 for c in record.calls)
    for key in NESTED:
        row[key] = json.dumps(data[key], separators=(",", ":"))
    return row


def export_parquet(jsonl: str | Path, out: str | Path) -> Path:
    """Write the episodes of ``jsonl`` to the Parquet file ``out``; returns its path."""
    try:
        import pyarrow as pa  # type: ignore[import-untyped]
        import pyarrow.parquet as pq  # type: ignore[import-untyped]
    except ImportError:
        raise ImportError(
            "Parquet export needs pyarrow: pip install 'envfactory[parquet]'"
        ) from None
    rows = [_row(r) for r in read_records(jsonl)]
    schema = pa.schema(
        [
            ("episode_id", pa.string()),
            ("group_id", pa.string()),
            ("task_id", pa.string()),
            ("env_id", pa.string()),
            ("split", pa.string()),
            ("difficulty", pa.int32()),
            ("sample_index", pa.int32()),
            ("status", pa.string()),
            ("reward", pa.float64()),
            ("advantage", pa.float64()),
            ("error", pa.string()),
            ("state_hash", pa.string()),
            ("model_name", pa.string()),
            ("n_calls", pa.int32()),
            ("n_steps", pa.int32()),
            ("wall_s", pa.float64()),
            ("prompt_tokens", pa.int64()),
            ("completion_tokens", pa.int64()),
            *((key, pa.string()) for key in NESTED),
        ]
    )
    table = pa.Table.from_pylist(rows, schema=schema)
    path = Path(out)
    pq.write_table(table, path)
    return path
