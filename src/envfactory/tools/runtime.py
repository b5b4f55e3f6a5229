"""Tools compiled from action specs: validate, load rows, check, write, answer.

Every way a call can go wrong ends as a :class:`ToolResult` with a structured error; a tool
never raises into the episode.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from envfactory.contract.errors import DomainError
from envfactory.contract.results import ToolError, ToolFailure, ToolResult
from envfactory.domain.expr import Expr, ExprError, RowFilter, Template, Value, compile_expr
from envfactory.domain.spec import ActionSpec, ParamSpec, RowsSpec
from envfactory.tools.params import check_arguments, json_schema, parse_arguments
from envfactory.world.store import Store
from envfactory.world.tables import Row, Table

_ROW_REF = re.compile(r"^\s*([a-z_][a-z0-9_]*)\s*\[(.+)\]\s*(\?)?\s*$")


@dataclass(slots=True)
class ToolContext:
    """What a Python handler sees: the arguments, the store, the world's date."""

    tool: str
    args: dict[str, Any]
    store: Store
    today: str

    def row(self, table: str, key: Any) -> Row:
        """A row by id, or a not-found error for the agent."""
        found = self.store.get(table, key)
        if found is None:
            label = self.store.base.tables[table].label
            raise ToolFailure("not_found", f"No {label} with id {key!r}.")
        return found


Handler = Callable[[ToolContext], Any]
_HANDLERS: dict[str, Handler] = {}


def handler(name: str) -> Callable[[Handler], Handler]:
    """Register a Python handler: the escape hatch for a tool data cannot express."""

    def register(fn: Handler) -> Handler:
        _HANDLERS[name] = fn
        return fn

    return register


class RowLoad:
    """``entity[key]``: one row by id; a missing row is an error unless marked ``?``."""

    __slots__ = ("key", "optional", "table")

    def __init__(self, text: str, tables: dict[str, Table]) -> None:
        m = _ROW_REF.match(text)
        if not m or m.group(1) not in tables:
            raise DomainError(f"{text!r} is not 'entity[key]' over a known entity")
        self.table = tables[m.group(1)]
        self.key = compile_expr(m.group(2))
        self.optional = bool(m.group(3))

    def __call__(self, store: Store, scope: dict[str, Any]) -> Row | None:
        key = self.key(scope)
        row = None if key is None else store.get(self.table.name, key)
        if row is None and not self.optional:
            raise ToolFailure("not_found", f"No {self.table.label} with id {_short(key)}.")
        return row


class RowsQuery:
    """Rows of an entity by field equality, an optional filter, order and limit."""

    __slots__ = ("filter", "limit", "order_by", "table", "where")

    def __init__(self, spec: RowsSpec, tables: dict[str, Table]) -> None:
        if spec.rows not in tables:
            raise DomainError(f"rows query over unknown entity {spec.rows!r}")
        self.table = tables[spec.rows]
        for f in [*spec.where, (spec.order_by or "id").lstrip("-")]:
            if f not in self.table.types:
                raise DomainError(f"{spec.rows} has no field {f!r}")
        self.where = {f: Value(v) for f, v in spec.where.items()}
        self.filter = RowFilter(spec.filter) if spec.filter else None
        self.order_by = spec.order_by
        self.limit = spec.limit

    def __call__(self, store: Store, scope: dict[str, Any]) -> list[Row]:
        where = {}
        for f, v in self.where.items():
            value = v(scope)
            if value is not None:
                where[f] = value
        if self.filter is None:
            return store.rows(self.table.name, where, self.order_by, self.limit)
        select = partial(self.filter.select, scope=scope, limit=self.limit)
        return store.rows(self.table.name, where, self.order_by, select=select)


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


class _Effect:
    __slots__ = ("name", "op", "target", "values", "when")

    def __init__(
        self, op: str, target: str, values: dict[str, Value], name: str, when: Expr | None
    ) -> None:
        self.op, self.target, self.values, self.name, self.when = op, target, values, name, when


class Tool:
    """A callable tool: ``tool(store, arguments) -> ToolResult``."""

    def __init__(self, spec: ActionSpec, tables: dict[str, Table], today: str) -> None:
        self.spec = spec
        self.name = spec.name
        self.kind = spec.kind
        self.description = spec.description
        self.params: dict[str, ParamSpec] = dict(spec.params)
        self.schema = json_schema(self.params)
        self.today = today
        self.loads: list[tuple[str, RowLoad | RowsQuery]] = [
            (n, RowsQuery(v, tables) if isinstance(v, RowsSpec) else RowLoad(v, tables))
            for n, v in spec.load.items()
        ]
        self.checks = [
            (compile_expr(c.check), Template(c.error), c.rule, c.code) for c in spec.require
        ]
        self.effects = [self._effect(e, tables) for e in spec.effects]
        self.returns = None if spec.returns is None else Value(spec.returns)
        self.handler: Handler | None = None
        if spec.handler is not None:
            if spec.handler not in _HANDLERS:
                raise DomainError(f"{spec.name}: no Python handler registered as {spec.handler!r}")
            self.handler = _HANDLERS[spec.handler]

    def _effect(self, e: Any, tables: dict[str, Table]) -> _Effect:
        loaded = dict(self.loads)
        values = {f: Value(v) for f, v in e.set.items()}
        if e.insert is not None:
            if e.insert not in tables:
                raise DomainError(f"{self.name}: insert into unknown entity {e.insert!r}")
            table = tables[e.insert]
            op, target, name = "insert", e.insert, e.name or e.insert
        else:
            op = "update" if e.update is not None else "delete"
            name = e.update if e.update is not None else e.delete
            load = loaded.get(name)
            if not isinstance(load, RowLoad):
                raise DomainError(f"{self.name}: {op} needs a row loaded as {name!r}")
            table, target = load.table, load.table.name
        for f in values:
            if f not in table.types or f == "id":
                raise DomainError(f"{self.name}: {table.name} has no writable field {f!r}")
        return _Effect(op, target, values, name, compile_expr(e.when) if e.when else None)

    # -- exposure ----------------------------------------------------------------------------

    def openai(self) -> dict[str, Any]:
        """The OpenAI function-calling form."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.schema,
            },
        }

    def mcp(self) -> dict[str, Any]:
        """The MCP tool form, with MCP's read-only / destructive hints."""
        return {
            "name": self.name,
            "description": self.description,
            "inputSchema": self.schema,
            "annotations": {
                "readOnlyHint": self.kind == "read",
                "destructiveHint": any(e.op == "delete" for e in self.effects),
            },
        }

    # -- calling -----------------------------------------------------------------------------

    def __call__(self, store: Store, raw_args: Any) -> ToolResult:
        sent: dict[str, Any] | None = None
        try:
            sent = parse_arguments(raw_args)
            args = check_arguments(self.name, self.params, sent)
            if self.handler is not None:
                with store.transaction():
                    data = self.handler(ToolContext(self.name, args, store, self.today))
            else:
                data = self._run(store, args)
            return ToolResult(data=data, wrote=self.kind == "write", arguments=sent)
        except ToolFailure as f:
            err = ToolError(
                code=f.code, message=f.message, tool=self.name, field=f.field, rule=f.rule
            )
            return ToolResult(error=err, arguments=sent)
        except (ExprError, KeyError, TypeError, ValueError):
            msg = f"{self.name} could not process these arguments."
            err = ToolError(code="tool_failed", message=msg, tool=self.name)
            return ToolResult(error=err, arguments=sent)

    def _run(self, store: Store, args: dict[str, Any]) -> Any:
        scope: dict[str, Any] = {"today": self.today, **args}
        for name, load in self.loads:
            scope[name] = load(store, scope)
        for check, error, rule, code in self.checks:
            if not check(scope):
                raise ToolFailure(
                    "rule_violation" if rule else code, error.render(scope), rule=rule
                )
        last: Any = None
        if self.effects:
            with store.transaction():
                for e in self.effects:
                    last = self._apply(e, store, scope)
        return last if self.returns is None else self.returns(scope)

    @staticmethod
    def _apply(e: _Effect, store: Store, scope: dict[str, Any]) -> Row | None:
        if e.when is not None and not e.when(scope):
            return scope.get(e.name)
        values = {f: v(scope) for f, v in e.values.items()}
        if e.op == "insert":
            row = store.insert(e.target, values)
        elif e.op == "update":
            row = store.update(e.target, scope[e.name]["id"], values)
        else:
            store.delete(e.target, scope[e.name]["id"])
            row = None
        scope[e.name] = row
        return row
