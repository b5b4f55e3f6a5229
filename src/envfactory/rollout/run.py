"""A rollout run in an output folder: the store, a manifest that a resume must match, and a
summary over every episode the folder holds."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import time
from collections import defaultdict
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from envfactory.contract.errors import EnvFactoryError
from envfactory.harness.config import HarnessConfig
from envfactory.policies.base import RolloutPolicy
from envfactory.rollout.engine import Listener, RolloutEngine
from envfactory.rollout.summary import RolloutStats, RunSummary
from envfactory.rollout.types import EngineConfig, TaskRef
from envfactory.trajectory.parquet import export_parquet
from envfactory.trajectory.record import EpisodeRecord
from envfactory.trajectory.store import TrajectoryStore

MANIFEST = "run.json"
SUMMARY = "summary.json"


class RunExists(EnvFactoryError):
    """The output folder holds another run (or this one, without ``resume``)."""


def _manifest(
    refs: list[TaskRef], config: EngineConfig, policy: RolloutPolicy, seats: Mapping[str, str]
) -> dict[str, Any]:
    manifest: dict[str, Any] = {
        "groups": [r.group_id for r in refs],
        "group_size": config.group_size,
        "policy": policy.info.model_dump(mode="json"),
    }
    if seats:
        manifest["seats"] = dict(seats)
    return manifest


def open_run(
    out: Path,
    refs: list[TaskRef],
    config: EngineConfig,
    policy: RolloutPolicy,
    resume: bool,
    seats: Mapping[str, str] | None = None,
) -> TrajectoryStore:
    """The store of the run in ``out``; a resume must ask for the same groups of the same
    policy (and seats), and a new run must not land on an old one."""
    manifest = _manifest(refs, config, policy, seats or {})
    path = out / MANIFEST
    if path.exists():
        if not resume:
            raise RunExists(f"{out} already holds a run: pass --resume, or choose another --out")
        if json.loads(path.read_text()) != manifest:
            raise RunExists(
                f"{out} holds a run with other tasks, group size, policy or seats; resume it "
                "with the options it was started with, or choose another --out"
            )
    else:
        out.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(manifest, indent=1))
    return TrajectoryStore(out)


def summarise(
    store: TrajectoryStore, refs: list[TaskRef], engine: RolloutEngine, wall_s: float, lag: Any
) -> RunSummary:
    """A summary over every episode in the store (this invocation and any before it)."""
    total = RolloutStats()
    kept: defaultdict[str, set[int]] = defaultdict(set)  # a world with seats: a record a seat
    for rec in store.records():
        total.add(rec)
        if rec.status != "infra_error":
            kept[rec.group_id].add(rec.sample_index)
    complete = sum(len(kept[r.group_id]) >= engine.config.group_size for r in refs)
    total.groups.update(
        complete=complete, incomplete=len(refs) - complete, skipped=engine.stats.groups["skipped"]
    )
    mine = engine.stats
    total.discarded, total.paused, total.errors = mine.discarded, mine.paused, mine.errors
    summary = total.summary(
        wall_s, peak_live=engine.peak_live, loop_lag_ms_p99=lag, out=str(store.path)
    )
    summary.steps_per_s = round(mine.steps / wall_s, 1) if wall_s > 0 else 0.0
    return summary


async def run_in(
    out: Path,
    refs: list[TaskRef],
    policy: RolloutPolicy,
    *,
    harness: HarnessConfig | None = None,
    config: EngineConfig | None = None,
    resume: bool = False,
    parquet: bool = False,
    on_episode: Listener | None = None,
    on_stop: Callable[[], None] | None = None,
    seats: Mapping[str, str] | None = None,
) -> RunSummary:
    """Run (or resume) the groups of ``refs`` into ``out``; ``seats`` says who plays which
    seat of a world with seats (:mod:`envfactory.rollout.seating`). The first Ctrl-C stops
    gracefully (live episodes are checkpointed for a resume); a second one aborts."""
    config = config or EngineConfig()
    store = open_run(out, refs, config, policy, resume, seats)
    engine = RolloutEngine(
        policy,
        harness=harness,
        config=config,
        store=store,
        on_episode=on_episode,
        keep_records=False,
        seats=seats,
    )
    loop = asyncio.get_running_loop()

    def stop() -> None:
        engine.stop()
        if on_stop is not None:
            on_stop()
        loop.remove_signal_handler(signal.SIGINT)  # a second Ctrl-C aborts

    with contextlib.suppress(NotImplementedError, RuntimeError):
        loop.add_signal_handler(signal.SIGINT, stop)
    t0 = time.perf_counter()
    try:
        result = await engine.run(refs)
    finally:
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.remove_signal_handler(signal.SIGINT)
        await engine.aclose()
        store.close()
    summary = summarise(store, refs, engine, time.perf_counter() - t0, result.loop_lag_ms_p99)
    summary.files = [str(store.path)]
    if store.partial_path.exists():
        summary.files.append(str(store.partial_path))
    if parquet:
        summary.files.append(str(export_parquet(store.path, out / "episodes.parquet")))
    (out / SUMMARY).write_text(summary.model_dump_json(indent=1))
    summary.files.append(str(out / SUMMARY))
    return summary


async def run_and_close(
    engine: RolloutEngine, refs: list[TaskRef]
) -> tuple[RunSummary, list[EpisodeRecord]]:
    """Run ``refs`` on ``engine`` and close it; (summary, the records it kept)."""
    try:
        summary = await engine.run(refs)
    finally:
        await engine.aclose()
    return summary, engine.records
