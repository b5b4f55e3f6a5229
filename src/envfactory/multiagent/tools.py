"""The tools of a seat: JSON Schema declarations in OpenAI and MCP form, and argument checks.

Multi-agent worlds declare a handful of small tools per seat (``drop``, ``propose``,
``send_message``, ...). Arguments are checked against the declaration before a world sees
them; a bad argument is a structured ``invalid_arguments`` error, never an exception.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from envfactory.contract.results import ToolFailure
from envfactory.tools.params import parse_arguments

Format = Literal["openai", "mcp"]


@dataclass(frozen=True)
class SeatTool:
    """A tool: its name, what it does, and its parameters (JSON Schema properties)."""

    name: str
    description: str
    properties: dict[str, dict[str, Any]] = field(default_factory=dict)
    required: tuple[str, ...] = ()
    read_only: bool = False

    def schema(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": self.properties,
            "required": list(self.required),
            "additionalProperties": False,
        }

    def spec(self, fmt: Format) -> dict[str, Any]:
        if fmt == "mcp":
            return {
                "name": self.name,
                "description": self.description,
                "inputSchema": self.schema(),
                "annotations": {"readOnlyHint": self.read_only},
            }
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.schema(),
            },
        }

    def check(self, raw: Any) -> dict[str, Any]:
        """The arguments as a dict, checked; raises :class:`ToolFailure` when they are wrong."""
        args = parse_arguments(raw)
        for name in self.required:
            if name not in args:
                raise ToolFailure(
                    "invalid_arguments", f"{self.name}: {name} is required", field=name
                )
        for name, value in args.items():
            prop = self.properties.get(name)
            if prop is None:
                raise ToolFailure(
                    "invalid_arguments", f"{self.name}: unknown argument {name[:40]!r}", field=name
                )
            problem = _problem(prop, value)
            if problem:
                raise ToolFailure("invalid_arguments", f"{self.name}: {name} {problem}", field=name)
        return args


def _problem(prop: dict[str, Any], value: Any) -> str | None:
    kind = prop.get("type")
    if kind == "integer":
        if isinstance(value, bool) or not isinstance(value, int):
            return "must be an integer"
        if "minimum" in prop and value < prop["minimum"]:
            return f"must be at least {prop['minimum']}"
        if "maximum" in prop and value > prop["maximum"]:
            return f"must be at most {prop['maximum']}"
    elif kind == "string":
        if not isinstance(value, str):
            return "must be a string"
        if len(value) > prop.get("maxLength", 4000):
            return "is too long"
    elif kind == "array":
        if not isinstance(value, list):
            return "must be an array"
        if len(value) > prop.get("maxItems", 64):
            return "has too many items"
        inner = prop.get("items")
        if isinstance(inner, dict):
            for item in value:
                if problem := _problem(inner, item):
                    return f"item {problem}"
    elif kind == "object":
        if not isinstance(value, dict):
            return "must be an object"
        extra = prop.get("additionalProperties")
        if isinstance(extra, dict):
            for item in value.values():
                if problem := _problem(extra, item):
                    return f"value {problem}"
    if "enum" in prop and value not in prop["enum"]:
        return f"must be one of {', '.join(map(str, prop['enum']))}"
    return None


def message_tool(recipients: list[str]) -> SeatTool:
    """``send_message``: a message to another seat, delivered by the environment."""
    return SeatTool(
        name="send_message",
        description="Send a message to another agent. The environment delivers it; the "
        "recipient reads it at its next turn.",
        properties={
            "to": {"type": "string", "enum": recipients, "description": "The recipient."},
            "content": {"type": "string", "maxLength": 4000, "description": "What to say."},
        },
        required=("to", "content"),
        read_only=True,
    )
