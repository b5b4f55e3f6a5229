"""``envfactory audit``: score environments, print a table or JSON, write an HTML report."""

from __future__ import annotations

import os
from concurrent.futures import as_completed
from pathlib import Path

import typer
from rich.progress import Progress
from rich.table import Table

from envfactory.bench.calibration import GRAMMAR_HARNESS, ModelBand, calibrate, model_bands
from envfactory.cli.common import console, err_console, fail, print_json, world_ids
from envfactory.quality.audit import AuditReport, audit_world
from envfactory.quality.report import write_report
from envfactory.quality.seat_check import SeatCheckReport
from envfactory.registry import list_envs, make
from envfactory.workers import worker_pool

Report = AuditReport | SeatCheckReport


def _audit_one(env_id: str, n: int, seed: int) -> Report:
    return audit_world(make(env_id), n=n, seed=seed)


def audit_cmd(
    env_ids: list[str] | None = typer.Argument(
        None, metavar="[ENV]...", help="Ids, domain files or folders of worlds. Default: all."
    ),
    n: int = typer.Option(300, "-n", help="Tasks per environment for the baselines."),
    seed: int = typer.Option(0, help="Seed of the random baselines."),
    jobs: int = typer.Option(min(2, os.cpu_count() or 1), help="Environments audited at once."),
    report: Path = typer.Option(Path("reports/audit.html"), help="Where to write the HTML report."),
    json: bool = typer.Option(False, "--json", help="Print a JSON list, one object per env."),
    model_tasks: int = typer.Option(
        0,
        "--model-tasks",
        min=0,
        help="Also run the embedded model (grammar harness) on this many validation tasks per "
        "difficulty and report its band as real_model (minutes per world).",
    ),
    model_levels: str = typer.Option(
        "", "--model-levels", help="--model-tasks at these difficulties only (default: all)."
    ),
    selftest: bool = typer.Option(
        False,
        "--selftest",
        help="Audit the audit: plant defects in copies of built-in worlds, audit each over -n "
        "tasks (and the unmutated worlds as controls), report the recall (docs/audit.md).",
    ),
    selftest_sample: int = typer.Option(
        0, "--selftest-sample", min=0, help="--selftest with the first K mutants of each class."
    ),
    selftest_class: list[str] = typer.Option(
        [], "--selftest-class", help="--selftest on this defect class only (repeatable)."
    ),
    selftest_diversity: int = typer.Option(
        1000, "--selftest-diversity", min=1, help="--selftest: the audit's diversity sample."
    ),
) -> None:
    """Score environments: solvable, honest baselines, no exploit pays, graded, deterministic,
    diverse."""
    if selftest:
        _selftest(n, seed, selftest_sample, selftest_class, selftest_diversity, json)
        return
    ids = world_ids(env_ids) if env_ids else list_envs()
    unknown = sorted(set(ids) - set(list_envs()))
    if unknown:
        raise fail(f"unknown environment(s): {', '.join(unknown)}")
    if not ids:
        raise typer.Exit(2)
    results: dict[str, Report] = {}
    with Progress(console=err_console, transient=True) as bar:
        job = bar.add_task("auditing", total=len(ids))
        if jobs <= 1 or len(ids) == 1:
            for env_id in ids:
                results[env_id] = _audit_one(env_id, n, seed)
                bar.advance(job)
        else:
            with worker_pool(jobs) as pool:
                futures = {pool.submit(_audit_one, e, n, seed): e for e in ids}
                for done in as_completed(futures):
                    results[futures[done]] = done.result()
                    bar.advance(job)
    reports = [results[e] for e in ids]
    single = [r for r in reports if isinstance(r, AuditReport)]  # the plots are one agent's
    path = write_report(single, report)
    levels = [int(d) for d in model_levels.split(",") if d.strip()] or None
    bands = _model_bands([r.env for r in single], model_tasks, levels) if model_tasks else {}
    if json:
        print_json([_summary(r, bands.get(r.env)) for r in reports])
    else:
        table = Table(title="envfactory audit")
        for col in (
            "env",
            "passed",
            "oracle",
            "noop",
            "random",
            "spam",
            "guess",
            "coverage",
            "shapes/1k",
            "worst exploit",
            "voided",
        ):
            table.add_column(col)
        for r in reports:
            if isinstance(r, SeatCheckReport):  # its measures are printed below the table
                table.add_row(r.env, _passed(r.passed), *["-"] * 9)
                continue
            table.add_row(
                r.env,
                _passed(r.passed),
                f"{r.oracle_success_rate:.2f}",
                f"{r.noop_reward_mean:.3f}",
                f"{r.random_reward_mean:.3f}",
                f"{r.spam_reward_mean:.3f}",
                f"{r.guess_reward_mean:.3f}",
                f"{r.tool_coverage:.2f}",
                str(r.plan_shapes_per_1k),
                _worst(r),
                str(r.voided_by_agent),
            )
        console.print(table)
        for r in reports:
            if isinstance(r, SeatCheckReport):
                console.print(
                    f"{r.env} (seats): strong beats weak {r.strong_beats_weak} "
                    f"(p = {r.p_value:.2g}), invalid outcomes {r.invalid_outcomes}"
                    + "".join(f"; {p}" for p in r.problems[:3])
                )
        err_console.print(f"report: {path}")
    if not all(r.passed for r in reports):
        raise typer.Exit(1)


def _selftest(
    n: int, seed: int, sample: int, classes: list[str], diversity: int, as_json: bool
) -> None:
    """``--selftest``: the audit's recall on planted defects; exit 1 when a control fails."""
    from envfactory.quality.mutants import CLASSES
    from envfactory.quality.selftest import choose, selftest

    if unknown := sorted(set(classes) - set(CLASSES)):
        raise fail(f"unknown defect class(es): {', '.join(unknown)}; known: {', '.join(CLASSES)}")
    chosen = choose(sample, classes)
    with Progress(console=err_console, transient=True) as bar:
        job = bar.add_task("self-test", total=len(chosen) + len({m.base for m in chosen}))
        advance = lambda _: bar.advance(job)  # noqa: E731
        result = selftest(n, seed, sample, classes, diversity, advance)
    if as_json:
        print_json(result)
    else:
        table = Table(title=f"audit self-test: recall {result.recall} (live {result.live_recall})")
        for col in ("mutant", "class", "base", "live", "refused", "refused by"):
            table.add_column(col)
        for r in result.results:
            table.add_row(
                r.name,
                r.defect,
                r.base,
                "yes" if r.live else "[dim]no[/dim]",
                "[green]yes[/green]" if r.refused else "[red]no[/red]",
                "; ".join(p.split(" (")[0] for p in r.refused_by)
                or ("not live" if not r.live else "-"),
            )
        console.print(table)
        for defect, k in result.classes.items():
            console.print(f"{defect}: {k.refused} of {k.planted} refused ({k.live} live)")
        for c in result.controls:
            mark = "[green]passes[/green]" if c.passed else f"[red]fails[/red]: {c.problems}"
            console.print(f"control {c.base}: {mark}")
    if not result.controls_passed:
        raise typer.Exit(1)


def _passed(passed: bool) -> str:
    return "[green]yes[/green]" if passed else "[red]no[/red]"


def _worst(r: AuditReport) -> str:
    """The exploit that earns most, and its mean reward."""
    if not r.exploits:
        return "-"
    name, stats = max(r.exploits.items(), key=lambda kv: kv[1].mean)
    return f"{name} {stats.mean:.3f}"


def _summary(r: Report, band: ModelBand | None = None) -> dict[str, object]:
    """The JSON view: every score, without the plot data; the real model's band if measured."""
    out = r.model_dump(mode="json", exclude={"curves", "plan_lengths", "tool_uses", "plan_steps"})
    if band is not None:
        out["real_model"] = band.model_dump(mode="json")
    return out


def _model_bands(ids: list[str], tasks: int, levels: list[int] | None) -> dict[str, ModelBand]:
    """The embedded model's band in each world (its calibration under the grammar harness)."""
    from envfactory.cli.rollout import local_policy

    policy = local_policy("default", {"temperature": 0.7, "max_tokens": 64})
    with Progress(console=err_console, transient=True) as bar:
        job = bar.add_task(f"{policy.info.name} episodes", total=None)
        cells = calibrate(
            policy,
            ids,
            tasks,
            levels,
            harness=GRAMMAR_HARNESS,
            on_episode=lambda _: bar.advance(job),
        )
    bands = model_bands(cells, policy.info.name, "grammar")
    for env_id, band in bands.items():
        err_console.print(f"{env_id}: real-model success {band.success}, band {band.band}")
    return bands
