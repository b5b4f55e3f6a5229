"""``envfactory tasks``: print public task views."""

from __future__ import annotations

import typer
from rich.panel import Panel

from envfactory.cli.common import SplitName, console, fail, load_env, print_json
from envfactory.contract.errors import SynthesisError


def tasks(
    env_id: str = typer.Argument(..., metavar="ENV", help="Environment id."),
    split: SplitName = typer.Option(SplitName.train, help="Which split."),
    difficulty: int = typer.Option(1, help="Difficulty level."),
    n: int = typer.Option(5, "-n", help="How many tasks."),
    start: int = typer.Option(0, help="Index of the first task."),
    json: bool = typer.Option(False, "--json", help="Print a JSON list of public views."),
) -> None:
    """Print tasks as the agent sees them (never their gold plans or answers)."""
    env = load_env(env_id)
    try:
        views = [t.public for t in env.tasks(split.as_split, difficulty, n, start)]
    except SynthesisError as exc:
        raise fail(exc) from None
    if json:
        print_json(views)
        return
    for v in views:
        console.print(Panel(v.instruction, title=v.task_id, expand=False))
