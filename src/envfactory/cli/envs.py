"""``envfactory envs``: what environments there are."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from envfactory.cli.common import console, fail, print_json
from envfactory.errors import DomainError
from envfactory.registry import list_envs, make


def envs(
    json: bool = typer.Option(False, "--json", help="Print a JSON list."),
    library: list[Path] | None = typer.Option(
        None, "--library", help="Also register the worlds saved in this folder (repeatable)."
    ),
) -> None:
    """List the registered environments."""
    from envfactory.openapi.library import register_library

    for folder in library or []:
        try:
            register_library(folder)
        except DomainError as exc:
            raise fail(exc) from None
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
