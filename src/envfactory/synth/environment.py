"""Worlds composed by the synthesiser: database environments of kind ``synth``."""

from __future__ import annotations

from typing import Any, Literal

from envfactory.db.environment import DatabaseEnvironment


class SynthEnvironment(DatabaseEnvironment):
    """A database world composed by the world grammar (``envfactory synth``).

    Its tool schemas are made once per format: the audit asks for them on every episode
    (tens of thousands of times per world), and a built world's tools never change."""

    kind = "synth"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._schemas: dict[str, list[dict[str, Any]]] = {}

    def tools(self, fmt: Literal["openai", "mcp"] = "openai") -> list[dict[str, Any]]:
        if fmt not in self._schemas:
            self._schemas[fmt] = super().tools(fmt)
        return list(self._schemas[fmt])
