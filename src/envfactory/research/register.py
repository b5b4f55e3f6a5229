"""The built-in research worlds (read by the registry; nothing imported)."""

from __future__ import annotations

from envfactory.registry.table import EntryPoint

WORLDS: dict[str, EntryPoint] = {
    "research-wiki": EntryPoint("envfactory.research.builtin:wiki"),
    "research-pydocs": EntryPoint("envfactory.research.builtin:pydocs"),
}
