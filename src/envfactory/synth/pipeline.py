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

Candidates run in this process, in a process pool, or as Ray tasks (``ray=True``), all
through :func:`synth_one`. With a library folder, a run is resumable: each candidate's
outcome goes to the folder's journal as it finishes and each passing world is saved as it
passes, so the same run started again skips what is journaled. Passing worlds past the first
``n`` are removed at the end, so the library and report are those of an uninterrupted run.
"""

from __future__ import annotations

import bisect
import contextlib
import hashlib
import json
import os
import statistics
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from envfactory.contract.errors import DomainError, SynthesisError
from envfactory.domain.loader import parse_domain
from envfactory.journal import Journal, JournalError, go_on, read_journal
from envfactory.quality.batch import AuditedWorld, tally
from envfactory.registry import list_envs
from envfactory.registry.table import register_compiled
from envfactory.registry.worldfile import save_world
from envfactory.synth.compose import synthesize
from envfactory.synth.environment import SynthEnvironment
from envfactory.workers import imap_unordered

REASONS = ("compile_error", "no_tasks", "audit_failure", "internal_error")
JOURNAL = "synth-journal.jsonl"
JOURNAL_FORMAT = "envfactory-synth-journal/1"


@dataclass(frozen=True)
class SynthSettings:
    """Which library, how each world is audited, and where passing worlds go."""

    seed: int = 0
    out: Path | None = None
    audit_n: int = 100  # tasks audited per world
    diversity: int = 150

    def judged_by(self) -> dict[str, int]:
        """What decides each candidate's outcome: a journal holds to one such set."""
        return {"seed": self.seed, "audit_n": self.audit_n, "diversity": self.diversity}


class WorldResult(AuditedWorld):
    """What became of one candidate world."""

    index: int
    env_id: str = ""
    digest: str = Field("", description="of the domain data, when it passed")
    patterns: list[str] = Field(default_factory=list)
    domain: dict[str, Any] | None = Field(None, exclude=True, description="when it passed")


class SynthReport(BaseModel):
    """The yield of a synthesis run."""

    generated: int = Field(description="candidates up to the last one the library needs")
    passed_audit: int = Field(description="worlds kept (the first n that passed)")
    surplus: int = Field(
        0, description="candidates this run finished past those (under way when n had passed)"
    )
    seconds: float = Field(description="wall seconds of this run (a resumed run: its own)")
    yield_rate: float = Field(description="candidates that passed / generated")
    seconds_per_world: float = Field(description="wall seconds / candidates this run finished")
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
    if result.judge(env, s.audit_n, s.diversity):
        result.domain, result.digest = made.domain, _digest(made.domain)


def _digest(domain: dict[str, Any]) -> str:
    text = json.dumps(domain, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _init_worker() -> None:
    list_envs()  # load the built-in worlds once per process, not once per world


def run_synth(
    n: int,
    settings: SynthSettings,
    jobs: int = 1,
    progress: Callable[[WorldResult], None] | None = None,
    ray: bool = False,
    fresh: bool = False,
) -> SynthReport:
    """Compose candidates ``jobs`` at a time (or as Ray tasks on the cluster this process is
    connected to) until ``n`` worlds passed; save the first ``n`` of them (by index) to
    ``settings.out``. A run into a folder with a journal goes on from it; ``fresh`` discards
    the journal and the worlds it saved instead. Raises :class:`JournalError` for a journal
    of other settings."""
    started = time.perf_counter()
    done, journal_cm = _open(settings, fresh)
    passing = sorted(i for i, r in done.items() if r.passed)
    ran: list[int] = []

    def indices() -> Iterator[tuple[int, SynthSettings]]:
        for i in range(2 * n):
            if bisect.bisect_left(passing, i) >= n:
                return  # n passed below i: i cannot be kept
            if i not in done:
                yield i, settings

    with journal_cm as journal:
        for r in imap_unordered(synth_one, indices(), jobs if n > 1 else 1, _init_worker, ray):
            if r.domain is not None and settings.out is not None:
                save_world(settings.out, r.domain, _meta(r, settings))
            if journal is not None:
                journal.add({"index": r.index, **r.model_dump(mode="json")})
            done[r.index] = r
            ran.append(r.index)
            if r.passed:
                bisect.insort(passing, r.index)
            if progress:
                progress(r)
    decided = _decided(done, n)
    kept = [r for r in decided if r.passed]
    if settings.out is not None:
        _settle(settings, settings.out, kept, done.values())
    last = decided[-1].index if decided else -1
    report = _report(decided, kept, settings, time.perf_counter() - started, len(ran))
    report.surplus = sum(i > last for i in ran)
    return report


def _open(
    s: SynthSettings, fresh: bool
) -> tuple[dict[int, WorldResult], contextlib.AbstractContextManager[Journal | None]]:
    """The candidates journaled in ``s.out`` (by index), and the journal to go on with;
    ``fresh`` removes the old journal and the worlds it saved first."""
    if s.out is None:
        return {}, contextlib.nullcontext()
    path, now = s.out / JOURNAL, _header(s)
    if fresh:
        with contextlib.suppress(JournalError):
            _remove(s.out, map(WorldResult.model_validate, read_journal(path, JOURNAL_FORMAT)[1]))
        path.unlink(missing_ok=True)
    entries, journal = go_on(path, JOURNAL_FORMAT, now, "composer")
    return {r.index: r for r in map(WorldResult.model_validate, entries)}, journal


def _header(s: SynthSettings) -> dict[str, Any]:
    """What a journal holds to: the settings, and the composer (by the digest of world 0)."""
    return {**s.judged_by(), "composer": _digest(synthesize(0, s.seed).domain)}


def _decided(done: dict[int, WorldResult], n: int) -> list[WorldResult]:
    """The candidates that decide a library of ``n``: 0, 1, 2, ... up to the ``n``-th that
    passed (all ``2 n`` when fewer passed), in index order."""
    decided: list[WorldResult] = []
    passed = 0
    for i in range(2 * n):
        if passed >= n:
            break
        decided.append(done[i])
        passed += done[i].passed
    return decided


def _settle(
    s: SynthSettings, out: Path, kept: list[WorldResult], journaled: Iterable[WorldResult]
) -> None:
    """Make ``out``'s journaled worlds exactly ``kept``: a kept world whose file is gone
    (removed by an earlier run for fewer worlds) is composed again from its index; the others
    are removed."""
    for r in kept:
        if not (out / f"{r.env_id}.json").exists():
            r.domain = synthesize(r.index, s.seed).domain
            if _digest(r.domain) != r.digest:
                raise JournalError(f"world {r.index} composes otherwise now; run with --fresh")
            save_world(out, r.domain, _meta(r, s))
    keep = {r.index for r in kept}
    _remove(out, (r for r in journaled if r.index not in keep))


def _remove(out: Path, results: Iterable[WorldResult]) -> None:
    for r in results:
        if r.passed:
            (out / f"{r.env_id}.json").unlink(missing_ok=True)


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
    results: list[WorldResult],
    kept: list[WorldResult],
    s: SynthSettings,
    seconds: float,
    ran: int,
) -> SynthReport:
    failures, checks = tally(results, REASONS)
    passed = sum(r.passed for r in results)
    return SynthReport(
        generated=len(results),
        passed_audit=len(kept),
        seconds=round(seconds, 2),
        yield_rate=round(passed / len(results), 4) if results else 0.0,
        seconds_per_world=round(seconds / ran, 3) if ran else 0.0,
        median_cpu_seconds=round(statistics.median(r.cpu_seconds for r in results), 3)
        if results
        else 0.0,
        failures=failures,
        audit_failures=checks,
        patterns=dict(sorted(Counter(p for r in kept for p in r.patterns).items())),
        settings={
            "seed": s.seed,
            "out": str(s.out) if s.out else None,
            "audit_n": s.audit_n,
            "diversity": s.diversity,
            "cpus": os.cpu_count(),
            "load_average": [round(x, 2) for x in os.getloadavg()],
        },
        results=results,
    )
