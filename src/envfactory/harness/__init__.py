"""The harness: system prompt, tool exposure, limits, stop conditions, context strategies."""

from envfactory.harness.config import ContextConfig, HarnessConfig
from envfactory.harness.context import ContextBuilder, Summariser, digest, register_summariser
from envfactory.harness.prompt import exposed_tools, opening, system_prompt
from envfactory.harness.toolcalls import parse_tool_calls, render_call, tool_response, tools_block

__all__ = [
    "ContextBuilder",
    "ContextConfig",
    "HarnessConfig",
    "Summariser",
    "digest",
    "exposed_tools",
    "opening",
    "parse_tool_calls",
    "register_summariser",
    "render_call",
    "system_prompt",
    "tool_response",
    "tools_block",
]
