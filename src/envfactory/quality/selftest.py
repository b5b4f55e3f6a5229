"""The audit audits itself: plant defects, audit each mutant, measure the audit's recall.

Every mutant of :func:`~envfactory.quality.mutants.catalogue` is built, its exploit played to
show the defect pays (*live*), and the world audited with the audit's own entry point. A
mutant counts as refused when the audit fails it on evidence of the defect (a problem other
than the structural ones a mutation can disturb, such as tool coverage), or when it is not
live: the engine already keeps the defect out of the tasks, so there is nothing to refuse.
The unmutated base worlds are audited too, as controls: an audit that refuses everything has
a recall of 1.0 and is useless, so the self-test is only meaningful when the controls pass.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from pydantic import BaseModel, Field

from envfactory.quality.audit import audit
from envfactory.quality.mutant_exploits import Liveness, liveness
from envfactory.quality.mutants import BASES, CLASSES, Mutant, catalogue
from envfactory.registry import make

STRUCTURAL = (
    "gold plans use",
    "plan shapes per 1k",
    "distinct instructions per 1k",
    "noisy-oracle success",
    "plan length by difficulty",
    "oracle success",
    "differs when rebuilt",
    "two oracle runs",
    "has no tasks",
)
"""Audit problems that say nothing of a planted defect: a mutation may disturb them (a tool
added but used by no gold plan lowers coverage), so they do not count as refusing it."""


class MutantResult(BaseModel):
    """One mutant's liveness and audit."""

    name: str
    defect: str
    base: str
    what: str
    live: bool
    liveness: Liveness
    audit_passed: bool
    refused: bool = Field(description="refused on evidence of the defect, or not live")
    refused_by: list[str] = Field(description="the audit's problems that concern the defect")
    incidental: list[str] = Field(description="the audit's structural problems")
    error: str | None = Field(None, description="the audit crashed: why")
    seconds: float


class ClassResult(BaseModel):
    """One defect class: mutants planted, live, refused."""

    planted: int
    live: int
    refused: int
    recall: float


class Control(BaseModel):
    """An unmutated base world's audit."""

    base: str
    passed: bool
    problems: list[str]


class SelfTest(BaseModel):
    """The audit's recall on planted defects, and whether it passes the unmutated worlds."""

    mutants: int
    refused: int
    recall: float
    live: int = Field(description="mutants whose defect pays")
    live_refused: int = Field(description="live mutants the audit refused")
    live_recall: float = Field(description="share of live mutants refused (1.0 is the target)")
    classes: dict[str, ClassResult]
    controls_passed: bool
    controls: list[Control]
    results: list[MutantResult]
    n: int
    seed: int


Progress = Callable[[str], None]


def choose(per_class: int = 0, classes: Sequence[str] = ()) -> list[Mutant]:
    """The mutants of ``classes`` (default: every class), the first ``per_class`` of each
    (0: all)."""
    out: list[Mutant] = []
    for defect in classes or CLASSES:
        of_class = [m for m in catalogue() if m.defect == defect]
        out += of_class[:per_class] if per_class else of_class
    return out


def examine(mutant: Mutant, n: int, seed: int = 0, diversity: int = 1000) -> MutantResult:
    """Build ``mutant``, show whether its defect pays, and audit it."""
    start = time.perf_counter()
    error, problems, passed = None, [], False
    with mutant.planted() as env:
        shown = liveness(env, mutant.exploit)
        try:
            report = audit(env, n=n, seed=seed, diversity=diversity)
            problems, passed = report.problems, report.passed
        except Exception as exc:  # the audit's crash is a finding, not the self-test's end
            error = f"{type(exc).__name__}: {exc}"
    structural = [p for p in problems if any(s in p for s in STRUCTURAL)]
    on_defect = [p for p in problems if p not in structural]
    return MutantResult(
        name=mutant.name,
        defect=mutant.defect,
        base=mutant.base,
        what=mutant.what,
        live=shown.live,
        liveness=shown,
        audit_passed=passed,
        refused=bool(on_defect) or not shown.live,
        refused_by=on_defect,
        incidental=structural,
        error=error,
        seconds=round(time.perf_counter() - start, 2),
    )


def control(base: str, n: int, seed: int = 0, diversity: int = 1000) -> Control:
    """The audit of unmutated ``base``."""
    report = audit(make(base), n=n, seed=seed, diversity=diversity)
    return Control(base=base, passed=report.passed, problems=report.problems)


def selftest(
    n: int = 30,
    seed: int = 0,
    per_class: int = 0,
    classes: Sequence[str] = (),
    diversity: int = 1000,
    progress: Progress | None = None,
) -> SelfTest:
    """Plant the chosen mutants, audit each over ``n`` tasks, and audit their base worlds."""
    results: list[MutantResult] = []
    for mutant in choose(per_class, classes):
        results.append(examine(mutant, n, seed, diversity))
        if progress:
            progress(mutant.name)
    bases = [b for b in BASES if any(r.base == b for r in results)]
    controls = []
    for base in bases:
        controls.append(control(base, n, seed, diversity))
        if progress:
            progress(base)
    return summarise(results, controls, n, seed)


def summarise(results: list[MutantResult], controls: list[Control], n: int, seed: int) -> SelfTest:
    """Counts, recall overall, over live mutants and per class."""
    live = [r for r in results if r.live]
    classes = {}
    for defect in CLASSES:
        of = [r for r in results if r.defect == defect]
        if of:
            refused = sum(r.refused for r in of)
            classes[defect] = ClassResult(
                planted=len(of),
                live=sum(r.live for r in of),
                refused=refused,
                recall=round(refused / len(of), 4),
            )
    refused = sum(r.refused for r in results)
    live_refused = sum(r.refused for r in live)
    return SelfTest(
        mutants=len(results),
        refused=refused,
        recall=round(refused / len(results), 4) if results else 0.0,
        live=len(live),
        live_refused=live_refused,
        live_recall=round(live_refused / len(live), 4) if live else 0.0,
        classes=classes,
        controls_passed=all(c.passed for c in controls),
        controls=controls,
        results=results,
        n=n,
        seed=seed,
    )
