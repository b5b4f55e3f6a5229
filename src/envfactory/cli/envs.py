"""``envfactory envs``: what environments there are."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from envfactory.cli.common import console, print_json, world_ids
from envfactory.contract.environment import EnvInfo
from envfactory.registry import list_envs, make
from envfactory.registry.worldfile import saved_info


def env_info(env_id: str) -> EnvInfo:
    """What ``envs`` lists about a world: the info saved with a library world's file (see
    :mod:`envfactory.registry.worldfile`), else the info of the world built now."""
    return saved_info(env_id) or make(env_id).info()


def envs(
    json: bool = typer.Option(False, "--json", help="Print a JSON list."),
    library: list[Path] | None = typer.Option(
        None,
        "--library",
        help="Also list the worlds of this domain file or folder of worlds (repeatable).",
    ),
) -> None:
    """List the registered environments: built-in, installed (entry points), and those the
    ``--library`` paths and ``ENVFACTORY_LIBRARY`` name."""
    world_ids(str(p) for p in library or [])
    infos = [env_info(e) for e in list_envs()]
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
