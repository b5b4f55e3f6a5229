"""The harness (H of E = {T, H, V, S, C}): how a policy meets an episode."""

from __future__ import annotations

from dataclasses import replace
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from envfactory.contract.config import EpisodeConfig


class ContextConfig(BaseModel):
    """What the policy is shown of a long transcript at each call.

    ``all`` keeps everything; ``recent`` keeps the system prompt, the request and the last
    ``window`` turns; ``summary`` does the same and puts a summary of the dropped turns into
    the system prompt. Whatever the policy was shown is what the trajectory records for the
    call, so training sees the truncation used at inference."""

    model_config = ConfigDict(extra="forbid")

    strategy: Literal["all", "recent", "summary"] = "all"
    window: int = Field(8, ge=1, description="turns kept by 'recent' and 'summary'")
    summariser: str = Field("digest", description="a registered summariser, for 'summary'")


class HarnessConfig(BaseModel):
    """System prompt, tool exposure, limits, stop conditions and context strategy."""

    model_config = ConfigDict(extra="forbid")

    system_prompt: str | None = Field(
        None,
        description="a template with {persona}, {rules} and {env_id}; None uses the default",
    )
    tools: list[str] | None = Field(None, description="tools to expose; None exposes all")
    tool_format: Literal["native", "text", "grammar"] = Field(
        "native",
        description="native: OpenAI tool calls; text: Hermes/Qwen <tool_call> JSON in the "
        "reply; grammar: the same, decoded under a grammar of the exposed tools (local models)",
    )
    tool_choice: Literal["auto", "required", "first"] = Field(
        "auto",
        description="auto: each reply may call a tool or talk; required: every reply calls a "
        "tool; first: the first reply calls a tool, then auto. Enforced by the grammar "
        "(tool_format 'grammar') and passed to chat-completions servers (native)",
    )
    max_turns: int = Field(30, ge=1, description="model calls before the episode is truncated")
    max_steps: int = Field(60, ge=1, description="environment steps before it is truncated")
    text_reply: Literal["to_user", "final"] = Field(
        "to_user",
        description="a reply without a tool call goes to the (simulated) user, who answers "
        "questions and ends the episode on a report, the reply graded (to_user), or ends the "
        "episode itself (final)",
    )
    context: ContextConfig = Field(default_factory=ContextConfig)

    @property
    def calls_in_text(self) -> bool:
        """Tools are listed in the system prompt and called in the reply's text."""
        return self.tool_format != "native"

    def call_required(self, call_index: int) -> bool:
        """Whether the reply of model call ``call_index`` (0-based) must call a tool."""
        return self.tool_choice == "required" or (self.tool_choice == "first" and call_index == 0)

    def episode_config(self, base: EpisodeConfig | None = None) -> EpisodeConfig:
        """The episode settings with this harness's step limit."""
        if base is None:
            return EpisodeConfig(max_steps=self.max_steps)
        return replace(base, max_steps=self.max_steps)
