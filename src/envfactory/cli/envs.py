"""``envfactory envs``: what environments there are."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path

import typer
from rich.table import Table

from envfactory.campaign.environment import campaign_info
from envfactory.cli.common import console, print_json, world_ids
from envfactory.contract.environment import EnvInfo
from envfactory.registry import EntryPoint, list_envs, make
from envfactory.registry.table import entry
from envfactory.registry.worldfile import saved_info
from envfactory.web.environment import website_info

_TAU2 = "envfactory.peers.tau2.environment"
#: Worlds listed without being built: an entry point's target -> a function of its keyword
#: arguments that gives what the built world's ``info()`` does (tests/test_envs_listing.py
#: compares the two for every built-in world).
UNBUILT: dict[str, str] = {
    "envfactory.db.environment:from_domain_file": "envfactory.db.environment:domain_file_info",
    f"{_TAU2}:make_tau2_retail": f"{_TAU2}:tau2_retail_info",
    f"{_TAU2}:make_strict": f"{_TAU2}:strict_info",
    f"{_TAU2}:make_procedural": f"{_TAU2}:procedural_info",
    "envfactory.web.builtin:make": "envfactory.cli.envs:web_info",
    "envfactory.campaign.builtin:make": "envfactory.cli.envs:campaign_listing",
}


def env_info(env_id: str) -> EnvInfo:
    """What ``envs`` lists about a world, equal to ``make(env_id).info()``: the info saved with
    a library world's file (see :mod:`envfactory.registry.worldfile`), or read without building
    the world (:data:`UNBUILT`), else the info of the world built now."""
    found = entry(env_id)
    if isinstance(found, EntryPoint) and found.target in UNBUILT:
        module, _, name = UNBUILT[found.target].partition(":")
        lister: Callable[..., EnvInfo] = getattr(importlib.import_module(module), name)
        return lister(**found.kwargs)
    return saved_info(env_id) or make(env_id).info()


def web_info(domain_id: str) -> EnvInfo:
    """What ``web-<domain_id>`` lists: its database world's listing, as a website."""
    return website_info(env_info(domain_id))


def campaign_listing(domain_id: str) -> EnvInfo:
    """What ``campaign-<domain_id>`` lists: its database world's listing, as campaigns."""
    return campaign_info(env_info(domain_id), f"campaign-{domain_id}")


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
