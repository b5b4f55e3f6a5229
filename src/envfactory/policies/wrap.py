"""Scripted policies (oracle, noop, random, noisy-oracle) as rollout policies.

The synchronous ``start`` / ``act`` policies of :mod:`envfactory.policies.scripted` run
unchanged; each reply becomes an assistant message in the harness's tool format, so scripted
episodes produce the same transcripts as a model's.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from envfactory.contract.actions import Message, Observation, ToolCall
from envfactory.contract.policy import Policy
from envfactory.harness.toolcalls import render_call
from envfactory.policies.base import EpisodeContext, PolicyReply, PolicyRequest
from envfactory.policies.scripted import scripted
from envfactory.trajectory.record import ChatMessage, ModelInfo


def assistant_message(action: ToolCall | Message, call_id: str, tool_format: str) -> ChatMessage:
    """The chat message a model would have written to take ``action``."""
    if isinstance(action, Message):
        return {"role": "assistant", "content": action.content}
    if tool_format != "native":
        return {"role": "assistant", "content": render_call(action.tool, action.arguments)}
    args = action.arguments
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": call_id,
                "type": "function",
                "function": {
                    "name": action.tool,
                    "arguments": args if isinstance(args, str) else json.dumps(args),
                },
            }
        ],
    }


class ScriptedSession:
    def __init__(self, policy: Policy, ctx: EpisodeContext) -> None:
        self.policy = policy
        self.format = ctx.harness.tool_format
        policy.start(ctx.task, ctx.tools)

    def _act(self, observations: list[Observation]) -> ToolCall | Message:
        return self.policy.act(observations[-1])

    async def act(self, request: PolicyRequest) -> PolicyReply:
        action = self._act(request.observations)
        call_id = f"call_{request.call_index}"
        if isinstance(action, ToolCall) and self.format == "native":
            action.call_id = call_id
        return PolicyReply(
            message=assistant_message(action, call_id, self.format), actions=[action]
        )

    def replay(self, observations: list[Observation]) -> None:
        self._act(observations)


class ScriptedPolicy:
    """A scripted policy by name (``oracle``, ``noop``, ``random``, ``noisy-oracle``), one
    fresh instance per episode."""

    local = True
    decodes_grammar = True  # its calls are well-formed by construction

    def __init__(self, name: str, **kwargs: Any) -> None:
        scripted(name, **kwargs)  # fail now on an unknown name
        self.name = name
        self.kwargs = kwargs
        self.factory: Callable[[], Policy] = lambda: scripted(name, **kwargs)

    @property
    def info(self) -> ModelInfo:
        return ModelInfo(name=self.name, provider="scripted", sampling=dict(self.kwargs))

    def session(self, ctx: EpisodeContext) -> ScriptedSession:
        return ScriptedSession(self.factory(), ctx)

    async def aclose(self) -> None:
        return None
