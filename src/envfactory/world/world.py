"""A compiled world: a domain's tables, seeded base state and callable tools."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal

from envfactory.domain.spec import DomainSpec
from envfactory.tools.runtime import Tool
from envfactory.world.seed import generate
from envfactory.world.store import Base, Store
from envfactory.world.tables import Row, tables_for


class World:
    """Everything episodes of one domain share: built once, read-only afterwards.

    The initial rows are generated from the spec, or given (``rows``: an imported world, whose
    ids are the data's own keys)."""

    def __init__(
        self,
        spec: DomainSpec,
        *,
        seed: int = 0,
        scale: float = 1.0,
        rows: Mapping[str, Iterable[Row]] | None = None,
    ) -> None:
        self.spec = spec
        self.seed = seed
        self.scale = scale
        self.today = spec.today.isoformat()
        self.imported = rows is not None
        tables = tables_for(spec)
        self.base = Base.build(
            tables, rows if rows is not None else generate(spec, tables, seed, scale)
        )
        self.tables = tables
        self.tools: dict[str, Tool] = {a.name: Tool(a, tables, self.today) for a in spec.actions}
        self.write_tools = frozenset(n for n, t in self.tools.items() if t.kind == "write")

    def new_store(self) -> Store:
        return Store(self.base)

    @property
    def row_count(self) -> int:
        return sum(len(r) for r in self.base.rows.values())

    def tool_schemas(self, fmt: Literal["openai", "mcp"] = "openai") -> list[dict[str, Any]]:
        return [t.openai() if fmt == "openai" else t.mcp() for t in self.tools.values()]
