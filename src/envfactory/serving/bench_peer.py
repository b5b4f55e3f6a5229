"""The peer of ``envfactory bench serve``: OpenEnv's own server hosting a trivial tool-call
environment.

It accepts the same WebSocket messages as our ``/openenv/{env}/ws`` channel (a reset, then
``{"type": "tool_call", "tool", "arguments"}`` steps) and answers each step by echoing the call,
so the benchmark's client drives both servers with identical traffic. Run as
``python -m envfactory.serving.bench_peer --port P --max-sessions N``.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import uvicorn
from openenv.core.env_server.http_server import create_app  # type: ignore[import-untyped]
from openenv.core.env_server.interfaces import Environment  # type: ignore[import-untyped]
from openenv.core.env_server.types import (  # type: ignore[import-untyped]
    Action,
    Observation,
    State,
)
from pydantic import Field


class CallAction(Action):  # type: ignore[misc]
    type: str = "tool_call"
    tool: str = ""
    arguments: dict[str, Any] = Field(default_factory=dict)
    actor: str = "agent"


class EchoObservation(Observation):  # type: ignore[misc]
    content: str = ""


class EchoEnvironment(Environment):  # type: ignore[misc]
    """Echoes every tool call back: the least work an environment can do."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._state = State(step_count=0)

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
    ) -> EchoObservation:
        self._state = State(episode_id=episode_id, step_count=0)
        return EchoObservation(content="ready")

    def step(
        self, action: CallAction, timeout_s: float | None = None, **kwargs: Any
    ) -> EchoObservation:
        self._state.step_count += 1
        return EchoObservation(content=json.dumps({"tool": action.tool, "args": action.arguments}))

    @property
    def state(self) -> State:
        return self._state


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--max-sessions", type=int, default=1100)
    args = parser.parse_args()
    app = create_app(
        EchoEnvironment, CallAction, EchoObservation, max_concurrent_envs=args.max_sessions
    )
    uvicorn.run(
        app, host="127.0.0.1", port=args.port, log_level="warning", access_log=False, backlog=4096
    )


if __name__ == "__main__":
    main()
