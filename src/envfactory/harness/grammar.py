"""The grammar of a reply under ``tool_format="grammar"``: plain text for the user, or one
Hermes ``<tool_call>`` block whose JSON names an exposed tool and matches its parameters.

The grammar is Lark text with embedded JSON schemas (the dialect llguidance reads); a local
model policy decodes under it (:mod:`envfactory.integrations.constrained`), so every call it
makes parses and names a real tool with well-typed arguments. Whether the arguments are right
is still the world's to judge.
"""

from __future__ import annotations

import json
from typing import Any

Choices = dict[str, list[str]]
"""Per argument name, the values it can take right now (a web page's element ids for ``bid``),
as a world's observation offers them in ``data["choices"]``."""


def call_schema(tools: list[dict[str, Any]], choices: Choices | None = None) -> dict[str, Any]:
    """A JSON schema of one call: ``{"name": <tool>, "arguments": <its parameters>}``, in that
    order (the grammar keeps the schema's order: the name is chosen before the arguments). An
    argument named in ``choices`` takes one of its values."""
    options = []
    for tool in tools:
        fn = tool["function"]
        params = narrowed(fn.get("parameters") or {"type": "object", "properties": {}}, choices)
        options.append(
            {
                "type": "object",
                "properties": {"name": {"const": fn["name"]}, "arguments": params},
                "required": ["name", "arguments"],
                "additionalProperties": False,
            }
        )
    # one spelling of the JSON (", " and ": ", no newlines): no tokens spent on layout
    layout = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}
    return {"anyOf": options, "x-guidance": layout}


def narrowed(params: dict[str, Any], choices: Choices | None) -> dict[str, Any]:
    """``params`` with each property named in ``choices`` (and offered values) held to them."""
    props = params.get("properties") or {}
    held = {k: v for k, v in (choices or {}).items() if k in props and v}
    if not held:
        return params
    fixed = {
        k: {"enum": list(dict.fromkeys(held[k]))} if k in held else v for k, v in props.items()
    }
    return {**params, "properties": fixed}


def reply_grammar(
    tools: list[dict[str, Any]], call_required: bool = False, choices: Choices | None = None
) -> str:
    """Lark: a reply is a message (text that opens no tag) or exactly one tool call; only
    the call when ``call_required`` (and there are tools). ``choices`` hold arguments to the
    values the world offers now."""
    if not tools:
        return "start: message\nmessage: /[^<]+/\n"
    lines = [
        "start: call" if call_required else "start: message | call",
        'call: "<tool_call>\\n" body "\\n</tool_call>"',
        f"body: %json {json.dumps(call_schema(tools, choices))}",
    ]
    if not call_required:
        lines.append("message: /[^<]+/")
    return "\n".join(lines) + "\n"
