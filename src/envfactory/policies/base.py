"""The policy contract of the rollout engine, and the faults a policy may raise.

A :class:`RolloutPolicy` opens one :class:`PolicySession` per episode; the engine asks the
session for a reply at each turn. Faults are typed so the engine can tell the infrastructure's
failures (retried, never scored) from the agent's mistakes (observations, scored).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from envfactory.contract.actions import Message, Observation, ToolCall
from envfactory.contract.errors import EnvFactoryError
from envfactory.contract.tasks import Task
from envfactory.harness.config import HarnessConfig
from envfactory.trajectory.record import CallRecord, ChatMessage, ModelInfo

RawAction = ToolCall | Message | dict[str, Any]
"""An action as the episode takes it (malformed ones become error observations)."""


class PolicyFault(EnvFactoryError):
    """The policy could not produce a reply (not the agent's mistake)."""


class TransientFault(PolicyFault):
    """Worth retrying: a 429, a 5xx, a dropped connection, a malformed response, a timeout."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class FatalFault(PolicyFault):
    """Not worth retrying: a bad key, an unknown model, a rejected request."""


class ContextOverflow(PolicyFault):
    """The prompt no longer fits the model's context: the episode is truncated."""


@dataclass(slots=True)
class EpisodeContext:
    """What a session knows about its episode. ``task`` is the whole task, for in-process
    scripted policies; a policy behind an API boundary uses ``task.public`` only."""

    episode_id: str
    group_id: str
    sample_index: int
    task: Task
    tools: list[dict[str, Any]]
    harness: HarnessConfig


@dataclass(slots=True)
class PolicyRequest:
    """One turn: the context to show the model and what the last actions returned."""

    messages: list[ChatMessage]
    observations: list[Observation]
    call_index: int


@dataclass(slots=True)
class PolicyReply:
    """The assistant message for the transcript, the actions in it, and the call's data."""

    message: ChatMessage
    actions: list[RawAction]
    prompt_ids: list[int] | None = None
    output_ids: list[int] | None = None
    output_logprobs: list[float] | None = None
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    policy_version: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def call_record(
    reply: PolicyReply,
    index: int,
    n_messages: int,
    context: list[ChatMessage] | None,
    latency: float,
    attempts: int = 1,
) -> CallRecord:
    """The record of one model call: its reply's token data, at ``n_messages`` into the
    transcript (``context``: what the model saw when that was not the transcript itself)."""
    return CallRecord(
        index=index,
        n_messages=n_messages,
        context=context,
        message_index=n_messages,
        prompt_ids=reply.prompt_ids,
        output_ids=reply.output_ids,
        output_logprobs=reply.output_logprobs,
        finish_reason=reply.finish_reason,
        policy_version=reply.policy_version,
        prompt_tokens=reply.prompt_tokens,
        completion_tokens=reply.completion_tokens,
        latency_s=latency,
        attempts=attempts,
    )


class PolicySession(Protocol):
    async def act(self, request: PolicyRequest) -> PolicyReply:
        """The reply to one turn; raises a :class:`PolicyFault` when there is none."""

    def replay(self, observations: list[Observation]) -> None:
        """Resuming a checkpoint: re-live a past turn (stateful policies catch up here)."""


class RolloutPolicy(Protocol):
    name: str
    local: bool
    """In-process and synchronous underneath: replies without waiting, so per-call timeouts
    and retries do not apply."""

    @property
    def info(self) -> ModelInfo: ...

    def session(self, ctx: EpisodeContext) -> PolicySession:
        """A session for one episode."""

    async def aclose(self) -> None: ...
