"""``envfactory check``: oracle and baselines over many tasks."""

from __future__ import annotations

import typer
from rich.progress import Progress
from rich.table import Table

from envfactory.cli.common import console, err_console, load_env, print_json
from envfactory.quality.check import check as run_check


def check(
    env_id: str = typer.Argument(..., metavar="ENV", help="Environment id."),
    n: int = typer.Option(500, "-n", help="Tasks, spread over all splits and difficulties."),
    seed: int = typer.Option(0, help="Seed of the random baselines."),
    json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Check that every task is solvable and that baselines earn about nothing."""
    env = load_env(env_id)
    if env.kind == "multiagent":  # scripted seats of two strengths, outcomes audited
        from envfactory.multiagent.cli import check_command
        from envfactory.multiagent.environment import MultiAgentEnvironment

        assert isinstance(env, MultiAgentEnvironment)
        check_command(env, n, seed, json)
        return
    with Progress(console=err_console, transient=True) as bar:
        job = bar.add_task(f"checking {env_id}", total=n)
        report = run_check(env, n, seed, progress=lambda k: bar.advance(job, k))
    if json:
        print_json(report)
    else:
        table = Table(title=f"check {env_id}: {'passed' if report.passed else 'FAILED'}")
        table.add_column("measure")
        table.add_column("value", justify="right")
        for key in (
            "tasks",
            "oracle_success_rate",
            "noop_reward_mean",
            "random_reward_mean",
            "noisy_oracle_reward_mean",
            "unsolvable",
            "duplicate_tasks",
            "split_overlap",
            "seconds",
        ):
            table.add_row(key, str(getattr(report, key)))
        console.print(table)
    if not report.passed:
        raise typer.Exit(1)
