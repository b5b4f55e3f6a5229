"""A library of compiled worlds: one JSON file per world, registered on demand.

Each file holds the domain data the engine validates on load, plus where it came from (its
``kind``: ``openapi`` for an imported API document, ``synth`` for a synthesised domain) and how
its audit went. ``register_library(DIR)`` makes every world in DIR available to ``make``, the
CLI, rollouts and servers; naming DIR (or one file) where a command takes a world, or in
``ENVFACTORY_LIBRARY``, does the same (see :mod:`envfactory.sources`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from envfactory.contract.environment import Environment
from envfactory.contract.errors import DomainError
from envfactory.db.environment import DatabaseEnvironment
from envfactory.domain.loader import parse_domain
from envfactory.domain.spec import DomainSpec
from envfactory.openapi.environment import OpenAPIEnvironment
from envfactory.registry import list_envs, register
from envfactory.synth.environment import SynthEnvironment

FORMAT = "envfactory-openapi-world/1"
KINDS: dict[str, type[DatabaseEnvironment]] = {
    "openapi": OpenAPIEnvironment,
    "synth": SynthEnvironment,
}
_OURS: set[str] = set()  # ids registered from documents or libraries (others are never replaced)


def free_id(env_id: str) -> str:
    """``env_id``, or ``<env_id>-openapi`` when a world of another kind already has it."""
    taken = set(list_envs()) - _OURS
    return f"{env_id}-openapi" if env_id in taken else env_id


def register_world(env_id: str, factory: Any) -> None:
    """Register a compiled world (replacing an earlier compiled world of that id)."""
    _OURS.add(env_id)
    register(env_id, factory, overwrite=True)


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


def factory_for(spec: DomainSpec) -> Any:
    """A registry factory for a compiled domain."""

    def factory(seed: int = 0, scale: float = 1.0) -> Environment:
        return OpenAPIEnvironment(spec, seed=seed, scale=scale)

    return factory


def register_spec(spec: DomainSpec) -> str:
    """Register a compiled domain as an ``openapi`` world (for ``make`` and the audit)."""
    register_world(spec.id, factory_for(spec))
    return spec.id


def _lazy(path: Path) -> Any:
    """A registry factory that reads its world file when the world is first made."""

    def factory(seed: int = 0, scale: float = 1.0) -> Environment:
        data = _read(path)
        spec = parse_domain(data["domain"], str(path))
        return KINDS[data.get("kind", "openapi")](spec, seed=seed, scale=scale)

    return factory


def register_world_file(path: Path) -> str:
    """Register one saved world under its file's stem (read when first made); returns the id.
    A built-in world's id is never taken."""
    if free_id(path.stem) != path.stem:
        raise DomainError(f"{path}: {path.stem!r} is already the id of a built-in world")
    register_world(path.stem, _lazy(path))
    return path.stem


def register_library(folder: str | Path) -> list[str]:
    """Register every world saved in ``folder`` (each is read when first made, so a large
    library registers instantly); returns their ids. Worlds whose id a built-in world has
    are left out."""
    folder = Path(folder)
    if not folder.is_dir():
        raise DomainError(f"{folder}: no such library folder")
    return [register_world_file(p) for p in world_files(folder) if free_id(p.stem) == p.stem]
