"""Registers every built-in terminal family as an environment (imported by the registry)."""

from __future__ import annotations

from envfactory.registry import register
from envfactory.terminal.environment import TerminalEnvironment
from envfactory.terminal.families.archive import ArchiveHandling
from envfactory.terminal.families.config import ConfigEdit
from envfactory.terminal.families.csvjson import CsvTransform
from envfactory.terminal.families.git import GitOperation
from envfactory.terminal.families.logs import LogReport
from envfactory.terminal.families.make import MakePipeline
from envfactory.terminal.families.organize import OrganizeFiles
from envfactory.terminal.families.perms import Permissions
from envfactory.terminal.families.pyfix import PythonFix
from envfactory.terminal.families.replace import SearchReplace
from envfactory.terminal.family import Family

FAMILIES: list[type[Family]] = [
    OrganizeFiles,
    LogReport,
    CsvTransform,
    SearchReplace,
    Permissions,
    ArchiveHandling,
    GitOperation,
    PythonFix,
    ConfigEdit,
    MakePipeline,
]


def _factory(family: type[Family]):  # type: ignore[no-untyped-def]
    def make(seed: int = 0, scale: float = 1.0) -> TerminalEnvironment:
        return TerminalEnvironment(family(), seed=seed, scale=scale)

    return make


for _family in FAMILIES:
    register(_family.id, _factory(_family), overwrite=True)
