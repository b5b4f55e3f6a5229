"""Advantages for a stored run: ``credited.jsonl`` beside a run's ``episodes.jsonl``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import cast

from envfactory.credit.advantages import (
    METHODS,
    STEP_CREDITS,
    CreditConfig,
    CreditResult,
    StepCredit,
    assign,
)
from envfactory.trajectory.store import EPISODES, read_records

CREDITED = "credited.jsonl"


def parse_credit(spec: str) -> CreditConfig:
    """``method[+step][+shaping][+filter]``, e.g. ``grpo``, ``drgrpo+gigpo+shaping``."""
    parts = [p.strip() for p in spec.split("+") if p.strip()]
    if not parts or parts[0] not in METHODS:
        raise ValueError(f"{spec!r}: start with one of {', '.join(METHODS)}")
    step = next((p for p in parts[1:] if p in STEP_CREDITS), "none")
    unknown = [p for p in parts[1:] if p not in (*STEP_CREDITS, "shaping", "filter")]
    if unknown:
        raise ValueError(
            f"{spec!r}: unknown {unknown}; add {', '.join(STEP_CREDITS)}, shaping, filter"
        )
    return CreditConfig(
        method=parts[0],
        step=cast(StepCredit, step),
        shaping="shaping" in parts,
        filter_zero_variance="filter" in parts,
    )


def credit_folder(folder: Path, config: CreditConfig) -> tuple[Path, CreditResult]:
    """Write the run's records with advantages to ``folder/credited.jsonl`` (atomically)."""
    result = assign(list(read_records(folder / EPISODES)), config)
    out = folder / CREDITED
    tmp = out.with_suffix(".jsonl.tmp")
    with tmp.open("w") as f:
        for rec in result.records:
            f.write(rec.model_dump_json() + "\n")
        f.flush()
        os.fsync(f.fileno())
    tmp.replace(out)
    return out, result
