"""Tools from endpoints: parameters that keep the API's names and descriptions.

An id parameter names a row, a parent parameter its parent; query parameters that match a
field filter a list, search parameters search by name, page parameters page; body properties
set fields. Path and query parameters that name nothing in the world (``subscriptionId``,
``api-version``) become fixed values the agent is told.
"""

from __future__ import annotations

import re
from typing import Any

from envfactory.openapi.document import Document, Operation, Param
from envfactory.openapi.model import Entity, Field, Paging, Tool, flat
from envfactory.openapi.names import (
    article,
    human,
    param_name,
    short_hash,
    singular,
    tool_name,
    words,
)
from envfactory.openapi.resources import Endpoint, Kind, Resource
from envfactory.openapi.schema import Prop, list_shape, prop, scalar_props

MAX_DESCRIPTION = 300
SEARCH_PARAMS = frozenset(
    ["q", "query", "search", "keyword", "keywords", "term", "search_term", "text", "name_contains"]
)
_LIMITS = "limit per_page page_size pagesize max_results maxresults top size count max max_items"
LIMIT_PARAMS = frozenset([*_LIMITS.split(), "maxitems", "first", "num"])
OFFSET_PARAMS = frozenset(["offset", "skip", "start", "start_index", "startindex", "from"])
PAGE_PARAMS = frozenset(["page", "page_number", "pagenumber", "page_num", "pageno"])
_TOKENS = "page_token pagetoken next_token nexttoken cursor after marker continuation_token"
TOKEN_PARAMS = frozenset([*_TOKENS.split(), "continuationtoken", "skip_token", "skiptoken"])


class ToolBuilder:
    """Tools for the entities of a world, and the fixed values they share."""

    def __init__(
        self, doc: Document, world: str, entities: dict[str, Entity], by_noun: dict[str, str]
    ) -> None:
        self.doc = doc
        self.world = world
        self.entities = entities
        self.by_noun = by_noun
        self.constants: dict[str, Any] = {}
        self.tool_names: set[str] = set()

    # -- tools -------------------------------------------------------------------------------

    def add(self, r: Resource) -> None:
        """The tools of a resource's endpoints."""
        entity = self.entities[self.by_noun[r.noun]]
        for kind, ep in r.endpoints.items():
            tool = self._tool(entity, kind, ep)
            if tool is not None:
                entity.tools[kind] = tool

    def _tool(self, entity: Entity, kind: Kind, ep: Endpoint) -> Tool | None:
        op = ep.op
        name = tool_name(op.operation_id or f"{kind}_{entity.noun}", self.tool_names)
        tool = Tool(
            name=name,
            kind=kind,
            entity=entity.key,
            description=_describe(op, kind, entity),
            method=op.method.upper(),
            path=op.path,
        )
        taken: set[str] = set()
        used: set[str] = set()  # API parameter names already placed
        if ep.id_param:
            pname = param_name(ep.id_param, taken)
            tool.params[pname] = {
                "description": _join(
                    f"The {entity.label}'s id, like {entity.prefix}-00001.",
                    _param_doc(op, ep.id_param),
                )
            }
            tool.id_param = pname
            used.add(ep.id_param)
        if ep.parent_param and entity.parent is not None:
            parent = self.entities[entity.parent]
            pname = param_name(ep.parent_param, taken)
            required = kind in ("list", "create") or _is_path(op, ep.parent_param)
            tool.params[pname] = {
                "description": f"The {parent.label}'s id, like {parent.prefix}-00001.",
                "required": required,
            }
            tool.parent_param = pname
            used.add(ep.parent_param)
        if kind == "list":
            self._list_params(tool, entity, op, taken, used)
        elif kind in ("create", "update"):
            self._body_params(tool, entity, op, kind, taken, used)
        ancestors = _ancestors(op)
        for p in op.params:
            if p.name in used or p.location not in ("path", "query") or not p.required:
                continue
            owner = self.by_noun.get(ancestors.get(p.name, ""))
            if owner is not None:
                label = self.entities[owner].label
                tool.params[param_name(p.name, taken)] = {
                    "description": f"The {label}'s id (optional: the ids above identify it).",
                    "required": False,
                }
                continue
            self._constant(tool, p, taken)
        return tool

    def _constant(self, tool: Tool, p: Param, taken: set[str]) -> None:
        value = self.constants.get(p.name)
        if value is None:
            value = self.constants[p.name] = _constant_value(p, self.world)
        pname = param_name(p.name, taken)
        kind = _ptype(p.schema)
        tool.params[pname] = {
            "type": kind,
            "description": _join(_trim(p.description, 160), f"Always {value!r} in this workspace."),
            "enum": [value],
        }
        tool.constants[pname] = value

    def _list_params(
        self, tool: Tool, entity: Entity, op: Operation, taken: set[str], used: set[str]
    ) -> None:
        by_flat = {flat(f.api): n for n, f in entity.fields.items()}
        paging = Paging()
        shape = list_shape(op.response, self.doc.resolver) if op.response else None
        if shape is not None:
            paging.array_key, paging.next_key = shape.array_key, shape.next_key
        for p in op.params:
            if p.name in used or p.location != "query":
                continue
            key = flat(p.name)
            snake_name = "_".join(words(p.name))
            kind = _ptype(p.schema)
            if key in by_flat and not p.required:
                fname = by_flat[key]
                f = entity.fields[fname]
                pname = param_name(p.name, taken)
                spec: dict[str, Any] = {
                    "description": _join(
                        _trim(p.description, 160), f"Only {entity.labels} with this {human(f.api)}."
                    ),
                    "required": False,
                }
                if f.type not in ("ref", "date"):
                    spec["type"] = _param_type(f)
                if f.enum and f.type != "ref":
                    spec["enum"] = f.enum
                tool.params[pname] = spec
                tool.fields[pname] = fname
                used.add(p.name)
            elif snake_name in SEARCH_PARAMS and kind == "string" and entity.naming_field:
                pname = param_name(p.name, taken)
                tool.params[pname] = {
                    "description": _join(
                        _trim(p.description, 160),
                        f"Words from the {entity.label}'s "
                        f"{human(entity.fields[entity.naming_field].api)}.",
                    ),
                    "required": p.required,
                }
                tool.search = pname
                used.add(p.name)
            elif (
                kind == "integer"
                and (key in LIMIT_PARAMS or snake_name in LIMIT_PARAMS)
                and not paging.size
            ):
                paging.size = param_name(p.name, taken)
                hi = p.schema.get("maximum")
                paging.max_size = (
                    int(hi) if isinstance(hi, (int, float)) and 1 <= hi <= 1000 else 100
                )
                default = p.schema.get("default")
                if isinstance(default, int) and 1 <= default <= paging.max_size:
                    paging.default_size = default
                else:
                    paging.default_size = min(20, paging.max_size)
                tool.params[paging.size] = {
                    "type": "integer",
                    "description": _join(
                        _trim(p.description, 160), f"Page size (default {paging.default_size})."
                    ),
                    "required": False,
                    "minimum": 1,
                    "maximum": paging.max_size,
                }
                used.add(p.name)
            elif not paging.position and (
                (kind == "integer" and (key in OFFSET_PARAMS or snake_name in OFFSET_PARAMS))
                or (kind == "integer" and (key in PAGE_PARAMS or snake_name in PAGE_PARAMS))
                or (kind == "string" and (key in TOKEN_PARAMS or snake_name in TOKEN_PARAMS))
            ):
                paging.position = param_name(p.name, taken)
                if kind == "string":
                    paging.style = "token"
                    doc = "The next-page token from the previous page."
                    tool.params[paging.position] = {
                        "description": _join(_trim(p.description, 160), doc),
                        "required": False,
                    }
                else:
                    page = key in PAGE_PARAMS or snake_name in PAGE_PARAMS
                    paging.style = "page" if page else "offset"
                    doc = "Page number, from 1." if page else "Rows to skip, from 0."
                    tool.params[paging.position] = {
                        "type": "integer",
                        "description": _join(_trim(p.description, 160), doc),
                        "required": False,
                        "minimum": 1 if page else 0,
                    }
                used.add(p.name)
        if paging.size and not paging.style:
            paging.style = "offset"
        tool.paging = paging

    def _body_params(
        self,
        tool: Tool,
        entity: Entity,
        op: Operation,
        kind: Kind,
        taken: set[str],
        used: set[str],
    ) -> None:
        by_flat = {flat(f.api): n for n, f in entity.fields.items()}
        props: list[Prop] = scalar_props(op.body, self.doc.resolver) if op.body else []
        props += [
            q for p in op.params if (q := _query_prop(p)) is not None and p.location == "query"
        ]
        for p in props:
            key = flat(p.name)
            if p.name in used or key not in by_flat or p.read_only:
                continue
            fname = by_flat[key]
            if fname == entity.parent_field and tool.parent_param:
                continue
            f = entity.fields[fname]
            pname = param_name(p.name, taken)
            spec: dict[str, Any] = {
                "description": _trim(p.description, 200) or f"The {entity.label}'s {human(f.api)}.",
                "required": kind == "create" and p.required,
            }
            if f.type == "ref":
                target = self.entities[f.ref or ""]
                spec["description"] = _join(
                    spec["description"], f"A {target.label} id, like {target.prefix}-00001."
                )
            else:
                spec["type"] = _param_type(f)
                if f.enum:
                    spec["enum"] = f.enum
                if f.type == "date":
                    spec["format"] = "date"
                for src, dst in (("minimum", "minimum"), ("maximum", "maximum")):
                    v = getattr(p, src)
                    if v is not None and f.type in ("integer", "number"):
                        spec[dst] = v
                if p.max_length and f.type == "string":
                    spec["max_length"] = max(1, min(p.max_length, 2000))
            tool.params[pname] = spec
            tool.fields[pname] = fname
            used.add(p.name)


_TAG = re.compile(r"<[^>]+>")


def _ancestors(op: Operation) -> dict[str, str]:
    """Path parameters that name a row of some resource: ``/apikeys/{key}`` -> {key: apikey},
    ``/{tenant}/{restaurantId}/...`` -> {restaurantId: restaurant}."""
    out = {}
    segs = [s for s in op.path.split("/") if s]
    for before, seg in zip(["", *segs], segs, strict=False):
        if not (seg.startswith("{") and seg.endswith("}")):
            continue
        name = seg.strip("{}+")
        ws = words(name)
        if len(ws) >= 2 and ws[-1] == "id":
            out[name] = "_".join(ws[:-1])
        elif before and "{" not in before and words(before):
            wb = words(before)
            out[name] = "_".join([*wb[:-1], singular(wb[-1])])
    return out


def _query_prop(p: Param) -> Prop | None:
    return prop(p.name, p.schema, p.required)


def _is_path(op: Operation, name: str) -> bool:
    return any(p.name == name and p.location == "path" for p in op.params)


def _param_doc(op: Operation, name: str) -> str:
    for p in op.params:
        if p.name == name:
            return _trim(p.description, 160)
    return ""


def _ptype(schema: dict[str, Any]) -> str:
    t = schema.get("type")
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), "string")
    return str(t) if t in ("string", "integer", "number", "boolean") else "string"


def _param_type(f: Field) -> str:
    t = f.type
    return t if t in ("integer", "number", "boolean") else "string"


def _trim(text: str, n: int) -> str:
    """At most ``n`` characters of a description, its HTML tags and extra spaces gone."""
    text = " ".join(_TAG.sub("", str(text)).split())
    return text if len(text) <= n else text[: n - 3].rstrip() + "..."


def _join(*parts: str) -> str:
    return " ".join(p.strip() for p in parts if p and p.strip())


def _describe(op: Operation, kind: Kind, entity: Entity) -> str:
    own = _trim(op.doc, MAX_DESCRIPTION)
    what = {
        "list": f"Lists {entity.labels}.",
        "get": f"Gets one {entity.label} by id.",
        "create": f"Creates {article(entity.label)}.",
        "update": f"Updates {article(entity.label)}: only the fields given change.",
        "delete": f"Deletes {article(entity.label)}.",
    }[kind]
    return _join(
        own, f"({op.method.upper()} {op.path})" if not own else "", what if not own else ""
    )


def _constant_value(p: Param, world: str) -> Any:
    s = p.schema
    if isinstance(s.get("enum"), list) and s["enum"]:
        return s["enum"][0]
    for key in ("default", "example"):
        if isinstance(s.get(key), (str, int, float, bool)) and s.get(key) != "":
            return s[key]
    kind = _ptype(s)
    if kind == "integer" or kind == "number":
        return 1
    if kind == "boolean":
        return True
    h = short_hash(world + p.name, 12)
    if words(p.name)[-1:] == ["id"]:
        tail = short_hash(world + p.name + "x", 12)
        return f"{h[:8]}-{h[8:12]}-4{h[:3]}-a{short_hash(world, 3)}-{tail}"
    if "version" in words(p.name):
        return "2024-01-01"
    return f"{'-'.join(words(p.name)[:2]) or 'value'}-{h[:4]}"
