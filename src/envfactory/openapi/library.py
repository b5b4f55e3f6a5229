"""A library of compiled worlds (see :mod:`envfactory.registry.worldfile`), registered on demand.

``register_library(DIR)`` makes every world in DIR available to ``make``, the CLI, rollouts and
servers; ``register_spec`` registers one compiled domain.
"""

from __future__ import annotations

from pathlib import Path

from envfactory.contract.errors import DomainError
from envfactory.domain.spec import DomainSpec
from envfactory.registry.sources import register_world_file
from envfactory.registry.table import EntryPoint, free_id, register_compiled
from envfactory.registry.worldfile import world_files


def factory_for(spec: DomainSpec) -> EntryPoint:
    """A registry entry for a compiled domain, run as an ``openapi`` world."""
    return EntryPoint("envfactory.openapi.environment:OpenAPIEnvironment", {"spec": spec})


def register_spec(spec: DomainSpec) -> str:
    """Register a compiled domain as an ``openapi`` world (for ``make`` and the audit)."""
    register_compiled(spec.id, factory_for(spec))
    return spec.id


def register_library(folder: str | Path) -> list[str]:
    """Register every world saved in ``folder`` (each is read when first made, so a large
    library registers instantly); returns their ids. Worlds whose id a built-in world has
    are left out."""
    folder = Path(folder)
    if not folder.is_dir():
        raise DomainError(f"{folder}: no such library folder")
    return [register_world_file(p) for p in world_files(folder) if free_id(p.stem) == p.stem]
