"""Resources from operations: which operation lists, gets, creates, updates or deletes what.

Three readings of an operation, tried in turn:

- **dotted ids** (Google's discovery style, ``run.projects.services.get``): the verb is the
  last part, the resource the one before it, its parent the one before that;
- **REST paths**: ``GET /users/{userId}/orders`` lists the orders of a user, ``DELETE
  /orders/{orderId}`` deletes one; nesting gives the parent;
- **RPC names** (AWS's ``POST /`` with ``CreateIdentityPool``): the verb and the noun come
  from the operation id, the row's id from a parameter named after the noun.

Operations that fit none (custom actions like ``/orders/{id}/cancel``, singletons, bulk
writes) are counted and left out of the world.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal

from envfactory.openapi.document import Document, Operation, Resolver
from envfactory.openapi.names import singular, words
from envfactory.openapi.schema import Prop, list_shape, object_schema, scalar_props

Kind = Literal["list", "get", "create", "update", "delete"]
KINDS: tuple[Kind, ...] = ("list", "get", "create", "update", "delete")

VERB_KIND: dict[str, Kind] = {
    **dict.fromkeys(["list", "search", "find", "query", "browse", "enumerate", "all"], "list"),
    **dict.fromkeys(
        ["get", "describe", "read", "retrieve", "fetch", "show", "view", "lookup", "load"], "get"
    ),
    **dict.fromkeys(
        ["create", "add", "new", "insert", "post", "register", "make", "send", "submit"], "create"
    ),
    **dict.fromkeys(
        ["update", "patch", "modify", "edit", "put", "set", "replace", "change", "save"], "update"
    ),
    **dict.fromkeys(["delete", "remove", "destroy", "del", "erase", "purge"], "delete"),
}
# Path words that name an action, not a collection (``/checkNameAvailability``, ``/cancel``).
_ACTION_WORDS_WORDS = """
    activate approve archive assign cancel check close confirm copy deactivate disable enable
    execute export import invite lock login logout move publish reject reset resend restart
    restore resume retry revoke rotate run send start stop suspend sync test trigger unlock
    unpublish validate verify batch bulk count regenerate generate renew refresh upgrade
    migrate purchase failover apply calculate compute convert estimate predict preview scan
    transfer translate analyze analyse detect evaluate query search lookup fetch notify
"""
ACTION_WORDS = frozenset(_ACTION_WORDS_WORDS.split())
_VERSION = re.compile(r"^(v\d+(\.\d+)*(beta\d*|alpha\d*)?|\d{4}-\d{2}-\d{2}|api|rest)$", re.I)
# How a parameter that holds a row's id ends: ``QueueId``, ``vaultName``, ``DBClusterIdentifier``,
# ``accountHolderCode``, ``recurringDetailReference``.
ID_SUFFIXES = ("id", "identifier", "name", "arn", "key", "code", "reference")
_METHOD_PREFIX = re.compile(r"^(GET|POST|PUT|PATCH|DELETE)_(?=[A-Z])")
# A lowercase method before a verb (Adyen's ``post-createAccountHolder``).
_METHOD_WORD = re.compile(r"^(get|post|put|patch|delete)[-_](?=[a-z]+)")
_PARAM = re.compile(r"^\{\+?([^{}]+)\}(\.[A-Za-z{}_]+)?$")


@dataclass
class Endpoint:
    """An operation read as one of the five things a resource supports."""

    op: Operation
    kind: Kind
    noun: str  # the resource, a singular snake_case noun
    id_param: str | None = None  # get/update/delete: the parameter naming the row
    parent_noun: str | None = None
    parent_param: str | None = None  # the parameter naming the parent row


@dataclass
class Resource:
    """A kind of row, the endpoints on it, its parent, and its fields."""

    noun: str
    endpoints: dict[Kind, Endpoint] = field(default_factory=dict)
    parent: str | None = None
    props: list[Prop] = field(default_factory=list)


@dataclass
class Graph:
    """The resources of a document, and what was left out and why."""

    resources: dict[str, Resource]
    skipped: Counter[str]
    operations: int


def _segments(path: str) -> list[tuple[str, str]] | None:
    """A path as (kind, text) segments: ("lit", "users"), ("param", "userId"); None when a
    segment mixes literals and parameters (``/{from}-{to}``)."""
    path = path.split("#")[0].split("?")[0]
    out: list[tuple[str, str]] = []
    for raw in path.split("/"):
        if not raw:
            continue
        m = _PARAM.match(raw)
        if m:
            out.append(("param", m.group(1)))
        elif "{" in raw or "}" in raw:
            if re.fullmatch(r"[A-Za-z0-9_-]+\.\{[^{}]+\}", raw) or raw.endswith((".json",)):
                out.append(("lit", raw.split(".")[0]))
            else:
                return None
        else:
            out.append(("lit", raw.split(".")[0] if raw.endswith(".json") else raw))
    return out


def _verb(name: str) -> tuple[Kind | None, list[str]]:
    """The kind an operation id's verb names, and the noun words after it:
    ``ListIdentityPools`` -> ("list", ["identity", "pools"]); Azure's ``Widgets_Get`` ->
    ("get", ["widgets"]); AWS query style's ``POST_CreateDBInstance`` -> ("create", ...)."""
    name = _METHOD_PREFIX.sub("", name)
    bare = _METHOD_WORD.sub("", name)
    if bare != name and (_action(words(bare)) or words(bare)[0] in VERB_KIND):
        name = bare  # ``post-closeAccount``: an action, not a create
    if "_" in name and not name.islower() and name.count("_") == 1:
        noun, _, verb = name.partition("_")
        ws = words(verb)
        kind = VERB_KIND.get(ws[0]) if ws else None
        if ws[:3] == ["create", "or", "update"]:
            kind = "update"
        return kind, words(noun)
    ws = words(name)
    if not ws:
        return None, []
    kind = VERB_KIND.get(ws[0])
    rest = ws[1:]
    for stop in ("by", "for", "from", "in", "with", "of", "using", "to"):
        if stop in rest and rest.index(stop) > 0:
            rest = rest[: rest.index(stop)]
    if kind == "get" and rest and rest[0] == "all":
        kind, rest = "list", rest[1:]
    if rest and rest[-1] in ("list", "collection"):
        kind, rest = "list", rest[:-1]
    return kind, rest


def _action(ws: list[str]) -> bool:
    """Whether words start with an action: ``cancel``, ``unSuspend``."""
    return bool(ws) and (ws[0] in ACTION_WORDS or (ws[0] == "un" and _action(ws[1:])))


def _noun(ws: list[str]) -> str:
    return "_".join([*ws[:-1], singular(ws[-1])]) if ws else ""


def _is_plural(ws: list[str]) -> bool:
    return bool(ws) and singular(ws[-1]) != ws[-1]


def _dotted(op: Operation) -> Endpoint | None:
    """Google-style ``service.parents.resources.verb`` operation ids."""
    parts = (op.operation_id or "").split(".")
    if len(parts) < 3:
        return None
    kind = VERB_KIND.get(words(parts[-1])[0] if words(parts[-1]) else "")
    if kind is None or words(parts[-1]) != [words(parts[-1])[0]]:
        return None
    params = [p.name for p in op.params if p.location == "path"]
    noun = _noun(words(parts[-2]))
    parent = _noun(words(parts[-3])) if len(parts) >= 4 else None
    ep = Endpoint(op, kind, noun)
    if kind in ("get", "update", "delete"):
        if not params:
            return None
        ep.id_param = params[-1]
    elif params:
        ep.parent_noun, ep.parent_param = parent, params[-1]
    return ep


def _rest(op: Operation, segs: list[tuple[str, str]], resolver: Resolver) -> Endpoint | None:
    lits = [i for i, (k, _) in enumerate(segs) if k == "lit" and not _VERSION.match(segs[i][1])]
    if not lits:
        return None
    last = lits[-1]
    if ":" in segs[last][1]:
        return None
    noun_words = words(segs[last][1])
    if not noun_words or _action(noun_words) or noun_words[-1] in ACTION_WORDS:
        return None
    if noun_words[0] in VERB_KIND:
        return None
    noun = _noun(noun_words)
    item = last == len(segs) - 2 and segs[-1][0] == "param"
    if last != len(segs) - 1 and not item:
        return None
    parent_noun = parent_param = None
    nested = last >= 2 and segs[last - 1][0] == "param" and segs[last - 2][0] == "lit"
    if nested and not _VERSION.match(segs[last - 2][1]):
        parent_noun, parent_param = _noun(words(segs[last - 2][1])), segs[last - 1][1]
    opkind, _ = _verb(op.operation_id or "")
    kind: Kind | None
    if item:
        kind = {"get": "get", "put": "update", "patch": "update", "delete": "delete"}.get(op.method)  # type: ignore[assignment]
        if op.method == "post" and opkind == "update":
            kind = "update"
        if kind is None:
            return None
        return Endpoint(op, kind, noun, segs[-1][1], parent_noun, parent_param)
    if op.method == "get":
        shaped = op.response is not None and list_shape(op.response, resolver) is not None
        if not (shaped or opkind == "list" or (op.response is None and _is_plural(noun_words))):
            return None
        kind = "list"
    elif op.method == "post":
        if opkind == "list":
            kind = "list"
        elif op.body is not None and opkind in (None, "create"):
            kind = "create"
        else:
            return None
    else:
        return None
    return Endpoint(op, kind, noun, None, parent_noun, parent_param)


def _rpc(op: Operation, segs: list[tuple[str, str]]) -> Endpoint | None:
    """Operation ids like ``DescribeIdentityPool`` on a path with no parameters."""
    if any(k == "param" for k, _ in segs):
        return None
    names = [op.operation_id or ""] + [s for k, s in segs[-1:] if k == "lit"]
    for name in names:
        kind, rest = _verb(name)
        if kind is None or not rest:
            continue
        noun = _noun(rest)
        if kind == "get" and _is_plural(rest):
            kind = "list"
        return Endpoint(op, kind, noun)
    return None


def classify(op: Operation, resolver: Resolver) -> Endpoint | str:
    """An operation's reading, or why it has none."""
    if op.deprecated:
        return "deprecated"
    ep = _dotted(op)
    if ep is not None:
        return ep
    segs = _segments(op.path)
    if segs is None:
        return "composite path segment"
    ep = _rest(op, segs, resolver) or _rpc(op, segs)
    if ep is None:
        return "custom action or singleton"
    return ep


def _all_params(op: Operation, doc: Document) -> list[str]:
    names = [p.name for p in op.params]
    if op.body is not None:
        names += [p.name for p in scalar_props(op.body, doc.resolver)]
    return names


def _id_param(ep: Endpoint, doc: Document, nouns: set[str]) -> str | None:
    """The parameter of an RPC get/update/delete that names the row: ``IdentityPoolId``; else
    ``id`` or ``name``; else one named after the noun's first or last word when no resource is
    called that (``notificationId`` of a notification configuration, but not ``CertificateArn``
    of certificate options when certificates exist)."""
    parts = ep.noun.split("_")
    partial = [w for w in dict.fromkeys([parts[0], parts[-1]]) if len(parts) > 1 and w not in nouns]
    found: dict[int, str] = {}
    for name in _all_params(ep.op, doc):
        flat = "".join(words(name))
        if flat in ("id", "name"):
            found.setdefault(1, name)
        for rank, stem in enumerate(["".join(parts), "", *partial]):
            if stem and flat in [stem + suffix for suffix in ID_SUFFIXES]:
                found.setdefault(rank, name)
    return found[min(found)] if found else None


def build_graph(doc: Document) -> Graph:
    """Resources of a document: endpoints grouped by noun, parents linked, fields merged."""
    resolver = doc.resolver
    skipped: Counter[str] = Counter()
    eps: list[Endpoint] = []
    for op in doc.operations:
        got = classify(op, resolver)
        if isinstance(got, str):
            skipped[got] += 1
        else:
            eps.append(got)
    nouns = {e.noun for e in eps}
    for e in [e for e in eps if e.kind in ("get", "update", "delete") and e.id_param is None]:
        e.id_param = _id_param(e, doc, nouns)
        if e.id_param is None:
            skipped["no id parameter"] += 1
            eps.remove(e)
    nouns = {e.noun for e in eps}
    by_noun: dict[str, list[Endpoint]] = {}
    for e in eps:
        if e.parent_noun not in nouns:
            e.parent_noun = None
        by_noun.setdefault(e.noun, []).append(e)
    resources: dict[str, Resource] = {}
    for noun, group in by_noun.items():
        parents = Counter(e.parent_noun for e in group if e.parent_noun and e.parent_noun != noun)
        parent = parents.most_common(1)[0][0] if parents else None
        res = Resource(noun, parent=parent)
        for e in sorted(group, key=lambda e: _rank(e, parent)):
            if e.parent_noun not in (None, parent) or e.parent_noun == noun:
                skipped["conflicting nesting"] += 1
                continue
            if e.kind in res.endpoints:
                skipped["duplicate of another operation"] += 1
                continue
            res.endpoints[e.kind] = e
        res.props = _props(res, resolver)
        resources[noun] = res
    _link_parents(resources, doc)
    return Graph(resources, skipped, len(doc.operations))


def _rank(e: Endpoint, parent: str | None) -> tuple[int, int, int]:
    required = sum(1 for p in e.op.params if p.required and p.location in ("path", "query"))
    return (0 if e.parent_noun == parent else 1, required, len(e.op.path))


def _props(res: Resource, resolver: Resolver) -> list[Prop]:
    """A resource's fields: its get response first, then list rows, then request bodies."""
    seen: dict[str, Prop] = {}
    schemas: list[tuple[Any, bool]] = []
    for kind in ("get", "list", "create", "update"):
        ep = res.endpoints.get(kind)
        if ep is None:
            continue
        op = ep.op
        if kind == "get" and op.response is not None:
            schemas.append((object_schema(op.response, resolver), False))
        elif kind == "list" and op.response is not None:
            shape = list_shape(op.response, resolver)
            schemas.append((shape.items if shape else None, False))
        elif op.body is not None:
            schemas.append((op.body, kind == "create"))
    for schema, is_create in schemas:
        if not schema:
            continue
        for p in scalar_props(schema, resolver):
            key = p.name.lower()
            if key not in seen:
                seen[key] = p
            elif is_create and p.required and not seen[key].required:
                seen[key] = Prop(**{**seen[key].__dict__, "required": True})
    return list(seen.values())


def _link_parents(resources: dict[str, Resource], doc: Document) -> None:
    """A list or create that requires another resource's id (``ListUsers(UserPoolId)``,
    ``/{tenant}/{restaurantId}/claims``) makes that resource the parent; then every endpoint
    of a nested resource that takes the parent's id names its parameter."""
    keys = {"".join(n.split("_")) + suffix: n for n in resources for suffix in ID_SUFFIXES}
    for res in resources.values():
        if res.parent is not None:
            continue
        for kind in ("list", "create"):
            ep = res.endpoints.get(kind)
            if ep is None or ep.parent_param is not None:
                continue
            for name in _required(ep.op, doc):
                parent = keys.get("".join(words(name)))
                if parent and parent != res.noun:
                    ep.parent_noun, ep.parent_param = parent, name
                    res.parent = parent
                    break
    for res in resources.values():
        if res.parent is None:
            continue
        want = {"".join(res.parent.split("_")) + suffix for suffix in ID_SUFFIXES}
        for ep in res.endpoints.values():
            if ep.parent_param is None:
                found = [n for n in _required(ep.op, doc) if "".join(words(n)) in want]
                if found and found[0] != ep.id_param:
                    ep.parent_noun, ep.parent_param = res.parent, found[0]


def _required(op: Operation, doc: Document) -> list[str]:
    names = [p.name for p in op.params if p.required]
    if op.body is not None:
        names += [p.name for p in scalar_props(op.body, doc.resolver) if p.required]
    return names
