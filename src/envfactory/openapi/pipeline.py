"""Import at scale: compile documents into worlds in parallel, audit each, keep the good.

For each document: read, compile to domain data, validate it through the engine, build the
world, check every cell of the difficulty ladder has tasks, audit it, and save it only if the
audit passes. Every document ends as exactly one outcome; a document that cannot be read or
modelled is skipped with its reason, never a crash:

- ``malformed``: not JSON/YAML, not an OpenAPI document, references pointing at nothing;
- ``unsupported_construct``: Swagger 1.x, external references, oversized documents;
- ``no_resources``: no operation lists, gets, creates, updates or deletes rows;
- ``no_writable_resource``: reads only, through one operation (every task the same call);
- ``compile_error``: the compiled domain does not validate (an importer bug; reported);
- ``no_tasks``: a difficulty or split has no task (too few rows or goals; or every operation
  creates unlinked rows, so no held-out task exists);
- ``audit_failure``: the audit's verdict (its failed checks are counted too);
- ``timeout``: compile plus audit used more CPU time than the limit;
- ``internal_error``: the importer itself failed (a bug, reported with its message).

The audit runs with ``n`` tasks and a ``diversity`` prefix (see :func:`audit`); a world that
fails only the noisy-oracle grading check (a sampling-noise check) is audited again at the
audit's default ``n`` = 300, and that verdict stands.

A run with an ``out`` folder journals each outcome there as it finishes
(``openapi-journal.jsonl``), so the same run started again goes on where it stopped: it skips
the documents journaled (but those that timed out, which a busy machine may have caused) and
reports them with the rest. The journal holds to the audit settings and to the importer's and
the audit's code (a digest of their sources): a run under others is refused.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from pydantic import BaseModel, Field

from envfactory.contract.errors import DomainError, SynthesisError
from envfactory.domain.loader import parse_domain
from envfactory.journal import Journal, JournalError, go_on, read_journal
from envfactory.openapi.compile import compile_document
from envfactory.openapi.document import SpecError, read_document
from envfactory.openapi.environment import OpenAPIEnvironment
from envfactory.openapi.library import factory_for
from envfactory.openapi.model import NoWorld
from envfactory.openapi.names import world_id
from envfactory.quality.batch import FULL_N, AuditedWorld, tally
from envfactory.registry import list_envs
from envfactory.registry.table import free_id, register_compiled
from envfactory.registry.worldfile import save_world
from envfactory.workers import imap_unordered

REASONS = (
    "malformed",
    "unsupported_construct",
    "no_resources",
    "no_writable_resource",
    "compile_error",
    "no_tasks",
    "audit_failure",
    "timeout",
    "internal_error",
)
JOURNAL = "openapi-journal.jsonl"
JOURNAL_FORMAT = "envfactory-openapi-journal/1"
RETRIED = ("timeout",)  # near the limit, CPU time still varies with load: tried again on resume


@dataclass(frozen=True)
class Settings:
    """How each document is audited and where passing worlds go."""

    out: Path | None = None
    n: int = 100
    diversity: int = 150
    timeout: float = 120.0  # CPU seconds per document: a busy machine's wait is not counted
    seed: int = 0


class SpecResult(AuditedWorld):
    """What became of one document."""

    source: str
    env_id: str | None = None
    operations: int = 0


class ImportReport(BaseModel):
    """The yield of an import run, and why the rest failed."""

    specs: int
    compiled: int
    passed_audit: int
    seconds: float
    failures: dict[str, int]
    audit_failures: dict[str, int] = Field(
        default_factory=dict, description="failed audit checks, counted over audit failures"
    )
    median_seconds: float = 0.0
    p90_seconds: float = 0.0
    median_seconds_compiled: float = 0.0
    median_cpu_seconds: float = Field(0.0, description="CPU time: robust to a busy machine")
    journaled: int = Field(0, description="outcomes taken from the journal of an earlier run")
    settings: dict[str, Any] = Field(default_factory=dict)
    results: list[SpecResult] = Field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """Everything but the per-document results."""
        return self.model_dump(mode="json", exclude={"results"})

    def compact(self) -> dict[str, Any]:
        """The summary, the yield per provider, and one short row per document: [source,
        outcome ("passed" or the reason), CPU seconds]."""
        providers: dict[str, list[int]] = {}
        for r in self.results:
            counts = providers.setdefault(r.source.split("/")[0], [0, 0])
            counts[0] += 1
            counts[1] += r.passed
        return {
            **self.summary(),
            "providers": {p: {"specs": n, "passed": k} for p, (n, k) in sorted(providers.items())},
            "documents": [
                [r.source, "passed" if r.passed else r.reason, r.cpu_seconds] for r in self.results
            ],
        }


class _Timeout(BaseException):  # not an Exception: no broad handler may swallow it
    """The document's time ran out."""


def _alarm(signum: int, frame: FrameType | None) -> None:
    raise _Timeout


def import_one(path: Path, source: str, settings: Settings) -> SpecResult:
    """Compile, build, audit and (if it passes) save one document. Never raises."""
    list_envs()  # the registry loads before the clock starts: a timeout must not cut it short
    started, cpu = time.perf_counter(), time.process_time()
    result = SpecResult(source=source)
    previous = signal.signal(signal.SIGPROF, _alarm)
    signal.setitimer(signal.ITIMER_PROF, settings.timeout)  # this process's CPU time
    try:
        _run(path, source, settings, result)
    except (SpecError, NoWorld) as exc:
        result.reason, result.detail = exc.reason, exc.message[:500]
    except DomainError as exc:
        result.reason, result.detail = "compile_error", str(exc)[:500]
    except SynthesisError as exc:
        result.reason, result.detail = "no_tasks", str(exc)[:500]
    except _Timeout:
        result.reason, result.detail = "timeout", f"over {settings.timeout:g} CPU seconds"
    except RecursionError:
        result.reason, result.detail = "unsupported_construct", "schemas nest too deeply"
    except Exception as exc:  # a batch must outlive an importer bug; the report names it
        result.reason, result.detail = "internal_error", f"{type(exc).__name__}: {exc}"[:500]
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)
    result.seconds = round(time.perf_counter() - started, 3)
    result.cpu_seconds = round(time.process_time() - cpu, 3)
    return result


def _run(path: Path, source: str, settings: Settings, result: SpecResult) -> None:
    data = read_document(path)
    env_id = free_id(world_id(source))
    domain = compile_document(data, source, env_id)
    spec = parse_domain(domain, source)
    env = OpenAPIEnvironment(spec, seed=settings.seed)
    register_compiled(env_id, factory_for(spec))
    result.env_id = env_id
    result.operations = sum(
        1 for item in (data.get("paths") or {}).values() if isinstance(item, dict) for _ in item
    )
    if result.judge(env, settings.n, settings.diversity, settings.seed) and settings.out:
        meta = {"source": source, "title": spec.name, "audit": result.audit}
        save_world(settings.out, domain, meta | {"audit_n": result.audit_n})


def _init_worker() -> None:
    list_envs()  # load the built-in worlds once per process, not once per document


def run_import(
    items: list[tuple[Path, str]],
    settings: Settings,
    jobs: int = 1,
    progress: Callable[[SpecResult], None] | None = None,
    fresh: bool = False,
) -> ImportReport:
    """Import documents ((path, source name) pairs), ``jobs`` at a time, going on from the
    journal in ``settings.out`` (``fresh``: discard it, and the worlds it saved, first).
    Raises :class:`JournalError` for a journal of other settings or code."""
    started = time.perf_counter()
    done, journal_cm = _open(settings, fresh)
    results = [done[src] for _, src in items if src in done]
    for r in results:
        if progress:
            progress(r)
    todo = [(p, src) for p, src in items if src not in done]
    with journal_cm as journal:
        for r in _results(todo, settings, jobs):
            if journal is not None:
                journal.add(r.model_dump(mode="json"))
            results.append(r)
            if progress:
                progress(r)
    order = {src: i for i, (_, src) in enumerate(items)}
    results.sort(key=lambda r: order.get(r.source, 0))
    report = _report(results, settings, time.perf_counter() - started)
    report.journaled = len(items) - len(todo)
    return report


def _open(
    s: Settings, fresh: bool
) -> tuple[dict[str, SpecResult], contextlib.AbstractContextManager[Journal | None]]:
    """The outcomes journaled in ``s.out`` (by source; timeouts left out), and the journal to
    go on with; ``fresh`` removes the old journal and the worlds it saved first."""
    if s.out is None:
        return {}, contextlib.nullcontext()
    path, now = s.out / JOURNAL, _header(s)
    if fresh:
        with contextlib.suppress(JournalError):
            for r in map(SpecResult.model_validate, read_journal(path, JOURNAL_FORMAT)[1]):
                if r.passed and r.env_id:
                    (s.out / f"{r.env_id}.json").unlink(missing_ok=True)
        path.unlink(missing_ok=True)
    entries, journal = go_on(path, JOURNAL_FORMAT, now, "importer")
    results = map(SpecResult.model_validate, entries)
    return {r.source: r for r in results if r.reason not in RETRIED}, journal


def _header(s: Settings) -> dict[str, Any]:
    """What a journal holds to: the audit settings, and the importer's and audit's code."""
    code = hashlib.sha256()
    package = Path(__file__).parent.parent
    for root in (package / "openapi", package / "quality"):
        for source in sorted(root.rglob("*.py")):
            code.update(source.relative_to(root).as_posix().encode() + source.read_bytes())
    return {
        "n": s.n,
        "diversity": s.diversity,
        "seed": s.seed,
        "full_n": FULL_N,
        "importer": code.hexdigest()[:16],
    }


def _results(items: list[tuple[Path, str]], s: Settings, jobs: int) -> Iterator[SpecResult]:
    jobs = jobs if len(items) > 1 else 1
    return imap_unordered(import_one, ((p, src, s) for p, src in items), jobs, _init_worker)


def _report(results: list[SpecResult], s: Settings, seconds: float) -> ImportReport:
    failures, checks = tally(results, REASONS)
    times = sorted(r.seconds for r in results)
    built = sorted(r.seconds for r in results if r.env_id)
    return ImportReport(
        specs=len(results),
        compiled=sum(1 for r in results if r.env_id),
        passed_audit=sum(1 for r in results if r.passed),
        seconds=round(seconds, 2),
        failures=failures,
        audit_failures=checks,
        median_seconds=round(statistics.median(times), 3) if times else 0.0,
        p90_seconds=round(times[int(0.9 * (len(times) - 1))], 3) if times else 0.0,
        median_seconds_compiled=round(statistics.median(built), 3) if built else 0.0,
        median_cpu_seconds=round(statistics.median(r.cpu_seconds for r in results), 3)
        if results
        else 0.0,
        settings={
            "out": str(s.out) if s.out else None,
            "n": s.n,
            "diversity": s.diversity,
            "timeout": s.timeout,
            "seed": s.seed,
            "full_n_on_grading_failure": FULL_N,
            "cpus": os.cpu_count(),
        },
        results=results,
    )
