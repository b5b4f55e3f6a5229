"""Tool calls as text, for servers without a tool parser: Hermes / Qwen ``<tool_call>`` JSON.

A model in text mode writes ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``
blocks in its reply, and reads tool results back inside ``<tool_response>`` blocks.
"""

from __future__ import annotations

import json
import re
from typing import Any

from envfactory.contract.values import load_json, text_problem, value_problem

_CALL = re.compile(r"<tool_call>(.*?)(?:</tool_call>|\Z)", re.S)
_NAME = re.compile(r'"name"\s*:\s*"([^"]{1,200})"')


def tools_block(tools: list[dict[str, Any]]) -> str:
    """The tool list and calling convention, for the system prompt."""
    lines = "\n".join(json.dumps(t, separators=(",", ":")) for t in tools)
    return (
        "# Tools\n\nYou may call one or more functions to assist with the user query. "
        "The function signatures are within <tools></tools> XML tags:\n"
        f"<tools>\n{lines}\n</tools>\n\n"
        "For each function call, return a JSON object with the function name and arguments "
        "within <tool_call></tool_call> XML tags:\n"
        '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
    )


def render_call(name: str, arguments: dict[str, Any] | str) -> str:
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return f'<tool_call>\n{{"name": {json.dumps(name)}, "arguments": {args}}}\n</tool_call>'


def parse_tool_calls(text: str) -> tuple[str, list[dict[str, Any]]]:
    """Split a reply into its plain text and its tool calls, each a ``tool_call`` action for
    ``episode.step``. A block that is not JSON keeps its text as the arguments (or, without a
    readable name, has no tool), so the episode answers with an error the model can read.
    Arguments no agent may send (a lone surrogate, deep nesting) stay JSON text too: the
    episode names the problem, and the trajectory record, which could not hold them, stores
    the text."""
    calls: list[dict[str, Any]] = []
    for block in _CALL.findall(text):
        body = block.strip()
        try:
            obj = load_json(body)
        except ValueError:
            obj = None
        if isinstance(obj, dict) and _clean_name(obj.get("name")):
            args = obj.get("arguments", obj.get("parameters", {}))
            if value_problem(args) is not None:
                args = _as_text(args, body)
            calls.append({"type": "tool_call", "tool": obj["name"], "arguments": args})
        elif name := _NAME.search(body):
            calls.append({"type": "tool_call", "tool": name.group(1), "arguments": body})
        else:
            calls.append({"type": "tool_call", "arguments": body})
    plain = _CALL.sub("", text).strip()
    return plain, calls


def _clean_name(name: Any) -> bool:
    return isinstance(name, str) and text_problem(name) is None


def _as_text(args: Any, body: str) -> str:
    try:
        return json.dumps(args)  # ASCII: a lone surrogate is written as its escape
    except (ValueError, RecursionError):
        return body


def tool_response(content: str) -> str:
    return f"<tool_response>\n{content}\n</tool_response>"
