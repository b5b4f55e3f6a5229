"""The world an API describes, as data: entities with generated fields and references, and
tools whose parameters keep the API's names. :mod:`envfactory.openapi.entities` chooses the
entities, :mod:`envfactory.openapi.tools` writes the tools."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from envfactory.openapi.names import plural, words
from envfactory.openapi.resources import Kind
from envfactory.openapi.schema import Prop

MAX_RESOURCES = 8
MAX_FIELDS = 10
ROW_BUDGET = 300  # rows a world aims at: small worlds compile and audit fast
TOP_COUNT = (16, 100)  # rows of a top-level entity: at least, at most
UNLISTED_COUNT = 150  # at most, for a top-level entity no list of the world shows
PER_PARENT = ((0, 3), (0, 2))  # rows per parent row: under a top-level row, deeper
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


NAMING_FLAT = frozenset("".join(n.split("_")) for n in NAMING)


def flat(name: str) -> str:
    return "".join(words(name))


# How a property holding a row's id ends.
REF_SUFFIXES = ("id", "code", "reference")


def original(name: str) -> bool:
    """Whether a property names the row an action acts on: ``originalReference``."""
    ws = words(name)
    return len(ws) >= 2 and ws[0] == "original" and ws[-1] in REF_SUFFIXES
