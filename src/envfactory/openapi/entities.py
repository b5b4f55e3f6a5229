"""Which resources become entities, and their fields.

From the resource graph: the best-connected resources (with their ancestors) become
entities; their scalar properties become typed, generated fields; path nesting and
``<noun>Id`` properties become references; rows are sized so a world holds a few hundred.
"""

from __future__ import annotations

from envfactory.openapi.document import Document
from envfactory.openapi.fields import generator
from envfactory.openapi.model import (
    MAX_FIELDS,
    MAX_RESOURCES,
    NAMING_FLAT,
    PER_PARENT,
    REF_SUFFIXES,
    ROW_BUDGET,
    TOP_COUNT,
    Entity,
    Field,
    Model,
    NoWorld,
    Tool,
    flat,
    original,
)
from envfactory.openapi.names import human, id_prefix, identifier, plural, words
from envfactory.openapi.resources import Graph, Resource
from envfactory.openapi.schema import Prop, scalar_props
from envfactory.openapi.tools import ToolBuilder


def _id_like(res: Resource) -> set[str]:
    noun = "".join(res.noun.split("_"))
    out = {"id", noun + "ids", *(noun + s for s in REF_SUFFIXES)}
    out |= {flat(e.id_param) for e in res.endpoints.values() if e.id_param}
    return out


def _parent_like(res: Resource, parent: Resource | None) -> set[str]:
    if parent is None:
        return set()
    out = {"".join(parent.noun.split("_")) + "id"}
    out |= {flat(e.parent_param) for e in res.endpoints.values() if e.parent_param}
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
        own = [p for p in r.props if flat(p.name) not in _id_like(r)]
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
    """The world model of a document, or :class:`NoWorld` when no task could be made of it."""
    picked = _select(graph)
    if not picked and doc.dropped:
        raise NoWorld("unsupported_construct", "; ".join(sorted(doc.dropped))[:400])
    if not picked:
        raise NoWorld("no_resources", _nothing_modelled(graph))
    builder = _EntityBuilder(graph, _origin(picked, doc))
    builder.name_entities(picked)
    for r in picked:
        builder.entity(r)
    entities = builder.entities
    tools = ToolBuilder(doc, world, entities, builder.by_noun)
    for r in picked:
        tools.add(r)
    _size(entities)
    _check_tasks_possible(entities)
    return Model(
        entities=entities,
        constants=tools.constants,
        title=doc.title,
        description=doc.description,
        operations=graph.operations,
        skipped=dict(graph.skipped),
    )


# Why operations were left out, as a user reads it.
_SKIPPED = {
    "custom action or singleton": "custom actions or singletons",
    "no id parameter": "reads or writes of one row with no parameter naming the row",
    "composite path segment": "paths with a segment like {from}-{to}",
}


def _nothing_modelled(graph: Graph) -> str:
    """Why no resource was found, in words a user can act on."""
    if not graph.operations:
        return "the document declares no operations (only webhooks or schemas): nothing to call"
    why = ", ".join(f"{n} {_SKIPPED.get(k, k)}" for k, n in graph.skipped.most_common())
    return (
        f"none of its {graph.operations} operations reads or writes rows of a collection "
        f"({why or 'rows without fields'}); a world needs a list, get, create, update or "
        "delete on a resource with fields"
    )


def _calls(tools: list[Tool]) -> str:
    shown = ", ".join(f"{t.method} {t.path}" for t in tools[:3])
    return shown + (f" and {len(tools) - 3} more" if len(tools) > 3 else "")


def _check_tasks_possible(entities: dict[str, Entity]) -> None:
    """Refuse, with the reason, a world whose tasks could not differ or not be held out:
    reads only through one operation (every task the same call), or writes that only create
    unlinked rows and nothing to read (held-out tasks must change, link to or ask about rows
    that exist)."""
    tools = [t for e in entities.values() for t in e.tools.values()]
    writes = [t for t in tools if t.kind in ("create", "update", "delete")]
    if not writes and len(tools) < 2:
        raise NoWorld(
            "no_writable_resource",
            f"reads only, through one operation ({_calls(tools)}): every task would be the "
            "same call; a world needs a write operation or a second read",
        )
    linked = any(
        t.parent_param or any(entities[t.entity].fields[f].ref for f in t.fields.values())
        for t in writes
    )
    if (
        writes
        and len(writes) == len(tools)
        and not linked
        and all(t.kind == "create" for t in writes)
    ):
        raise NoWorld(
            "no_tasks",
            f"its only operations create new, unlinked rows ({_calls(writes)}): validation "
            "and test tasks must change, link to or ask about rows that exist, and none can; "
            "a get, list, update or delete of those rows would give them tasks",
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


def _origin(picked: list[Resource], doc: Document) -> str | None:
    """The resource whose rows ``original...`` properties name, when actions on rows are
    modelled as creates (Adyen's ``/capture`` and ``/refund`` take the ``originalReference``
    of a payment made by ``/authorise``): a resource created with no ``original...`` of its
    own whose create answers with a reference (``pspReference``); the shortest noun of those
    when several (``authorise`` before ``authorise3d``)."""
    if not any(original(p.name) for r in picked for p in r.props):
        return None
    found = []
    for r in picked:
        create = r.endpoints.get("create")
        if create is None or create.op.response is None or any(original(p.name) for p in r.props):
            continue
        answer = scalar_props(create.op.response, doc.resolver)
        if any(words(p.name)[-1:] == ["reference"] for p in answer):
            found.append(r.noun)
    return min(found, key=lambda n: (len(n), n)) if found else None


class _EntityBuilder:
    """Entities from resources: names first (references may point forward), then fields."""

    def __init__(self, graph: Graph, origin: str | None = None) -> None:
        self.graph = graph
        self.origin = origin
        self.entities: dict[str, Entity] = {}
        self.by_noun: dict[str, str] = {}
        self.tables: set[str] = set()
        self.prefixes: set[str] = set()
        self.links: dict[str, set[str | None]] = {}

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
            parent_field = identifier(api if flat(api) != "parent" else f"{parent.noun}_id", taken)
            fields[parent_field] = Field(parent_field, api, {}, ref=self.by_noun[parent.noun])
        props = sorted(
            (p for p in r.props if flat(p.name) not in skip),
            key=lambda p: (not p.required, flat(p.name) not in NAMING_FLAT, not p.enum),
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
        """A property that holds another entity's id: ``customerId`` -> customers,
        ``recurringDetailReference`` -> recurring details, ``originalReference`` -> the
        origin (see :func:`_origin`)."""
        ws = words(p.name)
        if p.type != "string" or len(ws) < 2 or ws[-1] not in REF_SUFFIXES:
            return None
        noun = self.origin if original(p.name) and self.origin else "_".join(ws[:-1])
        if noun == r.noun or noun not in self.by_noun or self._reaches(noun, r.noun):
            return None  # no self-references, no cycles: rows are generated parents first
        self.links[r.noun].add(noun)
        return self.by_noun[noun]


def _plural_phrase(noun: str) -> str:
    parts = noun.split("_")
    return "_".join([*parts[:-1], plural(parts[-1])])
