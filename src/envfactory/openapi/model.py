"""The world an API describes: entities with fields, and tools with parameters.

From the resource graph: the best-connected resources (with their ancestors) become
entities; their scalar properties become typed, generated fields; path nesting and
``<noun>Id`` properties become references; each endpoint becomes a tool whose parameters keep
the API's names and descriptions. Path and query parameters that name nothing in the world
(``subscriptionId``, ``api-version``) become fixed values the agent is told.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from envfactory.openapi.document import Document, Operation, Param
from envfactory.openapi.fields import generator
from envfactory.openapi.names import (
    article,
    human,
    id_prefix,
    identifier,
    param_name,
    plural,
    short_hash,
    singular,
    tool_name,
    words,
)
from envfactory.openapi.resources import Endpoint, Graph, Kind, Resource
from envfactory.openapi.schema import Prop, list_shape, prop, scalar_props

MAX_RESOURCES = 8
MAX_FIELDS = 10
ROW_BUDGET = 300  # rows a world aims at: small worlds compile and audit fast
TOP_COUNT = (16, 100)  # rows of a top-level entity: at least, at most
PER_PARENT = ((0, 3), (0, 2))  # rows per parent row: under a top-level row, deeper
MAX_DESCRIPTION = 300
NAMING = (
    "name",
    "title",
    "display_name",
    "full_name",
    "username",
    "user_name",
    "label",
    "email",
    "subject",
    "code",
    "slug",
    "handle",
    "key",
)
SEARCH_PARAMS = frozenset(
    ["q", "query", "search", "keyword", "keywords", "term", "search_term", "text", "name_contains"]
)
_LIMITS = "limit per_page page_size pagesize max_results maxresults top size count max max_items"
LIMIT_PARAMS = frozenset([*_LIMITS.split(), "maxitems", "first", "num"])
OFFSET_PARAMS = frozenset(["offset", "skip", "start", "start_index", "startindex", "from"])
PAGE_PARAMS = frozenset(["page", "page_number", "pagenumber", "page_num", "pageno"])
_TOKENS = "page_token pagetoken next_token nexttoken cursor after marker continuation_token"
TOKEN_PARAMS = frozenset([*_TOKENS.split(), "continuationtoken", "skip_token", "skiptoken"])


class NoWorld(Exception):
    """The document describes no resource a world can hold (``reason`` says which)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


@dataclass
class Field:
    """A column of an entity, generated like the API's property."""

    name: str
    api: str
    spec: dict[str, Any]
    ref: str | None = None  # the entity it refers to
    prop: Prop | None = None

    @property
    def type(self) -> str:
        return "ref" if self.ref else str(self.spec.get("type", "string"))

    @property
    def enum(self) -> list[Any] | None:
        choices = self.spec.get("choices")
        return list(choices) if choices else None


@dataclass
class Paging:
    """How a list pages: ``offset`` (limit + offset), ``page`` (size + page number) or
    ``token`` (size + an opaque next-page token); and the response's shape."""

    style: str | None = None
    size: str | None = None
    position: str | None = None
    max_size: int = 100
    default_size: int = 20
    array_key: str | None = None
    next_key: str | None = None


@dataclass
class Tool:
    """An endpoint as a tool: its parameters and what each one means in the world."""

    name: str
    kind: Kind
    entity: str
    description: str
    params: dict[str, dict[str, Any]] = field(default_factory=dict)
    id_param: str | None = None
    parent_param: str | None = None
    constants: dict[str, Any] = field(default_factory=dict)
    fields: dict[str, str] = field(default_factory=dict)  # param -> field it sets or filters
    search: str | None = None
    paging: Paging | None = None
    method: str = ""
    path: str = ""

    @property
    def parent_required(self) -> bool:
        """Whether a call must name the parent row (a list nested under its parent)."""
        if self.parent_param is None:
            return False
        return bool(self.params[self.parent_param].get("required", True))


@dataclass
class Entity:
    key: str
    noun: str
    label: str
    prefix: str
    fields: dict[str, Field]
    parent: str | None = None
    parent_field: str | None = None
    tools: dict[Kind, Tool] = field(default_factory=dict)
    description: str = ""
    count: int = 0  # rows, for a top-level entity
    per: tuple[int, int] = (0, 0)  # rows per parent row, for a nested one

    @property
    def labels(self) -> str:
        """The plural noun: ``identity pools``."""
        *head, last = self.label.split(" ")
        return " ".join([*head, plural(last)])

    @property
    def naming_field(self) -> str | None:
        """The field an instruction names a row by (``jobName``, ``name``, ``title``...)."""
        strings = {
            "_".join(words(f.api)): n
            for n, f in self.fields.items()
            if f.type == "string" and not f.enum and "expr" not in f.spec
        }
        for want in (f"{self.noun}_name", f"{self.noun}_title", *NAMING):
            if want in strings:
                return strings[want]
        for key, n in strings.items():
            if key.endswith("_name") or key.endswith("_title"):
                return n
        return None


@dataclass
class Model:
    """A whole world: entities in dependency order, and the fixed values tools take."""

    entities: dict[str, Entity]
    constants: dict[str, Any]
    title: str
    description: str
    operations: int
    skipped: dict[str, int]

    @property
    def tools(self) -> list[Tool]:
        return [t for e in self.entities.values() for t in e.tools.values()]


def _flat(name: str) -> str:
    return "".join(words(name))


def _id_like(res: Resource) -> set[str]:
    noun = "".join(res.noun.split("_"))
    out = {"id", noun + "id", noun + "ids"}
    out |= {_flat(e.id_param) for e in res.endpoints.values() if e.id_param}
    return out


def _parent_like(res: Resource, parent: Resource | None) -> set[str]:
    if parent is None:
        return set()
    out = {"".join(parent.noun.split("_")) + "id"}
    out |= {_flat(e.parent_param) for e in res.endpoints.values() if e.parent_param}
    return out


_EVENT_WORDS_WORDS = """
    callback webhook hook notification event async ready complete ingestion status
"""
EVENT_WORDS = frozenset(_EVENT_WORDS_WORDS.split())


def _event_like(noun: str) -> bool:
    ws = noun.split("_")
    return any(w in EVENT_WORDS for w in ws) or ws[-1].endswith("ed")


def _select(graph: Graph) -> list[Resource]:
    """Up to MAX_RESOURCES resources, best first, each with its ancestors, parents first."""
    res = graph.resources

    def usable(r: Resource) -> bool:
        """Rows with fields, or parents of such rows. A resource that can only be created
        is kept when it is a thing (messages, orders), not an event (``order-ready``)."""
        has_children = any(c.parent == r.noun for c in res.values())
        if set(r.endpoints) == {"create"} and not has_children and _event_like(r.noun):
            return False
        own = [p for p in r.props if _flat(p.name) not in _id_like(r)]
        return bool(own) or has_children

    def score(r: Resource) -> tuple[int, int, str]:
        writes = sum(1 for k in ("create", "update", "delete") if k in r.endpoints)
        return (-(3 * writes + len(r.endpoints)), -len(r.props), r.noun)

    chosen: list[str] = []
    for r in sorted((r for r in res.values() if usable(r)), key=score):
        chain = []
        node: Resource | None = r
        while node is not None and node.noun not in chosen:
            chain.append(node.noun)
            parent = res.get(node.parent) if node.parent else None
            if parent is not None and parent.noun in chain:  # /a/{}/b and /b/{}/a: a cycle
                node.parent, parent = None, None
            node = parent
        if len(chosen) + len(chain) > MAX_RESOURCES:
            continue
        chosen += reversed(chain)
    return [res[n] for n in chosen]


def build_model(doc: Document, graph: Graph, world: str) -> Model:
    """The world model of a document, or :class:`NoWorld` when it holds nothing writable."""
    picked = _select(graph)
    if not picked and doc.dropped:
        raise NoWorld("unsupported_construct", "; ".join(sorted(doc.dropped))[:400])
    if not picked:
        raise NoWorld("no_resources", "no operation lists, gets, creates, updates or deletes rows")
    if not any(r.writable for r in picked):
        raise NoWorld("no_writable_resource", "no operation creates, updates or deletes rows")
    builder = _Builder(doc, graph, world)
    builder.name_entities(picked)
    for r in picked:
        builder.entity(r)
    for r in picked:
        builder.tools(r)
    entities = builder.entities
    _size(entities)
    if not any(
        t.kind in ("create", "update", "delete")
        for e in entities.values()
        for t in e.tools.values()
    ):
        raise NoWorld("no_writable_resource", "no write operation fits a modelled resource")
    return Model(
        entities=entities,
        constants=builder.constants,
        title=doc.title,
        description=doc.description,
        operations=graph.operations,
        skipped=dict(graph.skipped),
    )


def _size(entities: dict[str, Entity]) -> None:
    """Rows per entity so the world holds about ROW_BUDGET rows: nested entities get a few
    rows per parent row (some none, so childless parents exist), top-level ones a count."""
    share: dict[str, float] = {}
    for e in entities.values():  # parents come first
        if e.parent is None:
            share[e.key] = 1.0
            continue
        e.per = PER_PARENT[0] if entities[e.parent].parent is None else PER_PARENT[1]
        share[e.key] = share[e.parent] * sum(e.per) / 2
    lo, hi = TOP_COUNT
    top = max(lo, min(hi, int(ROW_BUDGET / max(1.0, sum(share.values())))))
    for e in entities.values():
        if e.parent is None:
            e.count = top


class _Builder:
    def __init__(self, doc: Document, graph: Graph, world: str) -> None:
        self.doc = doc
        self.graph = graph
        self.world = world
        self.entities: dict[str, Entity] = {}
        self.by_noun: dict[str, str] = {}
        self.constants: dict[str, Any] = {}
        self.tables: set[str] = set()
        self.prefixes: set[str] = set()
        self.tool_names: set[str] = set()
        self.links: dict[str, set[str | None]] = {}

    # -- entities ----------------------------------------------------------------------------

    def name_entities(self, picked: list[Resource]) -> None:
        """Table names for every resource first, so references can point forward."""
        for r in picked:
            self.by_noun[r.noun] = identifier(_plural_phrase(r.noun), self.tables)
        self.links = {r.noun: {r.parent} if r.parent in self.by_noun else set() for r in picked}

    def _reaches(self, start: str, goal: str) -> bool:
        seen, todo = set(), [start]
        while todo:
            n = todo.pop()
            if n == goal:
                return True
            if n not in seen:
                seen.add(n)
                todo += [x for x in self.links.get(n, ()) if x]
        return False

    def entity(self, r: Resource) -> None:
        parent = self.graph.resources.get(r.parent) if r.parent else None
        if parent is not None and parent.noun not in self.by_noun:
            parent = None
        key = self.by_noun[r.noun]
        label = human(r.noun)
        skip = _id_like(r) | _parent_like(r, parent)
        taken: set[str] = set()
        fields: dict[str, Field] = {}
        parent_field = None
        if parent is not None:
            api = next((e.parent_param for e in r.endpoints.values() if e.parent_param), None)
            api = api or f"{parent.noun}_id"
            parent_field = identifier(api if _flat(api) != "parent" else f"{parent.noun}_id", taken)
            fields[parent_field] = Field(parent_field, api, {}, ref=self.by_noun[parent.noun])
        props = sorted(
            (p for p in r.props if _flat(p.name) not in skip),
            key=lambda p: (not p.required, _flat(p.name) not in _NAMING_FLAT, not p.enum),
        )
        for p in props[:MAX_FIELDS]:
            name = identifier(p.name, taken)
            fields[name] = Field(name, p.name, generator(p, r.noun), self._ref_of(p, r), p)
        self.entities[key] = Entity(
            key=key,
            noun=r.noun,
            label=label,
            prefix=id_prefix(r.noun, self.prefixes),
            fields=fields,
            parent=self.by_noun[parent.noun] if parent else None,
            parent_field=parent_field,
        )

    def _ref_of(self, p: Prop, r: Resource) -> str | None:
        """A property that holds another entity's id: ``customerId`` -> customers."""
        ws = words(p.name)
        if p.type != "string" or len(ws) < 2 or ws[-1] != "id":
            return None
        noun = "_".join(ws[:-1])
        if noun == r.noun or noun not in self.by_noun or self._reaches(noun, r.noun):
            return None  # no self-references, no cycles: rows are generated parents first
        self.links[r.noun].add(noun)
        return self.by_noun[noun]

    # -- tools -------------------------------------------------------------------------------

    def tools(self, r: Resource) -> None:
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
        by_flat = {_flat(f.api): n for n, f in entity.fields.items()}
        paging = Paging()
        shape = list_shape(op.response, self.doc.resolver) if op.response else None
        if shape is not None:
            paging.array_key, paging.next_key = shape.array_key, shape.next_key
        for p in op.params:
            if p.name in used or p.location != "query":
                continue
            flat = _flat(p.name)
            snake_name = "_".join(words(p.name))
            kind = _ptype(p.schema)
            if flat in by_flat and not p.required:
                fname = by_flat[flat]
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
                and (flat in LIMIT_PARAMS or snake_name in LIMIT_PARAMS)
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
                (kind == "integer" and (flat in OFFSET_PARAMS or snake_name in OFFSET_PARAMS))
                or (kind == "integer" and (flat in PAGE_PARAMS or snake_name in PAGE_PARAMS))
                or (kind == "string" and (flat in TOKEN_PARAMS or snake_name in TOKEN_PARAMS))
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
                    page = flat in PAGE_PARAMS or snake_name in PAGE_PARAMS
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
        by_flat = {_flat(f.api): n for n, f in entity.fields.items()}
        props: list[Prop] = scalar_props(op.body, self.doc.resolver) if op.body else []
        props += [
            q for p in op.params if (q := _query_prop(p)) is not None and p.location == "query"
        ]
        for p in props:
            flat = _flat(p.name)
            if p.name in used or flat not in by_flat or p.read_only:
                continue
            fname = by_flat[flat]
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
_NAMING_FLAT = frozenset("".join(n.split("_")) for n in NAMING)


def _plural_phrase(noun: str) -> str:
    parts = noun.split("_")
    return "_".join([*parts[:-1], plural(parts[-1])])


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
