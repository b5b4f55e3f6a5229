"""The three tools of a terminal world: run a shell command, read a file, write a file."""

from __future__ import annotations

from typing import Any, Literal

from envfactory.domain.spec import ParamSpec
from envfactory.tools.params import tool_schemas

READ_LIMIT = 64_000  # bytes of a file read_file returns
TOOLS: dict[str, tuple[str, dict[str, ParamSpec]]] = {
    "run_command": (
        "Run a shell command (bash) in the working directory /work. The system is read-only, "
        "there is no network, and each command has limits on time, memory, processes and "
        "output. Returns the exit code and the output (stdout and stderr together, cut in the "
        "middle when long).",
        {
            "command": ParamSpec(
                description="the command line, e.g. ls -la or python3 script.py",
                max_length=20_000,
            )
        },
    ),
    "read_file": (
        "Read a text file of the working directory.",
        {"path": ParamSpec(description="a path relative to /work (or under it)", max_length=1000)},
    ),
    "write_file": (
        "Create or replace a file of the working directory with the given text (parent "
        "directories are made).",
        {
            "path": ParamSpec(
                description="a path relative to /work (or under it)", max_length=1000
            ),
            "content": ParamSpec(description="the whole new text of the file", max_length=200_000),
        },
    ),
}


def schemas(fmt: Literal["openai", "mcp"] = "openai") -> list[dict[str, Any]]:
    # MCP's hints: reading changes nothing; a command or a write may remove files.
    return tool_schemas(
        TOOLS,
        fmt,
        lambda name: {"readOnlyHint": name == "read_file", "destructiveHint": name != "read_file"},
    )
