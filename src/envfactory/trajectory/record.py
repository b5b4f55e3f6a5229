"""The episode record: everything a trainer needs, stored once, every format derived from it.

One :class:`EpisodeRecord` per finished episode: who played what task, how it ended
(``status``), the reward and the rubric behind it, the chat transcript, and one
:class:`CallRecord` per model call with the exact tokens the server returned. Only public
task data is recorded; the hidden half never leaves the process.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from envfactory.contract.actions import EpisodeStatus
from envfactory.contract.verdict import RubricItem

ChatMessage = dict[str, Any]

#: Statuses whose reward is the agent's to own: scored, and part of group statistics.
SCORED: frozenset[EpisodeStatus] = frozenset({"completed", "truncated"})


class ModelInfo(BaseModel):
    """The policy behind the episode."""

    model_config = ConfigDict(extra="allow")

    name: str
    provider: str = Field(description="'scripted', 'openai', ...")
    base_url: str | None = None
    tool_format: str = "native"
    sampling: dict[str, Any] = Field(default_factory=dict)


class CallRecord(BaseModel):
    """One model call. ``context`` is set when the policy saw something other than the first
    ``n_messages`` of the transcript (a recency window, a summary): it is then exactly the
    prompt the model was given, so training can use the truncation used at inference."""

    index: int
    actor: str = "agent"
    n_messages: int = Field(description="transcript length when the call was made")
    context: list[ChatMessage] | None = None
    message_index: int = Field(description="where the reply sits in the transcript")
    prompt_ids: list[int] | None = None
    output_ids: list[int] | None = None
    output_logprobs: list[float] | None = None
    finish_reason: str | None = None
    policy_version: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_s: float = 0.0
    attempts: int = 1
    advantage: float | None = Field(
        None, description="the advantage to train this call on (filled by envfactory.credit)"
    )


class StepRecord(BaseModel):
    """One environment step: the action, what came back, and the state after it."""

    call_index: int
    actor: str = "agent"
    action: dict[str, Any]
    kind: str = Field(description="observation kind: tool_result, tool_error, user, end")
    error: str | None = None
    reward: float | None = None
    done: bool = False
    state_hash: str
    value: float | None = Field(
        None, description="value of the state reached, propagated over the group's state graph"
    )


class Timing(BaseModel):
    started: float = Field(0.0, description="unix time the episode started")
    ended: float = 0.0
    wall_s: float = 0.0
    policy_s: float = Field(0.0, description="time waiting on the policy")
    env_s: float = Field(0.0, description="time in environment work")


class EpisodeRecord(BaseModel):
    """One finished (or, in a checkpoint, partial) episode."""

    episode_id: str
    group_id: str
    task_id: str
    env_id: str
    split: str
    difficulty: int
    sample_index: int
    status: EpisodeStatus = "truncated"
    reward: float | None = Field(None, description="None when the status is not scored")
    rubric: list[RubricItem] = Field(default_factory=list)
    step_rewards: list[float | None] = Field(default_factory=list)
    advantage: float | None = Field(None, description="filled in by credit assignment")
    error: str | None = Field(None, description="what went wrong, for faults")
    metrics: dict[str, float] = Field(default_factory=dict)
    timing: Timing = Field(default_factory=Timing)
    messages: list[ChatMessage] = Field(default_factory=list)
    tools: list[dict[str, Any]] = Field(default_factory=list)
    model: ModelInfo
    calls: list[CallRecord] = Field(default_factory=list)
    steps: list[StepRecord] = Field(default_factory=list)
    state_hash: str | None = Field(None, description="canonical state hash at the end")
    actor: str | None = Field(
        None,
        description="the seat whose trajectory this is (one record per seat of a "
        "multi-agent episode; None for single-agent episodes)",
    )
    episode: str | None = Field(
        None, description="the multi-agent episode that every seat's record of it shares"
    )

    @property
    def scored(self) -> bool:
        return self.status in SCORED and self.reward is not None

    def context(self, call: CallRecord) -> list[ChatMessage]:
        """Exactly the messages the policy was given for ``call``."""
        if call.context is not None:
            return call.context
        return self.messages[: call.n_messages]
