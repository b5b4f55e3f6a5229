"""``envfactory synth``: compose worlds, build and audit each, keep those that pass.

World ``i`` of a library is ``synthesize(i, seed)``, so a run is reproducible and can be
split over machines by index. A run for ``n`` worlds composes candidates 0, 1, 2, ... until
``n`` have passed (at most ``2 n`` candidates) and keeps the first ``n`` that passed, in index
order: the same library every run, however the work was shared among processes. The audit's
grading check compares noisy-agent success between levels, so a world whose neighbouring
levels are equally hard fails it now and then by chance; those are counted, not kept. Each
candidate ends as exactly one outcome: ``passed``
(saved to the library folder), ``compile_error`` (the engine refused the domain data: a
synthesiser bug, reported), ``no_tasks`` (a cell of the difficulty ladder is empty),
``audit_failure`` (with its failed checks counted) or ``internal_error``.
"""

from __future__ import annotations

import os
import statistics
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from envfactory.contract.errors import DomainError, SynthesisError
from envfactory.domain.loader import parse_domain
from envfactory.quality.batch import AuditedWorld, tally
from envfactory.registry import list_envs
from envfactory.registry.table import register_compiled
from envfactory.registry.worldfile import save_world
from envfactory.synth.compose import synthesize
from envfactory.synth.environment import SynthEnvironment
from envfactory.workers import imap_unordered

REASONS = ("compile_error", "no_tasks", "audit_failure", "internal_error")


@dataclass(frozen=True)
class SynthSettings:
    """Which library, how each world is audited, and where passing worlds go."""

    seed: int = 0
    out: Path | None = None
    n: int = 100
    diversity: int = 150


class WorldResult(AuditedWorld):
    """What became of one candidate world."""

    index: int
    env_id: str = ""
    patterns: list[str] = Field(default_factory=list)
    domain: dict[str, Any] | None = Field(None, exclude=True, description="when it passed")


class SynthReport(BaseModel):
    """The yield of a synthesis run."""

    generated: int = Field(description="candidates composed and audited")
    passed_audit: int = Field(description="worlds kept (the first n that passed)")
    seconds: float
    yield_rate: float = Field(description="candidates that passed / generated")
    seconds_per_world: float = Field(description="wall seconds of the run / generated")
    median_cpu_seconds: float = Field(description="CPU time per world: robust to a busy machine")
    failures: dict[str, int]
    audit_failures: dict[str, int] = Field(default_factory=dict)
    patterns: dict[str, int] = Field(description="passing worlds per pattern")
    settings: dict[str, Any] = Field(default_factory=dict)
    results: list[WorldResult] = Field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """Everything but the per-world results."""
        return self.model_dump(mode="json", exclude={"results"})


def synth_one(index: int, s: SynthSettings) -> WorldResult:
    """Compose, build, audit and (if it passes) save world ``index``. Never raises."""
    started, cpu = time.perf_counter(), time.process_time()
    result = WorldResult(index=index)
    try:
        _run(index, s, result)
    except DomainError as exc:
        result.reason, result.detail = "compile_error", str(exc)[:500]
    except SynthesisError as exc:
        result.reason, result.detail = "no_tasks", str(exc)[:500]
    except Exception as exc:  # a run must outlive a synthesiser bug; the report names it
        result.reason, result.detail = "internal_error", f"{type(exc).__name__}: {exc}"[:500]
    result.seconds = round(time.perf_counter() - started, 3)
    result.cpu_seconds = round(time.process_time() - cpu, 3)
    return result


def _run(index: int, s: SynthSettings, result: WorldResult) -> None:
    made = synthesize(index, s.seed)
    result.env_id, result.patterns = made.domain["id"], list(made.patterns)
    spec = parse_domain(made.domain, result.env_id)
    env = SynthEnvironment(spec, seed=0)
    register_compiled(
        spec.id, lambda seed=0, scale=1.0: SynthEnvironment(spec, seed=seed, scale=scale)
    )
    if result.judge(env, s.n, s.diversity):
        result.domain = made.domain


def _init_worker() -> None:
    list_envs()  # load the built-in worlds once per process, not once per world


def run_synth(
    n: int,
    settings: SynthSettings,
    jobs: int = 1,
    progress: Callable[[WorldResult], None] | None = None,
) -> SynthReport:
    """Compose candidates ``jobs`` at a time until ``n`` worlds passed; save the first ``n``
    of them (by index) to ``settings.out``."""
    started = time.perf_counter()
    results: list[WorldResult] = []
    passed = 0

    def indices() -> Iterator[tuple[int, SynthSettings]]:
        for i in range(2 * n):
            if passed >= n:
                return
            yield i, settings

    for r in imap_unordered(synth_one, indices(), jobs if n > 1 else 1, _init_worker):
        results.append(r)
        passed += r.passed
        if progress:
            progress(r)
    results.sort(key=lambda r: r.index)
    kept = [r for r in results if r.passed][:n]
    for r in kept:
        if settings.out is not None and r.domain is not None:
            save_world(settings.out, r.domain, _meta(r, settings))
    return _report(results, kept, settings, time.perf_counter() - started)


def _meta(r: WorldResult, s: SynthSettings) -> dict[str, Any]:
    return {
        "kind": "synth",
        "source": f"synth/{s.seed}/{r.index}",
        "title": (r.domain or {}).get("name", r.env_id),
        "patterns": r.patterns,
        "audit": r.audit,
        "audit_n": r.audit_n,
    }


def _report(
    results: list[WorldResult], kept: list[WorldResult], s: SynthSettings, seconds: float
) -> SynthReport:
    failures, checks = tally(results, REASONS)
    passed = sum(r.passed for r in results)
    return SynthReport(
        generated=len(results),
        passed_audit=len(kept),
        seconds=round(seconds, 2),
        yield_rate=round(passed / len(results), 4) if results else 0.0,
        seconds_per_world=round(seconds / len(results), 3) if results else 0.0,
        median_cpu_seconds=round(statistics.median(r.cpu_seconds for r in results), 3)
        if results
        else 0.0,
        failures=failures,
        audit_failures=checks,
        patterns=dict(sorted(Counter(p for r in kept for p in r.patterns).items())),
        settings={
            "seed": s.seed,
            "out": str(s.out) if s.out else None,
            "n": s.n,
            "diversity": s.diversity,
            "cpus": os.cpu_count(),
            "load_average": [round(x, 2) for x in os.getloadavg()],
        },
        results=results,
    )
