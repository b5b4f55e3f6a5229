"""``envfactory bench --all --json``: every benchmark that runs on this machine, in one JSON
document, with the load average read before and after each section and the date.

Sections, in order: ``world`` (the episode API, retail), ``rollout`` (the rollout engine),
``sandbox`` (the terminal worlds' sandbox), ``research``, ``repo``, ``web``, ``decode``
(batched decoding of the embedded model), ``tau2`` (against tau2-bench's approach), ``ray``
(Ray rollout workers) and ``serve`` (``bench-serve``: a server under load, and OpenEnv's). A
section whose runtime is missing here (no sandbox, no browser, no tau2 data, an extra not
installed) is ``skipped`` with the reason; one that raises is ``failed`` with the error; the
others run. Calibration (a real model over every world, hours) is not part of it.

Sizes are each benchmark's own defaults, so a section's figures are those of its single
command, except where the default would not fit a bounded run (:data:`FULL`); ``quick``
(:data:`QUICK`) shrinks every section to seconds, to check the document's shape, not to
quote. A full run takes about 10-15 minutes on a quiet 2-core machine.
"""

from __future__ import annotations

import datetime as dt
import os
import platform
import sys
import time
from collections.abc import Callable, Iterable
from importlib.util import find_spec
from typing import Any

from pydantic import BaseModel

from envfactory.contract.errors import EnvironmentUnavailable

SECTIONS = (
    "world",
    "rollout",
    "sandbox",
    "research",
    "repo",
    "web",
    "decode",
    "tau2",
    "ray",
    "serve",
)

# Arguments per section: full runs (the commands' defaults, written out) and quick ones.
FULL: dict[str, dict[str, Any]] = {
    "world": {"env_id": "retail", "episodes": 300, "live": 1000},
    "rollout": {"env_id": "retail", "live": 10_000, "throughput_concurrency": 256, "tasks": 500},
    "sandbox": {"starts": 200, "episodes": 1000},
    "research": {"episodes": 200, "sizes": (10_000, 100_000), "queries": 2000},
    "repo": {"env_id": "repo-python", "tasks": 10},
    "web": {"env_id": "web-retail", "episodes": 20, "held": (1, 2, 4, 8), "rounds": 2},
    "decode": {
        "batch": 8,
        "prefix": 1500,
        "own": 200,
        "new": 32,
        "repeats": 2,
        "calls": 6,
        "observation": 200,
        "ragged": 10,
        "reply": 96,
    },
    "tau2": {"passes": 3},
    "ray": {"env_id": "retail", "groups": 300, "group_size": 4, "repeats": 3},
    "serve": {"sessions": 2000, "concurrent": 1000, "seconds": 8.0, "think_ms": 1000.0},
}
QUICK: dict[str, dict[str, Any]] = {
    "world": {"env_id": "retail", "episodes": 20, "live": 20},
    "rollout": {
        "env_id": "retail",
        "live": 100,
        "throughput_concurrency": 16,
        "tasks": 20,
        "executors": ("sliced",),
    },
    "sandbox": {"starts": 5, "episodes": 10},
    "research": {"envs": ("research-wiki",), "episodes": 5, "sizes": (1000,), "queries": 20},
    "repo": {"env_id": "repo-python", "tasks": 1},
    "web": {"env_id": "web-retail", "episodes": 1, "held": (1,), "rounds": 1},
    "decode": {
        "batch": 2,
        "prefix": 32,
        "own": 8,
        "new": 2,
        "repeats": 1,
        "calls": 2,
        "observation": 8,
        "ragged": 2,
        "reply": 4,
    },
    "tau2": {"n": 3, "passes": 1},
    "ray": {"env_id": "retail", "groups": 4, "group_size": 2, "repeats": 1},
    "serve": {"sessions": 10, "concurrent": 4, "seconds": 0.3, "think_ms": 10.0, "peer": False},
}


class Skipped(Exception):
    """A section's runtime is missing here: the reason says which."""


def _reason(reason: str | None) -> None:
    if reason:
        raise Skipped(reason)


def _module(name: str, why: str) -> None:
    if find_spec(name) is None:
        raise Skipped(f"{name} is not installed ({why})")


def _world(a: dict[str, Any]) -> BaseModel:
    from envfactory.bench.world import bench_world

    return bench_world(**a)


def _rollout(a: dict[str, Any]) -> BaseModel:
    from envfactory.bench.rollout import bench_rollout

    return bench_rollout(**a)


def _sandbox(a: dict[str, Any]) -> BaseModel:
    from envfactory.bench.sandbox import bench_sandbox
    from envfactory.terminal.sandbox import unavailable_reason

    _reason(unavailable_reason())
    return bench_sandbox(**a)


def _research(a: dict[str, Any]) -> BaseModel:
    from envfactory.bench.research import bench_research

    return bench_research(**a)


def _repo(a: dict[str, Any]) -> BaseModel:
    from envfactory.bench.repo import bench_repo
    from envfactory.repo.projects import unavailable_reason

    _reason(unavailable_reason())
    return bench_repo(**a)


def _web(a: dict[str, Any]) -> BaseModel:
    from envfactory.bench.web import bench_web
    from envfactory.web import browser

    _reason(browser.available())
    return bench_web(**a)


def _decode(a: dict[str, Any]) -> BaseModel:
    for name in ("torch", "transformers"):
        _module(name, "the embedded model's extra")
    from envfactory.bench.decode import bench_decode
    from envfactory.integrations.embedded import ModelNotFound, embedded_path

    try:
        embedded_path()
    except ModelNotFound as exc:
        raise Skipped(str(exc)) from None
    return bench_decode(**a)


def _tau2(a: dict[str, Any]) -> BaseModel:
    from envfactory.peers.tau2.data import missing_reason

    _reason(missing_reason())
    from envfactory.peers.tau2.bench import bench_tau2
    from envfactory.registry import make

    return bench_tau2(make("tau2-retail"), **a)


def _ray(a: dict[str, Any]) -> BaseModel:
    _module("ray", "pip install 'envfactory[ray]'")
    from envfactory.integrations.ray.bench import bench_ray

    env_id = a.pop("env_id")
    return bench_ray(env_id, **a)


def _serve(a: dict[str, Any]) -> dict[str, Any]:
    try:
        from envfactory.serving.bench import BenchSettings, run_bench
    except ImportError as exc:
        raise Skipped(f"the serving extra is not installed ({exc.name})") from None
    cores = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    try:
        return run_bench(BenchSettings(**a))
    finally:  # run_bench pins this process to the client's core
        if cores is not None:
            os.sched_setaffinity(0, cores)


RUNNERS: dict[str, Callable[[dict[str, Any]], BaseModel | dict[str, Any]]] = {
    "world": _world,
    "rollout": _rollout,
    "sandbox": _sandbox,
    "research": _research,
    "repo": _repo,
    "web": _web,
    "decode": _decode,
    "tau2": _tau2,
    "ray": _ray,
    "serve": _serve,
}


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def run_section(name: str, quick: bool = False) -> dict[str, Any]:
    """One section: its status (ok, skipped, failed), the load average before and after,
    its seconds, and its result (or the reason, or the error)."""
    args = dict((QUICK if quick else FULL)[name])
    out: dict[str, Any] = {"status": "ok", "started": _now(), "load_avg_before": _load()}
    t0 = time.perf_counter()
    try:
        result = RUNNERS[name](args)
        out["result"] = result.model_dump(mode="json") if isinstance(result, BaseModel) else result
    except (Skipped, EnvironmentUnavailable) as exc:
        out |= {"status": "skipped", "reason": str(exc)}
    except Exception as exc:  # one section's failure is reported, the others still run
        out |= {"status": "failed", "error": f"{type(exc).__name__}: {exc}"[:2000]}
    out["seconds"] = round(time.perf_counter() - t0, 1)
    out["load_avg_after"] = _load()
    return out


def run_all(
    only: Iterable[str] | None = None,
    quick: bool = False,
    on_section: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Every section (or those in ``only``, in the usual order) as one JSON document.
    ``load_avg_*`` are the 1-, 5- and 15-minute load averages (``os.getloadavg()``)."""
    wanted = list(SECTIONS) if only is None else list(only)
    unknown = [s for s in wanted if s not in RUNNERS]
    if unknown:
        raise ValueError(f"unknown sections {unknown}; sections are {', '.join(SECTIONS)}")
    doc: dict[str, Any] = {
        "date": _now(),
        "quick": quick,
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "executable": sys.executable,
        },
        "load_avg_start": _load(),
        "sections": {},
    }
    t0 = time.perf_counter()
    for name in SECTIONS:
        if name in wanted:
            if on_section is not None:
                on_section(name)
            doc["sections"][name] = run_section(name, quick)
    doc["seconds"] = round(time.perf_counter() - t0, 1)
    doc["load_avg_end"] = _load()
    return doc
