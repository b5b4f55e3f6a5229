"""The file of a compiled world: one JSON file per world, read when the world is first made.

Each file holds the domain data the engine validates on load, plus where it came from (its
``kind``: ``openapi`` for an imported API document, ``synth`` for a synthesised domain) and how
its audit went. :mod:`envfactory.openapi.library` registers a folder of them; naming the folder
(or one file) where a command takes a world, or in ``ENVFACTORY_LIBRARY``, does the same (see
:mod:`envfactory.registry.sources`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from envfactory.contract.errors import DomainError
from envfactory.domain.loader import parse_domain
from envfactory.domain.spec import DomainSpec
from envfactory.registry.table import EntryPoint

FORMAT = "envfactory-openapi-world/1"
#: The environment that runs a saved world of each kind (imported when one is first made).
KINDS: dict[str, str] = {
    "openapi": "envfactory.openapi.environment:OpenAPIEnvironment",
    "synth": "envfactory.synth.environment:SynthEnvironment",
}


def save_world(folder: Path, domain: dict[str, Any], meta: dict[str, Any]) -> Path:
    """Write one world to ``folder/<id>.json`` (``meta["kind"]``, default ``openapi``, says
    which environment runs it)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{domain['id']}.json"
    data = {"format": FORMAT, **meta, "domain": domain}
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, separators=(",", ":"), default=str))
    tmp.replace(path)
    return path


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise DomainError(f"{path}: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise DomainError(f"{path}: not an envfactory library world ({FORMAT})")
    if data.get("kind", "openapi") not in KINDS:
        raise DomainError(f"{path}: unknown kind {data['kind']!r}; known: {sorted(KINDS)}")
    return data


def load_world(path: str | Path) -> DomainSpec:
    """The validated domain of a saved world."""
    return parse_domain(_read(Path(path))["domain"], str(path))


def is_world_file(path: Path) -> bool:
    """Whether ``path`` is a saved library world (judged by its first bytes)."""
    try:
        with path.open() as fh:
            return FORMAT in fh.read(64)
    except (OSError, UnicodeDecodeError):
        return False


def world_files(folder: str | Path) -> list[Path]:
    """The world files of a library folder (its report and other files left out)."""
    return [p for p in sorted(Path(folder).glob("*.json")) if is_world_file(p)]


def file_factory(path: Path) -> EntryPoint:
    """A registry entry that reads its world file when the world is first made."""
    return EntryPoint("envfactory.registry.worldfile:build_file_world", {"path": path})


def build_file_world(path: Path, seed: int = 0, scale: float = 1.0) -> Any:
    """The environment of a saved world file."""
    data = _read(path)
    spec = parse_domain(data["domain"], str(path))
    world = EntryPoint(KINDS[data.get("kind", "openapi")], {"spec": spec}).load()
    return world(seed=seed, scale=scale)
