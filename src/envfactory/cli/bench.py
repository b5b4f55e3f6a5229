"""``envfactory bench``: the episode API's costs."""

from __future__ import annotations

import typer
from rich.table import Table

from envfactory.bench.world import bench_world
from envfactory.cli.common import console, err_console, print_json


def bench(
    env_id: str = typer.Option("retail", "--env", help="Environment to measure."),
    json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Measure reset, step, evaluate, synthesis and memory per live episode (medians)."""
    with err_console.status(f"benchmarking {env_id}"):
        result = bench_world(env_id)
    if json:
        print_json(result)
        return
    table = Table(title=f"bench {env_id}")
    table.add_column("measure")
    table.add_column("value", justify="right")
    for key, value in result.model_dump().items():
        table.add_row(key, str(value))
    console.print(table)
