"""What a tool call gives back: a result, or a structured error the agent can act on."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel

ErrorCode = Literal[
    "malformed_action",
    "unknown_tool",
    "invalid_arguments",
    "not_found",
    "precondition_failed",
    "rule_violation",
    "tool_failed",
    "transient_error",
    "rate_limited",
    "timeout",
    "malformed_response",
    "episode_over",
]


class ToolError(BaseModel):
    """A structured error observation. It names what was wrong, never a hidden value."""

    code: ErrorCode
    message: str
    tool: str | None = None
    field: str | None = None
    rule: str | None = None
    retry_after: float | None = None


@dataclass(slots=True)
class ToolResult:
    """The outcome of one call: ``data`` when it worked, ``error`` when it did not, and the
    arguments as sent when they could be read as an object (None otherwise)."""

    data: Any = None
    error: ToolError | None = None
    wrote: bool = False
    arguments: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


class ToolFailure(Exception):
    """Raised inside a tool (or a Python handler) to answer with a structured error."""

    def __init__(
        self, code: ErrorCode, message: str, *, field: str | None = None, rule: str | None = None
    ) -> None:
        super().__init__(message)
        self.code: ErrorCode = code
        self.message = message
        self.field = field
        self.rule = rule
