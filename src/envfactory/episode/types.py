"""The wire types of an episode: actions in, observations out, and the record of calls."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from envfactory.tools.result import ToolError

EpisodeStatus = Literal["completed", "truncated", "timeout", "env_error", "infra_error"]
STATUSES: tuple[EpisodeStatus, ...] = (
    "completed",
    "truncated",
    "timeout",
    "env_error",
    "infra_error",
)


class ToolCall(BaseModel):
    """Call a tool. ``arguments`` may be a dict or the JSON text a model produced."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["tool_call"] = "tool_call"
    tool: str = Field(max_length=200)
    arguments: dict[str, Any] | str = Field(default_factory=dict)
    actor: str = "agent"
    call_id: str | None = None


class Message(BaseModel):
    """Say something to the user; ``final`` ends the episode (the reply or answer)."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["message"] = "message"
    content: str
    final: bool = True
    actor: str = "agent"


Action = Annotated[ToolCall | Message, Field(discriminator="type")]
_ACTION: TypeAdapter[ToolCall | Message] = TypeAdapter(Action)


def parse_action(raw: Any) -> ToolCall | Message | ToolError:
    """An action from an object, a dict or JSON text; a :class:`ToolError` when malformed."""
    if isinstance(raw, (ToolCall, Message)):
        return raw
    if isinstance(raw, (str, bytes)):
        try:
            raw = json.loads(raw)
        except (ValueError, RecursionError):
            return ToolError(code="malformed_action", message="the action is not valid JSON")
    if not isinstance(raw, dict):
        return ToolError(
            code="malformed_action",
            message="an action is an object with type 'tool_call' (tool, arguments) "
            "or 'message' (content, final)",
        )
    try:
        return _ACTION.validate_python(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "action"
        return ToolError(code="malformed_action", message=f"{where}: {first.get('msg')}")


ObservationKind = Literal["task", "tool_result", "tool_error", "user", "end"]


class Observation(BaseModel):
    """What the actor sees after a reset or a step."""

    kind: ObservationKind
    content: str = Field(description="the text a model reads")
    data: Any = None
    error: ToolError | None = None
    done: bool = False
    reward: float | None = Field(None, description="a step reward, when one is configured")
    actor: str = "agent"


@dataclass(slots=True)
class CallRecord:
    """One tool call as the verifier sees it."""

    tool: str
    arguments: dict[str, Any]
    ok: bool
    error: str | None
    wrote: bool
