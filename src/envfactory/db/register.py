"""The built-in database worlds, one per domain file (read by the registry; nothing but the
files' names is looked at until a world is made)."""

from __future__ import annotations

from envfactory.domain.loader import builtin_domain_files
from envfactory.registry.table import EntryPoint

WORLDS: dict[str, EntryPoint] = {
    path.stem: EntryPoint("envfactory.db.environment:from_domain_file", {"path": str(path)})
    for path in builtin_domain_files()
}
