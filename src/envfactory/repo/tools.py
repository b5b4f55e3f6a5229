"""The tools of a repository world: the terminal world's three, and ``edit_file``."""

from __future__ import annotations

from typing import Any, Literal

from envfactory.domain.spec import ParamSpec
from envfactory.terminal.tools import TOOLS as TERMINAL_TOOLS
from envfactory.tools.params import tool_schemas

TOOLS: dict[str, tuple[str, dict[str, ParamSpec]]] = {
    **TERMINAL_TOOLS,
    "edit_file": (
        "Replace one exact piece of text in a file of the working directory: `old` must occur "
        "exactly once in the file (include enough surrounding text to make it unique, with "
        "its indentation); it becomes `new`.",
        {
            "path": ParamSpec(
                description="a path relative to /work (or under it)", max_length=1000
            ),
            "old": ParamSpec(description="the exact text to replace", max_length=50_000),
            "new": ParamSpec(description="the text to put in its place", max_length=50_000),
        },
    ),
}


def schemas(fmt: Literal["openai", "mcp"] = "openai") -> list[dict[str, Any]]:
    return tool_schemas(
        TOOLS,
        fmt,
        lambda name: {"readOnlyHint": name == "read_file", "destructiveHint": name != "read_file"},
    )
