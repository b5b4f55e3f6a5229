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
"""The values arguments can take right now, as a world's observation offers them in
``data["choices"]``: keyed ``"<tool>.<argument>"`` for one tool, or ``"<argument>"`` for every
tool with that argument (a web page offers its element ids as ``bid``, and its text boxes
as ``fill.bid``)."""


def call_schema(tools: list[dict[str, Any]], choices: Choices | None = None) -> dict[str, Any]:
    """A JSON schema of one call: ``{"name": <tool>, "arguments": <its parameters>}``, in that
    order (the grammar keeps the schema's order: the name is chosen before the arguments). An
    argument offered ``choices`` takes one of them; a tool whose argument is offered none is
    left out, unless that would leave no tool."""
    options = []
    for tool in tools:
        fn = tool["function"]
        params = narrowed(fn["name"], fn.get("parameters") or {"properties": {}}, choices or {})
        if params is not None:
            options.append(
                {
                    "type": "object",
                    "properties": {"name": {"const": fn["name"]}, "arguments": params},
                    "required": ["name", "arguments"],
                    "additionalProperties": False,
                }
            )
    if not options and choices:
        return call_schema(tools)
    # one spelling of the JSON (", " and ": ", no newlines): no tokens spent on layout
    layout = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}
    return {"anyOf": options, "x-guidance": layout}


def narrowed(name: str, params: dict[str, Any], choices: Choices) -> dict[str, Any] | None:
    """``params`` of tool ``name`` with each argument offered choices held to them; None when
    an argument is offered none (no call of the tool can be right now)."""
    props: dict[str, Any] = params.get("properties") or {}
    held = {}
    for arg in props:
        offered = choices.get(f"{name}.{arg}", choices.get(arg))
        if offered is not None:
            if not offered:
                return None
            held[arg] = {"enum": list(dict.fromkeys(offered))}
    return {**params, "properties": {**props, **held}} if held else params


CALL_AS_TEXT = 'call: "<tool_call>\\n" body "\\n</tool_call>"'
CALL_AS_TOKENS = 'call: <tool_call> "\\n" body "\\n" </tool_call>'


def reply_grammar(
    tools: list[dict[str, Any]],
    call_required: bool = False,
    choices: Choices | None = None,
    tag_tokens: bool = False,
) -> str:
    """Lark: a reply is a message (text that opens no tag) or exactly one tool call; only
    the call when ``call_required`` (and there are tools). ``choices`` hold arguments to the
    values the world offers now. ``tag_tokens``: the tokenizer has ``<tool_call>`` and
    ``</tool_call>`` as tokens of their own (Qwen's and Hermes' do), which the grammar then
    names as tokens: llguidance matches such a token only that way, never as text."""
    if not tools:
        return "start: message\nmessage: /[^<]+/\n"
    lines = [
        "start: call" if call_required else "start: message | call",
        CALL_AS_TOKENS if tag_tokens else CALL_AS_TEXT,
        f"body: %json {json.dumps(call_schema(tools, choices))}",
    ]
    if not call_required:
        lines.append("message: /[^<]+/")
    return "\n".join(lines) + "\n"
