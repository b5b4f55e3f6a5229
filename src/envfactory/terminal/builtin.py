"""Registers every built-in terminal family as an environment (imported by the registry)."""

from __future__ import annotations

from envfactory.registry import register
from envfactory.terminal.environment import TerminalEnvironment
from envfactory.terminal.families.organize import OrganizeFiles
from envfactory.terminal.family import Family

FAMILIES: list[type[Family]] = [
    OrganizeFiles,
]


def _factory(family: type[Family]):  # type: ignore[no-untyped-def]
    def make(seed: int = 0, scale: float = 1.0) -> TerminalEnvironment:
        return TerminalEnvironment(family(), seed=seed, scale=scale)

    return make


for _family in FAMILIES:
    register(_family.id, _factory(_family), overwrite=True)
