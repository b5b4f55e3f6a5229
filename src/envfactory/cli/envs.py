"""``envfactory envs``: what environments there are."""

from __future__ import annotations

import typer
from rich.table import Table

from envfactory.cli.common import console, print_json
from envfactory.registry import list_envs, make


def envs(json: bool = typer.Option(False, "--json", help="Print a JSON list.")) -> None:
    """List the registered environments."""
    infos = [make(e).info() for e in list_envs()]
    if json:
        print_json(infos)
        return
    table = Table(title="envfactory environments")
    for col in ("id", "kind", "tables", "rows", "tools", "rules", "goals", "difficulties"):
        table.add_column(col)
    for i in infos:
        table.add_row(
            i.id,
            i.kind,
            str(i.tables),
            str(i.rows),
            str(i.tools),
            str(i.rules),
            str(i.goal_templates),
            f"{i.difficulties[0]}..{i.difficulties[-1]}",
        )
    console.print(table)
