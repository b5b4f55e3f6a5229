"""The one tool a campaign adds to its world's: ``close_request``."""

from __future__ import annotations

from typing import Any, Literal

CLOSE = "close_request"
DESCRIPTION = (
    "Send your reply to the current request and close it (answer any question it asked in "
    "the reply); the next request, if any, is returned. After the last request, end with a "
    "final message."
)
_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"reply": {"type": "string", "description": "your reply to the request"}},
    "required": ["reply"],
    "additionalProperties": False,
}


def close_tool(fmt: Literal["openai", "mcp"]) -> dict[str, Any]:
    """The ``close_request`` tool's schema in OpenAI or MCP form."""
    if fmt == "openai":
        return {
            "type": "function",
            "function": {"name": CLOSE, "description": DESCRIPTION, "parameters": _SCHEMA},
        }
    return {
        "name": CLOSE,
        "description": DESCRIPTION,
        "inputSchema": _SCHEMA,
        "annotations": {"readOnlyHint": False, "destructiveHint": False},
    }
