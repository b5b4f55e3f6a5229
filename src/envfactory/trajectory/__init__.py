"""Trajectories: the episode record, its JSONL store, Parquet export and trainer formats."""

from envfactory.trajectory.convert import (
    MissingTokens,
    SequenceRow,
    StepRow,
    TokenSequence,
    to_messages,
    to_sequence,
    to_steps,
)
from envfactory.trajectory.parquet import export_parquet
from envfactory.trajectory.record import (
    SCORED,
    CallRecord,
    EpisodeRecord,
    ModelInfo,
    StepRecord,
    Timing,
)
from envfactory.trajectory.store import StoreError, TrajectoryStore, read_records

__all__ = [
    "SCORED",
    "CallRecord",
    "EpisodeRecord",
    "MissingTokens",
    "ModelInfo",
    "SequenceRow",
    "StepRecord",
    "StepRow",
    "StoreError",
    "Timing",
    "TokenSequence",
    "TrajectoryStore",
    "export_parquet",
    "read_records",
    "to_messages",
    "to_sequence",
    "to_steps",
]
