"""The wire types of an episode: actions in, observations out, and the record of calls."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from envfactory.contract.results import ToolError
from envfactory.contract.values import MAX_CHARS, load_json, text_problem

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
    """An action from an object, a dict or JSON text; a :class:`ToolError` when malformed.

    Its text (tool name, actor, call id, message content) must be text an agent may send
    (:func:`~envfactory.contract.values.text_problem`); argument values are the tools' to check.
    """
    if isinstance(raw, (str, bytes)):
        try:
            raw = load_json(raw)
        except ValueError:
            return ToolError(code="malformed_action", message="the action is not valid JSON")
    if isinstance(raw, dict):
        try:
            raw = _ACTION.validate_python(raw)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first.get("loc", ())) or "action"
            return ToolError(code="malformed_action", message=f"{where}: {first.get('msg')}")
    if not isinstance(raw, (ToolCall, Message)):
        return ToolError(
            code="malformed_action",
            message="an action is an object with type 'tool_call' (tool, arguments) "
            "or 'message' (content, final)",
        )
    return _text_problem(raw) or raw


def _text_problem(action: ToolCall | Message) -> ToolError | None:
    """A malformed-action error when a text field of ``action`` is not text an agent may send."""
    fields = (
        {"tool": action.tool, "actor": action.actor, "call_id": action.call_id or ""}
        if isinstance(action, ToolCall)
        else {"content": action.content, "actor": action.actor}
    )
    for name, text in fields.items():
        if not isinstance(text, str):
            return ToolError(code="malformed_action", message=f"{name}: must be a string")
        problem = text_problem(text)
        if problem is None and len(text) > MAX_CHARS:
            problem = f"is longer than {MAX_CHARS} characters"
        if problem:
            return ToolError(code="malformed_action", message=f"{name}: {problem}", field=name)
    return None


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
