"""Injected tool faults: deterministic per (task, call), recoverable by retrying, and invisible
to the verifier (a faulted call does not run and is not in the call log)."""

from __future__ import annotations

from envfactory.contract.config import NoiseConfig, NoiseKind
from envfactory.contract.results import ToolError
from envfactory.tasks.seeds import stable_hash

#: The error code of each kind of injected fault (a call so faulted did not run).
FAULT_CODES: dict[NoiseKind, str] = {
    "transient": "transient_error",
    "rate_limit": "rate_limited",
    "timeout": "timeout",
    "malformed": "malformed_response",
}


def fault(config: NoiseConfig, task_id: str, call_index: int, tool: str) -> ToolError | None:
    """The fault (if any) of the ``call_index``-th tool call of an episode of ``task_id``."""
    if config.rate <= 0.0 or not config.kinds:
        return None
    h = stable_hash("noise", config.seed, task_id, call_index)
    if (h >> 16) / 2**48 >= config.rate:
        return None
    kind = config.kinds[h % len(config.kinds)]
    code = FAULT_CODES[kind]
    if kind == "transient":
        return ToolError(
            code=code, message="Service temporarily unavailable; try again.", tool=tool
        )
    if kind == "rate_limit":
        return ToolError(
            code=code,
            message="Too many requests; retry after 1 second.",
            tool=tool,
            retry_after=1.0,
        )
    if kind == "timeout":
        return ToolError(code=code, message="The call timed out; try again.", tool=tool)
    return ToolError(
        code=code,
        message='Unreadable response from the service: {"status": "ok", "data": {"id": "',
        tool=tool,
    )
