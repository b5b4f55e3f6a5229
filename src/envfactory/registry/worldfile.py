"""The file of a compiled world: one JSON file per world, read when the world is first made.

Each file holds the domain data the engine validates on load, plus where it came from (its
``kind``: ``openapi`` for an imported API document, ``synth`` for a synthesised domain) and how
its audit went. :mod:`envfactory.openapi.library` registers a folder of them; naming the folder
(or one file) where a command takes a world, or in ``ENVFACTORY_LIBRARY``, does the same (see
:mod:`envfactory.registry.sources`).

The file's first line also holds what ``envfactory envs`` lists about the world (its
:class:`EnvInfo`, found by building the world once when it is saved) and a digest of the lines
after it, so a library lists without building its worlds: :func:`saved_info` reads that line
and hashes the rest, and a file without it, or changed since (an older file, one edited by
hand), is built as before.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from envfactory.contract.environment import EnvInfo
from envfactory.contract.errors import DomainError
from envfactory.domain.loader import parse_domain
from envfactory.domain.spec import DomainSpec
from envfactory.registry.table import EntryPoint, entry

FORMAT = "envfactory-openapi-world/1"
#: The environment that runs a saved world of each kind (imported when one is first made).
KINDS: dict[str, str] = {
    "openapi": "envfactory.openapi.environment:OpenAPIEnvironment",
    "synth": "envfactory.synth.environment:SynthEnvironment",
}
_BUILD = "envfactory.registry.worldfile:build_file_world"
_HEAD_LIMIT = 1 << 20  # the most of a file's first line read for its listing


def save_world(folder: Path, domain: dict[str, Any], meta: dict[str, Any]) -> Path:
    """Write one world to ``folder/<id>.json`` (``meta["kind"]``, default ``openapi``, says
    which environment runs it), with what ``envs`` lists about it on its first line."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{domain['id']}.json"
    body = json.dumps({**meta, "domain": domain}, separators=(",", ":"), default=str)
    data = _checked(json.loads(body), path)  # the world as it will be read back
    info = _environment(data, path, seed=0, scale=1.0).info().model_dump(mode="json")
    rest = body[1:].encode()
    listing = {"digest": _digest(rest), "info": info}
    head = json.dumps({"format": FORMAT, "listing": listing}, separators=(",", ":"))
    tmp = path.with_suffix(".json.tmp")
    tmp.write_bytes(head[:-1].encode() + b",\n" + rest)
    tmp.replace(path)
    return path


def _digest(rest: bytes) -> str:
    return hashlib.sha256(rest).hexdigest()[:32]  # sha256: the fastest here (in hardware)


def saved_info(env_id: str) -> EnvInfo | None:
    """What ``envs`` lists about ``env_id`` when it is a library world whose file still holds
    the info saved with it (equal to building the world and asking); None otherwise."""
    found = entry(env_id)
    if not (isinstance(found, EntryPoint) and found.target == _BUILD):
        return None
    try:
        with Path(found.kwargs["path"]).open("rb") as fh:
            head = fh.readline(_HEAD_LIMIT)
            rest = fh.read()
        listing = json.loads(head.rstrip(b",\n") + b"}")["listing"]
        info = listing["info"]
        if listing["digest"] != _digest(rest) or set(info) != set(EnvInfo.model_fields):
            return None  # the file changed since, or the info was saved by another version
        return EnvInfo.model_validate(info)
    except (OSError, ValueError, KeyError, TypeError):  # no listing, or not the one saved
        return None


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise DomainError(f"{path}: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise DomainError(f"{path}: not an envfactory library world ({FORMAT})")
    return _checked(data, path)


def _checked(data: dict[str, Any], path: Path) -> dict[str, Any]:
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
    return EntryPoint(_BUILD, {"path": path})


def build_file_world(path: Path, seed: int = 0, scale: float = 1.0) -> Any:
    """The environment of a saved world file."""
    return _environment(_read(path), path, seed=seed, scale=scale)


def _environment(data: dict[str, Any], path: Path, *, seed: int, scale: float) -> Any:
    spec = parse_domain(data["domain"], str(path))
    world = EntryPoint(KINDS[data.get("kind", "openapi")], {"spec": spec}).load()
    return world(seed=seed, scale=scale)
