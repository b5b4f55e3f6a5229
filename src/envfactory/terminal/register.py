"""The built-in terminal worlds, one per family (read by the registry; nothing imported)."""

from __future__ import annotations

from envfactory.registry.table import EntryPoint

WORLDS: dict[str, EntryPoint] = {
    family_id: EntryPoint("envfactory.terminal.builtin:make", {"family_id": family_id})
    for family_id in (
        "term-organize-files",
        "term-log-report",
        "term-csv-transform",
        "term-search-replace",
        "term-permissions",
        "term-archive",
        "term-git",
        "term-python-fix",
        "term-config-edit",
        "term-make-pipeline",
    )
}
