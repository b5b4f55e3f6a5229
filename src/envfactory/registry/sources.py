"""Where worlds come from, besides the built-ins: files, folders and installed packages.

Every command takes a *source* wherever it takes an environment id:

- a registered id (``retail``, ``tau2-retail``, ...);
- a domain file (``.yaml``, ``.yml`` or ``.json``; handlers named by the domain are imported
  from a module of that name beside the file when one is there), or a saved library world
  (the JSON files ``envfactory openapi import`` and ``envfactory synth`` write);
- a folder of such files (each is one world);
- an installed distribution that names a function in the entry-point group
  ``envfactory.environments``; the function either registers worlds itself (with
  :func:`envfactory.register`) or returns sources (paths) to register. Installed worlds are
  registered with the built-ins, so their ids work everywhere.

A path given to a command is also added to ``ENVFACTORY_LIBRARY``, so the worker processes the
command starts (audits in parallel, rollout workers, servers) register the same worlds.
"""

from __future__ import annotations

import json
import os
import re
import threading
import warnings
from collections.abc import Iterable
from importlib.metadata import entry_points
from pathlib import Path

from envfactory.contract.errors import DomainError
from envfactory.registry.table import (
    free_id,
    load_builtins,
    register_compiled,
    register_domain_file,
    registered,
)
from envfactory.registry.worldfile import file_factory, is_world_file

ENTRY_POINT_GROUP = "envfactory.environments"
LIBRARY_ENV = "ENVFACTORY_LIBRARY"
DOMAIN_SUFFIXES = (".yaml", ".yml", ".json")

_REGISTERED: dict[Path, list[str]] = {}  # resolved path -> the ids it registered
_INSTALLED: dict[str, list[str]] = {}  # distribution (normalised name) -> the ids it provides
_LOCK = threading.RLock()
_installed_loaded = False


def is_path(source: str | Path) -> bool:
    """Whether ``source`` names a file or folder (rather than an environment id)."""
    text = str(source)
    return isinstance(source, Path) or os.sep in text or text.endswith(DOMAIN_SUFFIXES)


def register_path(path: str | Path) -> list[str]:
    """Register the world of a file, or every world in a folder; returns their ids (the same
    ids again when the path was registered before)."""
    load_builtins()  # first, so that a file cannot take a built-in world's id
    resolved = Path(path).expanduser().resolve()
    with _LOCK:
        if resolved in _REGISTERED:
            return _REGISTERED[resolved]
        if resolved.is_dir():
            ids = [i for file in world_files(resolved) for i in register_path(file)]
        elif resolved.is_file():
            ids = _register_file(resolved)
        else:
            raise DomainError(f"{path}: no such file or folder")
        _REGISTERED[resolved] = ids
        return ids


def world_files(folder: Path) -> list[Path]:
    """The files of ``folder`` that hold a world: YAML domain files, and JSON files that are
    saved library worlds or domains (a library's ``report.json`` and the like are left out)."""
    return [p for p in sorted(folder.iterdir()) if p.is_file() and _holds_world(p)]


def _holds_world(path: Path) -> bool:
    if path.suffix in (".yaml", ".yml"):
        return True
    if path.suffix != ".json":
        return False
    if is_world_file(path):
        return True
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and "entities" in data and "actions" in data


def _register_file(path: Path) -> list[str]:
    try:
        if is_world_file(path):
            return [register_world_file(path)]
        return [register_domain_file(path)]
    except ValueError as exc:  # the id is taken
        raise DomainError(f"{path}: {exc}; give the domain another id") from None


def register_world_file(path: Path) -> str:
    """Register one saved world under its file's stem (read when first made); returns the id.
    A built-in world's id is never taken."""
    if free_id(path.stem) != path.stem:
        raise DomainError(f"{path}: {path.stem!r} is already the id of a built-in world")
    register_compiled(path.stem, file_factory(path))
    return path.stem


def resolve(source: str | Path) -> list[str]:
    """The environment ids a source names: itself when registered, else the worlds of the file
    or folder it names (registered now, and passed on to worker processes)."""
    load_builtins()
    load_installed()
    if isinstance(source, str) and source in registered():
        return [source]
    if not is_path(source) and not Path(source).exists():
        return [str(source)]  # an unknown id: the caller says so with the known ids
    ids = register_path(source)
    _pass_on(Path(source).expanduser().resolve())
    return ids


def resolve_all(sources: Iterable[str]) -> list[str]:
    """Every id the sources name, in order, each once."""
    out: list[str] = []
    for source in sources:
        out += [i for i in resolve(source) if i not in out]
    return out


def _pass_on(path: Path) -> None:
    """Add ``path`` to ``ENVFACTORY_LIBRARY`` for the processes this one starts."""
    paths = [p for p in os.environ.get(LIBRARY_ENV, "").split(os.pathsep) if p]
    if str(path) not in paths:
        os.environ[LIBRARY_ENV] = os.pathsep.join([*paths, str(path)])


def register_from_environment() -> list[str]:
    """Register the files and folders ``ENVFACTORY_LIBRARY`` names (those that exist)."""
    ids: list[str] = []
    for path in filter(None, os.environ.get(LIBRARY_ENV, "").split(os.pathsep)):
        if not Path(path).exists():
            continue
        try:
            ids += register_path(path)
        except DomainError as exc:  # one broken file must not hide every other world
            warnings.warn(f"envfactory: {LIBRARY_ENV}: {exc}", stacklevel=2)
    return ids


def _normalised(distribution: str) -> str:
    return re.sub(r"[-_.]+", "-", distribution).lower()


def register_entry_points() -> list[str]:
    """Register the worlds of installed distributions (group ``envfactory.environments``).
    A distribution that fails to load is reported and left out; the others still load."""
    ids: list[str] = []
    for point in entry_points(group=ENTRY_POINT_GROUP):
        before = set(registered())
        try:
            found = point.load()
            for source in (found() if callable(found) else None) or ():
                register_path(source)
        except Exception as exc:  # one broken package must not hide every other world
            warnings.warn(
                f"envfactory: the installed worlds {point.name!r} ({point.value}) did not "
                f"load: {type(exc).__name__}: {exc}",
                stacklevel=2,
            )
            continue
        new = sorted(set(registered()) - before)
        _INSTALLED.setdefault(
            _normalised(point.dist.name if point.dist else point.name), []
        ).extend(new)
        ids += new
    return ids


def load_installed() -> None:
    """Register the worlds of installed packages, then those ``ENVFACTORY_LIBRARY`` names
    (once per process)."""
    global _installed_loaded
    with _LOCK:
        if _installed_loaded:
            return
        _installed_loaded = True
        load_builtins()
        register_entry_points()
        register_from_environment()


def installed_worlds(distribution: str) -> list[str]:
    """The ids of the worlds the installed ``distribution`` registered."""
    load_installed()
    return sorted(_INSTALLED.get(_normalised(distribution), []))
