"""The multi-agent parts of the command line: ``envfactory check`` on a multi-agent world."""

from __future__ import annotations

import typer
from rich.progress import Progress
from rich.table import Table

from envfactory.cli.common import console, err_console, print_json
from envfactory.multiagent.check import check
from envfactory.multiagent.environment import MultiAgentEnvironment

SHOWN = (
    "episodes",
    "weak",
    "strong",
    "strong_reward_mean",
    "weak_reward_mean",
    "pairs_won",
    "pairs_lost",
    "pairs_tied",
    "p_value",
    "strong_beats_weak",
    "invalid_outcomes",
    "duplicate_tasks",
    "split_overlap",
    "seconds",
)


def check_command(env: MultiAgentEnvironment, n: int, seed: int, json: bool) -> None:
    """Scripted seats of two strengths over about ``n`` episodes; exits 1 unless it passes."""
    with Progress(console=err_console, transient=True) as bar:
        job = bar.add_task(f"checking {env.id}", total=2 * max(1, n // 2))
        report = check(env, n, seed, progress=lambda k: bar.advance(job, k))
    if json:
        print_json(report)
    else:
        table = Table(title=f"check {env.id}: {'passed' if report.passed else 'FAILED'}")
        table.add_column("measure")
        table.add_column("value", justify="right")
        for key in SHOWN:
            table.add_row(key, str(getattr(report, key)))
        console.print(table)
        for problem in report.problems[:5]:
            console.print(f"[red]{problem}[/red]")
    if not report.passed:
        raise typer.Exit(1)
