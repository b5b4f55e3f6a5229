"""``envfactory init``, ``pack`` and ``install``: worlds as Python packages."""

from __future__ import annotations

from pathlib import Path

import typer

from envfactory.cli.common import console, err_console, fail, print_json
from envfactory.contract.errors import DomainError, EnvFactoryError


def init(
    name: str = typer.Argument(
        ...,
        help="Package name and starter world id, normalised as pip does (My_Shop: my-shop).",
    ),
    directory: Path | None = typer.Option(
        None, "--dir", help="Where to write the package (default: ./NAME)."
    ),
) -> None:
    """Scaffold a package of worlds: a starter domain with a Python handler, the audit as a
    test, an entry point that registers its worlds, and a README."""
    from envfactory.packaging import package_name, write_project

    dest = directory or Path(name)
    try:
        world = package_name(name)
        write_project(dest, world)
    except EnvFactoryError as exc:
        raise fail(exc) from None
    console.print(f"wrote {dest}/; next: pip install -e {dest} && envfactory audit {world}")


def pack(
    sources: list[Path] = typer.Argument(..., help="World files or folders of them."),
    name: str = typer.Option(..., "--name", help="The package's name."),
    out: Path = typer.Option(Path("dist"), "--out", help="Where to write it."),
    wheel: bool = typer.Option(
        True, "--wheel/--folder", help="Build a wheel, or write the package's source folder."
    ),
    json: bool = typer.Option(False, "--json", help="Print what was written as JSON."),
) -> None:
    """Pack worlds (domain files with their handlers, saved library worlds) into a package
    that `envfactory install` or pip installs."""
    from envfactory.packaging import pack as pack_worlds
    from envfactory.registry.sources import world_files

    try:
        for source in sources:  # each must load before it is packed
            for file in world_files(source) if source.is_dir() else [source]:
                _check_loads(file)
        path = pack_worlds(sources, name, out, wheel=wheel)
    except EnvFactoryError as exc:
        raise fail(exc) from None
    if json:
        print_json({"path": str(path), "kind": "wheel" if wheel else "folder", "name": name})
    else:
        console.print(f"wrote {path}")


def _check_loads(file: Path) -> None:
    """Refuse a world file the engine does not accept (missing file, bad domain, bad handlers)."""
    from envfactory.domain.loader import load_domain
    from envfactory.registry.worldfile import is_world_file, load_world

    if not file.is_file():
        raise DomainError(f"{file}: no such file")
    load_world(file) if is_world_file(file) else load_domain(file)


def install(
    source: Path = typer.Argument(..., help="A wheel, a package folder, or world files."),
    target: Path | None = typer.Option(
        None, "--target", help="Install into this folder (put it on PYTHONPATH) instead."
    ),
    no_deps: bool = typer.Option(False, "--no-deps", help="Do not install dependencies."),
    json: bool = typer.Option(False, "--json", help="Print the installed worlds as JSON."),
) -> None:
    """Install a package of worlds with pip, then list the worlds it provides."""
    from envfactory.packaging import install as install_package

    with err_console.status(f"installing {source}"):
        try:
            ids = install_package(source, target, no_deps)
        except EnvFactoryError as exc:
            raise fail(exc) from None
    if json:
        print_json({"installed": str(source), "worlds": ids})
    else:
        console.print(f"installed {source}: {', '.join(ids) or 'no worlds'}")
