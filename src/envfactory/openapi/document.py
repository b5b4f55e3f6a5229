"""Reading OpenAPI 2 (Swagger) and 3 documents into one shape: a list of operations.

Parameters, request bodies and responses are normalised across versions (Swagger's ``body``
and ``formData`` parameters become a request body; ``definitions`` and ``components`` refs
resolve alike). Only local references (``#/...``) are followed: an external one is an
unsupported construct. A document that is not an API description at all is malformed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

METHODS = ("get", "put", "post", "delete", "patch")
MAX_BYTES = 64_000_000


class SpecError(Exception):
    """A document (or part of one) the importer skips; ``reason`` is ``malformed`` or
    ``unsupported_construct``."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


def malformed(message: str) -> SpecError:
    return SpecError("malformed", message)


def unsupported(message: str) -> SpecError:
    return SpecError("unsupported_construct", message)


@dataclass(frozen=True)
class Param:
    """An operation parameter (path, query or header), its schema resolved."""

    name: str
    location: str
    schema: dict[str, Any]
    required: bool
    description: str


@dataclass(frozen=True)
class Operation:
    """One method on one path, normalised across OpenAPI versions."""

    method: str
    path: str
    operation_id: str | None
    summary: str
    description: str
    params: tuple[Param, ...]
    body: dict[str, Any] | None  # the JSON (or form) request body schema
    response: dict[str, Any] | None  # the first 2xx JSON response schema
    deprecated: bool = False

    @property
    def doc(self) -> str:
        return (self.summary or self.description or "").strip()


@dataclass
class Document:
    """An API description: its title, version family and operations."""

    title: str
    description: str
    version: str  # "2.0", "3.0.x" or "3.1.x"
    operations: list[Operation]
    resolver: Resolver
    source: str = ""
    dropped: dict[str, int] = field(default_factory=dict)


class Resolver:
    """Follows local JSON references (``#/components/schemas/Pet``) in one document."""

    def __init__(self, root: Mapping[str, Any]) -> None:
        self.root = root

    def lookup(self, ref: str) -> Any:
        if not ref.startswith("#"):
            raise unsupported(f"external reference {ref!r}")
        node: Any = self.root
        for raw in ref[1:].split("/")[1:]:
            part = raw.replace("~1", "/").replace("~0", "~")
            if isinstance(node, Mapping) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                raise malformed(f"reference {ref!r} points at nothing")
        return node

    def deref(self, node: Any) -> Any:
        """The node a ``$ref`` chain ends at (the node itself when it is no reference)."""
        seen: set[str] = set()
        while isinstance(node, Mapping) and isinstance(node.get("$ref"), str):
            ref = node["$ref"]
            if ref in seen:
                raise malformed(f"reference {ref!r} refers to itself")
            seen.add(ref)
            node = self.lookup(ref)
        return node


def read_document(path: str | Path) -> dict[str, Any]:
    """A document's data from a JSON or YAML file."""
    path = Path(path)
    try:
        if path.stat().st_size > MAX_BYTES:
            raise unsupported(f"{path.name} is larger than {MAX_BYTES // 1_000_000} MB")
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise malformed(f"cannot read {path.name}: {exc}") from None
    return parse_text(text, path.name)


def parse_text(text: str, name: str = "<document>") -> dict[str, Any]:
    data: Any
    try:
        data = json.loads(text)
    except ValueError:
        try:
            data = yaml.load(text, Loader=_Loader)  # a safe loader (below)
        except yaml.YAMLError as exc:
            raise malformed(f"{name} is neither JSON nor YAML: {str(exc)[:200]}") from None
    except RecursionError:
        raise malformed(f"{name} nests too deeply") from None
    if not isinstance(data, dict):
        raise malformed(f"{name} does not hold a mapping")
    return data


class _Loader(yaml.SafeLoader):
    """YAML's safe loader, with dates left as text (APIs give examples like 2024-01-31)."""


_Loader.yaml_implicit_resolvers = {
    k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:timestamp"]
    for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def load_document(data: Mapping[str, Any], source: str = "") -> Document:
    """The operations of an OpenAPI 2 or 3 document."""
    if "swagger" in data:
        version = str(data["swagger"])
        if not version.startswith("2"):
            raise unsupported(f"Swagger {version} (only 2.0 and OpenAPI 3 are read)")
    elif "openapi" in data:
        version = str(data["openapi"])
        if not version.startswith("3"):
            raise unsupported(f"OpenAPI {version} (only 2.0 and 3.x are read)")
    else:
        raise malformed("not an OpenAPI document: no 'openapi' or 'swagger' version")
    paths = data.get("paths")
    if not isinstance(paths, Mapping):
        raise malformed("the document has no 'paths' mapping")
    info = data.get("info") if isinstance(data.get("info"), Mapping) else {}
    assert isinstance(info, Mapping)
    resolver = Resolver(data)
    swagger = version.startswith("2")
    ops: list[Operation] = []
    dropped: dict[str, int] = {}
    for path, item in paths.items():
        item = resolver.deref(item)
        if not isinstance(item, Mapping) or not isinstance(path, str):
            raise malformed(f"path {path!r} is not a mapping")
        shared = _params(item.get("parameters"), resolver)
        for method in METHODS:
            op = item.get(method)
            if op is None:
                continue
            if not isinstance(op, Mapping):
                raise malformed(f"{method.upper()} {path} is not a mapping")
            try:
                ops.append(_operation(method, path, op, shared, resolver, swagger))
            except SpecError as exc:
                if exc.reason == "malformed":
                    raise
                dropped[exc.message] = dropped.get(exc.message, 0) + 1
    return Document(
        title=str(info.get("title") or source or "API"),
        description=str(info.get("description") or ""),
        version=version,
        operations=ops,
        resolver=resolver,
        source=source,
        dropped=dropped,
    )


def _params(raw: Any, resolver: Resolver) -> dict[tuple[str, str], dict[str, Any]]:
    out: dict[tuple[str, str], dict[str, Any]] = {}
    if raw is None:
        return out
    if not isinstance(raw, list):
        raise malformed("'parameters' is not a list")
    for p in raw:
        p = resolver.deref(p)
        if not isinstance(p, Mapping) or not isinstance(p.get("name"), str) or "in" not in p:
            raise malformed(f"a parameter has no name or location: {str(p)[:80]}")
        out[(str(p["in"]), p["name"])] = dict(p)
    return out


def _operation(
    method: str,
    path: str,
    op: Mapping[str, Any],
    shared: dict[tuple[str, str], dict[str, Any]],
    resolver: Resolver,
    swagger: bool,
) -> Operation:
    raw = {**shared, **_params(op.get("parameters"), resolver)}
    params: list[Param] = []
    body: dict[str, Any] | None = None
    form: dict[str, Any] = {"type": "object", "properties": {}, "required": []}
    for (where, name), p in raw.items():
        if where == "body":
            body = _schema(p.get("schema"), resolver)
            continue
        schema = _schema(p.get("schema"), resolver) if "schema" in p else _inline(p)
        if where == "formData":
            form["properties"][name] = {**schema, "description": p.get("description", "")}
            if p.get("required"):
                form["required"].append(name)
            continue
        params.append(
            Param(
                name=name,
                location=where,
                schema=schema,
                required=bool(p.get("required")) or where == "path",
                description=str(p.get("description") or schema.get("description") or ""),
            )
        )
    if form["properties"] and body is None:
        body = form
    if not swagger and "requestBody" in op:
        rb = resolver.deref(op["requestBody"])
        if isinstance(rb, Mapping):
            body = _content_schema(rb.get("content"), resolver)
    return Operation(
        method=method,
        path=path,
        operation_id=str(op["operationId"]) if op.get("operationId") else None,
        summary=str(op.get("summary") or ""),
        description=str(op.get("description") or ""),
        params=tuple(params),
        body=body,
        response=_response(op.get("responses"), resolver, swagger),
        deprecated=bool(op.get("deprecated")),
    )


def _inline(p: Mapping[str, Any]) -> dict[str, Any]:
    """A Swagger 2 parameter's own type keywords as a schema."""
    keys = ("type", "format", "enum", "default", "minimum", "maximum", "maxLength", "minLength")
    return {k: p[k] for k in (*keys, "items", "example", "pattern") if k in p}


def _schema(node: Any, resolver: Resolver) -> dict[str, Any]:
    node = resolver.deref(node)
    return dict(node) if isinstance(node, Mapping) else {}


def _content_schema(content: Any, resolver: Resolver) -> dict[str, Any] | None:
    """The schema of a JSON (or else form) media type of a body or response."""
    if not isinstance(content, Mapping) or not content:
        return None
    keys = list(content)
    choice = None
    for kind in ("json", "form", "xml"):  # XML bodies (AWS query APIs) still carry a schema
        choice = choice or next((k for k in keys if kind in str(k)), None)
    if choice is None:
        return None
    media = content[choice]
    if not isinstance(media, Mapping) or "schema" not in media:
        return None
    return _schema(media["schema"], resolver)


def _response(responses: Any, resolver: Resolver, swagger: bool) -> dict[str, Any] | None:
    if not isinstance(responses, Mapping):
        return None
    for code in sorted(str(c) for c in responses):
        if not (code.startswith("2") or code.upper() == "2XX"):
            continue
        r = resolver.deref(responses.get(code, responses.get(int(code) if code.isdigit() else 0)))
        if not isinstance(r, Mapping):
            continue
        schema = _schema(r["schema"], resolver) if swagger and "schema" in r else None
        if not swagger:
            schema = _content_schema(r.get("content"), resolver)
        if schema:
            return schema
    return None
