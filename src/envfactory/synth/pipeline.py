"""``envfactory synth``: compose worlds, build and audit each, keep those that pass.

World ``i`` of a library is ``synthesize(i, seed)``, so a run is reproducible and can be
split over machines by index. Each candidate ends as exactly one outcome: ``passed``
(saved to the library folder), ``compile_error`` (the engine refused the domain data: a
synthesiser bug, reported), ``no_tasks`` (a cell of the difficulty ladder is empty),
``audit_failure`` (with its failed checks counted), ``timeout`` or ``internal_error``.
"""

from __future__ import annotations

import os
import statistics
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from envfactory.domain.loader import parse_domain
from envfactory.errors import DomainError, SynthesisError
from envfactory.openapi.library import register_world, save_world
from envfactory.quality.batch import audit_at_scale, audit_summary, check_name, empty_cell
from envfactory.registry import list_envs
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


class WorldResult(BaseModel):
    """What became of one candidate world."""

    index: int
    env_id: str = ""
    patterns: list[str] = Field(default_factory=list)
    passed: bool = False
    reason: str | None = None
    detail: str = ""
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    tools: int = 0
    entities: int = 0
    rows: int = 0
    goals: int = 0
    audit_n: int = 0
    audit: dict[str, Any] | None = None
    problems: list[str] = Field(default_factory=list)


class SynthReport(BaseModel):
    """The yield of a synthesis run."""

    generated: int
    passed_audit: int
    seconds: float
    yield_rate: float = Field(description="passed_audit / generated")
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
    register_world(
        spec.id, lambda seed=0, scale=1.0: SynthEnvironment(spec, seed=seed, scale=scale)
    )
    info = env.info()
    result.tools, result.entities, result.rows = info.tools, info.tables, info.rows
    result.goals = info.goal_templates
    if why := empty_cell(env):
        result.reason, result.detail = "no_tasks", why
        return
    report, result.audit_n = audit_at_scale(env, s.n, s.diversity)
    result.audit, result.problems = audit_summary(report), report.problems[:10]
    if not report.passed:
        result.reason, result.detail = "audit_failure", "; ".join(report.problems[:3])[:500]
        return
    result.passed = True
    if s.out is not None:
        meta = {
            "kind": "synth",
            "source": f"synth/{s.seed}/{index}",
            "title": info.name,
            "patterns": result.patterns,
            "audit": result.audit,
            "audit_n": result.audit_n,
        }
        save_world(s.out, made.domain, meta)


def _init_worker() -> None:
    list_envs()  # load the built-in worlds once per process, not once per world


def run_synth(
    n: int,
    settings: SynthSettings,
    jobs: int = 1,
    progress: Callable[[WorldResult], None] | None = None,
) -> SynthReport:
    """Worlds ``0 .. n-1`` of the library, ``jobs`` at a time."""
    started = time.perf_counter()
    results = []
    items = ((i, settings) for i in range(n))
    for r in imap_unordered(synth_one, items, jobs if n > 1 else 1, _init_worker):
        results.append(r)
        if progress:
            progress(r)
    results.sort(key=lambda r: r.index)
    return _report(results, settings, time.perf_counter() - started)


def _report(results: list[WorldResult], s: SynthSettings, seconds: float) -> SynthReport:
    failures = Counter(r.reason for r in results if r.reason)
    checks: Counter[str] = Counter()
    for r in results:
        if r.reason == "audit_failure":
            checks.update({check_name(p) for p in r.problems})
    passed = [r for r in results if r.passed]
    return SynthReport(
        generated=len(results),
        passed_audit=len(passed),
        seconds=round(seconds, 2),
        yield_rate=round(len(passed) / len(results), 4) if results else 0.0,
        seconds_per_world=round(seconds / len(results), 3) if results else 0.0,
        median_cpu_seconds=round(statistics.median(r.cpu_seconds for r in results), 3)
        if results
        else 0.0,
        failures={k: failures[k] for k in REASONS if failures[k]},
        audit_failures=dict(checks.most_common()),
        patterns=dict(sorted(Counter(p for r in passed for p in r.patterns).items())),
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
