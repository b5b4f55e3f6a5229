"""JSON Schemas as flat lists of typed fields.

A resource's schema becomes scalar fields: ``$ref`` followed, ``allOf`` merged, the variants
of ``oneOf``/``anyOf`` merged as optional fields, and nested objects flattened one level
(Azure's ``properties.provisioningState`` becomes ``provisioningState``). Arrays and maps are
left out: a world row holds scalars.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from envfactory.openapi.document import Resolver

SCALARS = ("string", "integer", "number", "boolean")
ARRAY_KEYS = ("items", "data", "value", "values", "results", "records", "entries", "list")
NEXT_KEYS = (
    "nextpagetoken",
    "nexttoken",
    "next_page_token",
    "nextlink",
    "@odata.nextlink",
    "next",
    "next_cursor",
    "nextcursor",
    "cursor",
    "continuationtoken",
    "marker",
    "nextmarker",
)
MAX_DEPTH = 6


@dataclass(frozen=True)
class Prop:
    """A scalar property of a schema (possibly from a nested object)."""

    name: str
    type: str
    format: str | None = None
    enum: tuple[Any, ...] | None = None
    required: bool = False
    read_only: bool = False
    description: str = ""
    example: Any = None
    default: Any = None
    minimum: float | None = None
    maximum: float | None = None
    min_length: int | None = None
    max_length: int | None = None
    nested: bool = False


def merged(node: Any, resolver: Resolver, depth: int = 0) -> dict[str, Any]:
    """A schema with its references followed and its ``allOf`` / ``oneOf`` / ``anyOf`` parts
    folded into one object schema (variants' properties are optional)."""
    node = resolver.deref(node)
    if not isinstance(node, Mapping) or depth > MAX_DEPTH:
        return {}
    out = {k: v for k, v in node.items() if k not in ("allOf", "oneOf", "anyOf")}
    props: dict[str, Any] = dict(out.get("properties") or {})
    required: list[str] = (
        list(out.get("required") or []) if isinstance(out.get("required"), list) else []
    )
    for key in ("allOf", "oneOf", "anyOf"):
        parts = node.get(key)
        if not isinstance(parts, list):
            continue
        for part in parts:
            sub = merged(part, resolver, depth + 1)
            for name, p in (sub.get("properties") or {}).items():
                props.setdefault(name, p)
            if key == "allOf":
                required += [r for r in sub.get("required") or [] if isinstance(r, str)]
                for k, v in sub.items():
                    if k not in ("properties", "required"):
                        out.setdefault(k, v)
            elif not props and sub.get("type") in SCALARS:
                out.setdefault("type", sub["type"])
    if props:
        out["properties"] = props
        out.setdefault("type", "object")
    out["required"] = required
    return out


def scalar_type(schema: Mapping[str, Any]) -> str | None:
    """The scalar type of a schema, or None for objects, arrays and the untyped."""
    t = schema.get("type")
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), None)
    if t in SCALARS:
        return str(t)
    if t is None and isinstance(schema.get("enum"), list) and schema["enum"]:
        first = schema["enum"][0]
        if isinstance(first, bool):
            return "boolean"
        if isinstance(first, int):
            return "integer"
        if isinstance(first, float):
            return "number"
        return "string"
    return None


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _int(v: Any) -> int | None:
    return int(v) if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else None


def prop(name: str, schema: Mapping[str, Any], required: bool, nested: bool = False) -> Prop | None:
    """A scalar property from its (resolved) schema, or None when it is not a scalar."""
    kind = scalar_type(schema)
    if kind is None:
        return None
    enum = schema.get("enum")
    values = tuple(v for v in enum if v is not None) if isinstance(enum, list) else None
    if values is not None and (
        not values or not all(isinstance(v, (str, int, float, bool)) for v in values)
    ):
        values = None
    example = schema.get("example")
    if example is None and isinstance(schema.get("examples"), list) and schema["examples"]:
        example = schema["examples"][0]
    fmt = schema.get("format")
    return Prop(
        name=name,
        type=kind,
        format=str(fmt) if isinstance(fmt, str) else None,
        enum=values,
        required=required,
        read_only=bool(schema.get("readOnly")),
        description=str(schema.get("description") or schema.get("title") or "").strip(),
        example=example if isinstance(example, (str, int, float, bool)) else None,
        default=schema.get("default")
        if isinstance(schema.get("default"), (str, int, float, bool))
        else None,
        minimum=_num(schema.get("minimum")),
        maximum=_num(schema.get("maximum")),
        min_length=_int(schema.get("minLength")),
        max_length=_int(schema.get("maxLength")),
        nested=nested,
    )


def scalar_props(node: Any, resolver: Resolver) -> list[Prop]:
    """The scalar fields of an object schema; a nested object's scalars are flattened in
    (its own name is dropped, or kept as a prefix when two would clash)."""
    schema = merged(node, resolver)
    required = set(schema.get("required") or [])
    out: dict[str, Prop] = {}
    nested: list[tuple[str, Prop]] = []
    for name, raw in (schema.get("properties") or {}).items():
        if not isinstance(name, str):
            continue
        sub = merged(raw, resolver, 1)
        p = prop(name, sub, name in required)
        if p is not None:
            out.setdefault(name.lower(), p)
            continue
        if sub.get("type") == "object" and sub.get("properties"):
            inner_required = set(sub.get("required") or [])
            for inner, raw_inner in sub["properties"].items():
                if not isinstance(inner, str):
                    continue
                q = prop(inner, merged(raw_inner, resolver, 2), False, nested=True)
                if q is not None:
                    req = name in required and inner in inner_required
                    nested.append((name, Prop(**{**q.__dict__, "required": req})))
    for outer, q in nested:
        key = q.name.lower()
        if key in out:
            flat = f"{outer}_{q.name}"
            q = Prop(**{**q.__dict__, "name": flat})
            key = flat.lower()
        out.setdefault(key, q)
    return list(out.values())


@dataclass(frozen=True)
class ListShape:
    """How a list response carries its rows: a bare array, or an object with an array
    property (and maybe a next-page property)."""

    items: dict[str, Any]
    array_key: str | None
    next_key: str | None


def list_shape(node: Any, resolver: Resolver) -> ListShape | None:
    """The row schema of a list response, or None if the response holds no list of
    objects."""
    schema = merged(node, resolver)
    if schema.get("type") == "array" or ("items" in schema and "properties" not in schema):
        items = merged(schema.get("items"), resolver, 1)
        return ListShape(items, None, None) if items.get("properties") else None
    props = schema.get("properties") or {}
    arrays = []
    for key, raw in props.items():
        sub = merged(raw, resolver, 1)
        if sub.get("type") == "array" or "items" in sub:
            items = merged(sub.get("items"), resolver, 2)
            if items.get("properties"):
                arrays.append((key, items))
    if not arrays:
        return None
    preferred = [a for a in arrays if str(a[0]).lower() in ARRAY_KEYS]
    key, items = (preferred or arrays)[0]
    next_key = next((str(k) for k in props if str(k).lower() in NEXT_KEYS), None)
    return ListShape(items, str(key), next_key)


def object_schema(node: Any, resolver: Resolver) -> dict[str, Any] | None:
    """The schema when it describes one object with properties."""
    schema = merged(node, resolver)
    return schema if schema.get("properties") else None
