"""Tool parameters: JSON Schema for models, and strict validation of what a model sends."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Mapping
from typing import Any, Literal

from envfactory.contract.results import ToolFailure
from envfactory.contract.values import MAX_CHARS, load_json, number_problem, value_problem
from envfactory.domain.spec import ParamSpec

_JSON_TYPES = {
    "string": "string",
    "integer": "integer",
    "number": "number",
    "boolean": "boolean",
    "array": "array",
}
MAX_ARGUMENT_CHARS = MAX_CHARS  # of arguments sent as JSON text
_A_NUMBER = {"integer": "an integer", "number": "a number"}


def json_schema(params: Mapping[str, ParamSpec]) -> dict[str, Any]:
    """The parameters as a JSON Schema object (OpenAI ``parameters`` / MCP ``inputSchema``)."""
    props: dict[str, Any] = {}
    for name, p in params.items():
        prop: dict[str, Any] = {"type": _JSON_TYPES[p.type], "description": p.description}
        if p.type == "array":
            prop["items"] = {"type": _JSON_TYPES[p.items]}
            prop["maxItems"] = p.max_items
        if p.enum is not None:
            prop["enum"] = list(p.enum)
        if p.type == "string":
            prop["maxLength"] = p.max_length
        if p.format:
            prop["format"] = p.format
        if p.minimum is not None:
            prop["minimum"] = p.minimum
        if p.maximum is not None:
            prop["maximum"] = p.maximum
        props[name] = prop
    return {
        "type": "object",
        "properties": props,
        "required": [n for n, p in params.items() if p.required],
        "additionalProperties": False,
    }


ToolTable = Mapping[str, tuple[str, Mapping[str, ParamSpec]]]
"""A fixed tool set: each name's description and parameters."""


def tool_schemas(
    tools: ToolTable,
    fmt: Literal["openai", "mcp"],
    hints: Callable[[str], dict[str, bool]],
) -> list[dict[str, Any]]:
    """OpenAI-shaped function schemas, or MCP tools with the ``hints`` (annotations) of each."""
    out: list[dict[str, Any]] = []
    for name, (description, params) in tools.items():
        schema = json_schema(params)
        if fmt == "openai":
            fn = {"name": name, "description": description, "parameters": schema}
            out.append({"type": "function", "function": fn})
        else:
            mcp = {"name": name, "description": description, "inputSchema": schema}
            out.append(mcp | {"annotations": hints(name)})
    return out


def _show(v: Any) -> str:
    text = json.dumps(v, default=str) if not isinstance(v, str) else repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def _check_array(name: str, p: ParamSpec, v: Any) -> str | None:
    """A problem with a list value, or None: every element is checked as ``p.items``."""
    if not isinstance(v, list):
        return f"{name!r} must be a list, got {_show(v)}"
    if len(v) > p.max_items:
        return f"{name!r} has more than {p.max_items} elements"
    item = p.model_copy(update={"type": p.items, "required": True})
    for i, element in enumerate(v):
        problem = _check_one(f"{name}[{i}]", item, element)
        if problem:
            return problem
    return None


def _check_one(name: str, p: ParamSpec, v: Any) -> str | None:
    """A problem with one value, or None."""
    if v is None:
        return None if not p.required else f"{name!r} is required"
    if p.type == "array":
        return _check_array(name, p, v)
    if p.type == "string":
        if not isinstance(v, str):
            return f"{name!r} must be a string, got {_show(v)}"
        if len(v) > p.max_length:
            return f"{name!r} is longer than {p.max_length} characters"
        if p.format == "date":
            try:
                dt.date.fromisoformat(v)
            except ValueError:
                return f"{name!r} must be a date as YYYY-MM-DD, got {_show(v)}"
    elif p.type in ("integer", "number"):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return f"{name!r} must be {_A_NUMBER[p.type]}, got {_show(v)}"
        if p.type == "integer" and isinstance(v, float) and v.is_integer():
            v = int(v)  # 3.0 is the integer 3 (and 1e300 is out of range)
        if p.type == "integer" and not isinstance(v, int):
            return f"{name!r} must be an integer, got {_show(v)}"
        problem = number_problem(v)
        if problem:
            return f"{name!r} {problem}"
    elif p.type == "boolean" and not isinstance(v, bool):
        return f"{name!r} must be true or false, got {_show(v)}"
    if p.enum is not None and v not in p.enum:
        return f"{name!r} must be one of {', '.join(map(str, p.enum))}; got {_show(v)}"
    if p.minimum is not None and v < p.minimum:
        return f"{name!r} must be at least {p.minimum}"
    if p.maximum is not None and v > p.maximum:
        return f"{name!r} must be at most {p.maximum}"
    return None


def parse_arguments(raw: Any) -> dict[str, Any]:
    """Arguments as a dict, from a dict or a JSON object text, every value one an agent may
    send (:mod:`envfactory.contract.values`); raises :class:`ToolFailure` naming the first bad
    argument."""
    if isinstance(raw, str):
        if len(raw) > MAX_ARGUMENT_CHARS:
            raise ToolFailure("invalid_arguments", "arguments are too large")
        try:
            raw = load_json(raw) if raw.strip() else {}
        except ValueError as exc:
            why = f"arguments are not valid JSON ({str(exc)[:100]})"
            raise ToolFailure("invalid_arguments", why) from None
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ToolFailure("invalid_arguments", "arguments must be a JSON object")
    bad = value_problem(raw)
    if bad is not None:
        raise ToolFailure("invalid_arguments", f"{bad.where} {bad.problem}", field=bad.field)
    return raw


def validate(tool: str, params: Mapping[str, ParamSpec], raw: Any) -> dict[str, Any]:
    """Checked arguments, every parameter present (absent optional ones as None).

    Raises :class:`ToolFailure` naming every problem at once.
    """
    return check_arguments(tool, params, parse_arguments(raw))


def check_arguments(
    tool: str, params: Mapping[str, ParamSpec], args: dict[str, Any]
) -> dict[str, Any]:
    """:func:`validate` for arguments :func:`parse_arguments` has already read."""
    problems: list[str] = []
    fields: list[str] = []
    extra = [k for k in args if k not in params]
    if extra:
        fields.append(str(extra[0]))
        problems.append(
            f"unknown argument(s) {', '.join(map(_show, extra))}; "
            f"{tool} takes {', '.join(params) or 'no arguments'}"
        )
    out: dict[str, Any] = {}
    for name, p in params.items():
        v = args.get(name)
        problem = _check_one(name, p, v)
        if problem:
            problems.append(problem)
            fields.append(name)
        elif p.type == "integer" and v is not None:
            v = int(v)
        out[name] = v
    if problems:
        raise ToolFailure("invalid_arguments", "; ".join(problems), field=fields[0])
    return out
