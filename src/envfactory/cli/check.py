"""``envfactory check``: oracle and baselines over many tasks (a world with seats: its scripted
seats of two strengths, every outcome confirmed)."""

from __future__ import annotations

import typer

from envfactory.cli.common import load_env, report_check
from envfactory.quality.check import check as run_check


def check(
    env_id: str = typer.Argument(..., metavar="ENV", help="Environment id."),
    n: int = typer.Option(500, "-n", help="Tasks, spread over all splits and difficulties."),
    seed: int = typer.Option(0, help="Seed of the random baselines."),
    json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Check that every task is solvable and that baselines earn about nothing."""
    env = load_env(env_id)
    report_check(env_id, n, lambda progress: run_check(env, n, seed, progress), json)
