"""REST semantics as declarative actions: list filters and pages, get reads, create inserts,
update patches, delete removes.

Each tool is plain domain data (loads, checks, effects, a returned value), so the engine
compiles and validates it like any hand-written tool; nothing here runs at episode time.
Errors are the API's: an unknown id is ``not_found`` (also for a row under another parent), a
bad argument ``invalid_arguments`` naming the field, deleting a row that still has children
breaks the ``keep_children`` rule.
"""

from __future__ import annotations

from typing import Any

from envfactory.openapi.model import Entity, Model, Paging, Tool

ROW_LIMIT = 10_000


def _param_specs(tool: Tool) -> dict[str, dict[str, Any]]:
    out = {}
    for name, p in tool.params.items():
        spec = {k: v for k, v in p.items() if v is not None}
        spec.setdefault("required", True)
        out[name] = spec
    return out


def _spec(tool: Tool, kind: str, **parts: Any) -> dict[str, Any]:
    """ActionSpec data: the tool's name, kind, description and parameters, and ``parts``
    (load, require, effects, returns)."""
    return {
        "name": tool.name,
        "kind": kind,
        "description": tool.description,
        "params": _param_specs(tool),
        **parts,
    }


def _free(tool: Tool, base: str) -> str:
    """A load name no parameter of the tool uses."""
    name, n = base, 2
    while name in tool.params:
        name = f"{base}{n}"
        n += 1
    return name


def _parent_check(tool: Tool, entity: Entity, parent: Entity | None) -> list[dict[str, Any]]:
    """An item under the wrong parent is not found, as a nested URL would answer."""
    if tool.parent_param is None or entity.parent_field is None or parent is None:
        return []
    p, f = tool.parent_param, entity.parent_field
    return [
        {
            "check": f"{p} is None or target.{f} == {p}",
            "error": f"No {entity.label} {{target.id}} under {parent.label} {{{p}}}.",
            "code": "not_found",
        }
    ]


def _target(tool: Tool, model: Model) -> tuple[Entity, dict[str, Any], list[dict[str, Any]]]:
    """For a tool on one item by id: its entity, the load of the item as ``target`` and the
    parent check."""
    entity = model.entities[tool.entity]
    parent = model.entities.get(entity.parent or "")
    loads: dict[str, Any] = {"target": f"{entity.key}[{tool.id_param}]"}
    return entity, loads, _parent_check(tool, entity, parent)


def _bound(
    tool: Tool, entity: Entity, optional_parent: bool
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The parent's load (when the tool names one) and the fields the tool's parameters set:
    ``{parent_field: "=parent_param", field: "=param", ...}``."""
    loads: dict[str, Any] = {}
    fields: dict[str, Any] = {}
    if tool.parent_param and entity.parent_field and entity.parent:
        loads["parent"] = f"{entity.parent}[{tool.parent_param}]" + ("?" if optional_parent else "")
        fields[entity.parent_field] = f"={tool.parent_param}"
    for pname, fname in tool.fields.items():
        fields[fname] = f"={pname}"
    return loads, fields


def _ref_checks(tool: Tool, model: Model, loads: dict[str, Any]) -> list[dict[str, Any]]:
    """Reference arguments must name existing rows."""
    entity = model.entities[tool.entity]
    out = []
    for pname, fname in tool.fields.items():
        f = entity.fields[fname]
        if f.ref is None:
            continue
        target = model.entities[f.ref]
        name = _free(tool, f"ref_{fname}".lower())
        loads[name] = f"{f.ref}[{pname}]?"
        out.append(
            {
                "check": f"{pname} is None or {name} is not None",
                "error": f"'{pname}': no {target.label} with id {{{pname}}}.",
                "code": "not_found",
            }
        )
    return out


def _value_checks(tool: Tool, entity: Entity) -> list[dict[str, Any]]:
    """What the spec states beyond types: minimum lengths and e-mail formats."""
    out = []
    for pname, fname in tool.fields.items():
        f = entity.fields[fname]
        prop = f.prop
        if prop is None or f.type != "string" or f.enum:
            continue
        if prop.min_length:
            out.append(
                {
                    "check": f"{pname} is None or len({pname}) >= {prop.min_length}",
                    "error": f"'{pname}' must be at least {prop.min_length} characters.",
                    "code": "invalid_arguments",
                }
            )
        if (prop.format or "") == "email" or f.spec.get("faker") == "email":
            out.append(
                {
                    "check": f"{pname} is None or ('@' in {pname} and '.' in {pname})",
                    "error": f"'{pname}' must be an e-mail address, got {{{pname}}}.",
                    "code": "invalid_arguments",
                }
            )
    return out


def _page_expr(paging: Paging | None, rows: str) -> tuple[str, str | None, list[dict[str, Any]]]:
    """The page of ``rows`` a call asked for, the next-page value, and argument checks."""
    if paging is None or paging.style is None:
        return rows, None, []
    size = f"({paging.size} or {paging.default_size})" if paging.size else str(paging.default_size)
    pos = paging.position
    if paging.style == "token" and pos:
        start = f"int({pos} or 0)"
        check = {
            "check": f"{pos} is None or (len({pos}) <= 9 "
            f"and all(c in '0123456789' for c in {pos}))",
            "error": f"'{pos}' is not a page token this API gave out.",
            "code": "invalid_arguments",
        }
        nxt = f"str({start} + {size}) if {start} + {size} < len({rows}) else None"
        return f"{rows}[{start}:{start} + {size}]", nxt, [check]
    if paging.style == "page" and pos:
        start = f"(({pos} or 1) - 1) * {size}"
        nxt = f"({pos} or 1) + 1 if {start} + {size} < len({rows}) else None"
        return f"{rows}[{start}:{start} + {size}]", nxt, []
    start = f"({pos} or 0)" if pos else "0"
    nxt = f"{start} + {size} if {start} + {size} < len({rows}) else None"
    return f"{rows}[{start}:{start} + {size}]", nxt, []


def list_action(tool: Tool, model: Model) -> dict[str, Any]:
    entity = model.entities[tool.entity]
    loads, where = _bound(tool, entity, optional_parent=not tool.parent_required)
    rows: dict[str, Any] = {"rows": entity.key, "where": where, "limit": ROW_LIMIT}
    if tool.search and entity.naming_field:
        q, nf = tool.search, entity.naming_field
        rows["filter"] = f"{q} is None or lower({q}) in lower(str(row.{nf}))"
    found = _free(tool, "found")
    loads[found] = rows
    page, nxt, checks = _page_expr(tool.paging, found)
    paging = tool.paging or Paging()
    if paging.array_key:
        body = f"{paging.array_key!r}: {page}"
        if paging.next_key and nxt:
            body += f", {paging.next_key!r}: {nxt}"
        returns = "={" + body + "}"
    else:
        returns = f"={page}" if paging.style else f"={found}[:100]"
    return _spec(
        tool,
        "read",
        load=loads,
        require=checks,
        returns=returns,
    )


def get_action(tool: Tool, model: Model) -> dict[str, Any]:
    _, loads, checks = _target(tool, model)
    return _spec(tool, "read", load=loads, require=checks, returns="=target")


def create_action(tool: Tool, model: Model) -> dict[str, Any]:
    entity = model.entities[tool.entity]
    loads, values = _bound(tool, entity, optional_parent=False)
    checks = _ref_checks(tool, model, loads) + _value_checks(tool, entity)
    for fname, f in entity.fields.items():
        if fname not in values and f.prop is not None and f.prop.default is not None:
            values[fname] = f.prop.default
    return _spec(
        tool,
        "write",
        load=loads,
        require=checks,
        effects=[{"insert": entity.key, "name": "created", "set": values}],
        returns="=created",
    )


def update_action(tool: Tool, model: Model) -> dict[str, Any]:
    entity, loads, checks = _target(tool, model)
    given = list(tool.fields)
    if given:
        checks.append(
            {
                "check": "any(v is not None for v in [" + ", ".join(given) + "])",
                "error": "Nothing to change: give at least one of " + ", ".join(given) + ".",
                "code": "invalid_arguments",
            }
        )
    checks += _ref_checks(tool, model, loads) + _value_checks(tool, entity)
    values = {f: f"={p} if {p} is not None else target.{f}" for p, f in tool.fields.items()}
    return _spec(
        tool,
        "write",
        load=loads,
        require=checks,
        effects=[{"update": "target", "set": values}] if values else [],
        returns="=target",
    )


def delete_action(tool: Tool, model: Model) -> dict[str, Any]:
    entity, loads, checks = _target(tool, model)
    for child in children(model, entity):
        name = _free(tool, f"kids_{child.key}".lower())
        loads[name] = {
            "rows": child.key,
            "where": {child.parent_field: "=target.id"},
            "limit": ROW_LIMIT,
        }
        checks.append(
            {
                "check": f"len({name}) == 0",
                "error": f"{entity.label.capitalize()} {{target.id}} still has {{len({name})}} "
                f"{child.label}(s); delete them first.",
                "rule": "keep_children",
            }
        )
    return _spec(
        tool,
        "write",
        load=loads,
        require=checks,
        effects=[{"delete": "target"}],
        returns=f"={{'deleted': {tool.id_param}}}",
    )


def children(model: Model, entity: Entity) -> list[Entity]:
    return [e for e in model.entities.values() if e.parent == entity.key and e.parent_field]


BUILDERS = {
    "list": list_action,
    "get": get_action,
    "create": create_action,
    "update": update_action,
    "delete": delete_action,
}


def action(tool: Tool, model: Model) -> dict[str, Any]:
    """ActionSpec data for a tool."""
    return BUILDERS[tool.kind](tool, model)
