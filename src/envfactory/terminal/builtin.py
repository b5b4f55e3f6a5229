"""The built-in terminal families, and the factory their registry entries name."""

from __future__ import annotations

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


def make(family_id: str, seed: int = 0, scale: float = 1.0) -> TerminalEnvironment:
    """The terminal world of the family ``family_id``."""
    family = next(f for f in FAMILIES if f.id == family_id)
    return TerminalEnvironment(family(), seed=seed, scale=scale)
